# Benchmark input (tests/bench-inline.sh): a deterministic C program of N functions calling
# each other down a random DAG, conditionally, from 128 roots in turn: many call sites, a code
# footprint larger than the caches', no recursion.  Built with -DINLINE, every call site adds
# a constant to a TLS word before the call and subtracts it after (an inline `addq`/`subq` on
# %fs, 0 for three sites in ten): the cost of doing the id's arithmetic at the site itself.
# Usage: awk -v functions=N [-v seed=S] -f gen-calls.awk
function pick(n) { return int(rand() * n) }
BEGIN {
	srand(seed == "" ? 1 : seed)
	print "#include <stdio.h>\n#include <stdlib.h>\n"
	print "__thread long dacce_id;\nstatic volatile long sink;\n"
	print "#ifdef INLINE"
	print "#define CALL(en, e) ({ __asm__ volatile(\"addq %0, %%fs:dacce_id@tpoff\" :: \"i\"(en) : \"memory\"); \\"
	print "\tlong r_ = (e); __asm__ volatile(\"subq %0, %%fs:dacce_id@tpoff\" :: \"i\"(en) : \"memory\"); r_; })"
	print "#else\n#define CALL(en, e) (e)\n#endif\n"
	for (f = 0; f < functions; f++)
		printf "long f%d(long x, int d);\n", f
	for (f = 0; f < functions; f++) {
		printf "__attribute__((noinline)) long f%d(long x, int d)\n{\n", f
		printf "\tlong s = x * %d + %d;\n", 3 + pick(97), 1 + pick(999)
		printf "\tfor (int k = 0; k < %d; k++)\n\t\ts = s * 1103515245 + 12345 + (s >> 7);\n", 1 + pick(6)
		print "\tif (d <= 0)\n\t\treturn s;"
		kids = f < functions - 1 ? 1 + pick(4) : 0
		for (k = 0; k < kids; k++) {
			en = rand() < 0.3 ? 0 : 1 + pick(1048576)
			printf "\tif ((s >> %d) & 1)\n\t\ts += CALL(%d, f%d(s ^ %d, d - 1));\n", 3 + pick(38), en,
				f + 1 + pick(functions - f - 1), k
		}
		print "\treturn s + sink;\n}\n"
	}
	print "int main(int argc, char **argv)\n{\n\tlong n = argc > 1 ? atol(argv[1]) : 1000, s = 0;\n"
	print "\tfor (long i = 0; i < n; i++) {\n\t\tswitch (i & 127) {"
	for (k = 0; k < 128; k++)
		printf "\t\tcase %d:\n\t\t\ts += f%d(i, 8);\n\t\t\tbreak;\n", k, pick(int(functions / 2))
	print "\t\t}\n\t}\n\tprintf(\"%ld\\n\", s);\n\treturn 0;\n}"
}
