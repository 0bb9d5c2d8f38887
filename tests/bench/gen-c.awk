# Benchmark input (tests/bench-launch.sh): a deterministic C file of N functions (structs,
# loops, switches, string handling, calls between them) for gcc -O2 to compile.
# Usage: awk -v functions=N -f gen-c.awk
BEGIN {
	print "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	print "struct item { int id; double weight; char name[32]; struct item *next; };\n"
	print "static unsigned long mix(unsigned long x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdUL; return x ^ (x >> 29); }\n"
	for (f = 0; f < functions; f++) {
		printf "unsigned long f%d(struct item *it, const char *s, int n);\n", f
	}
	for (f = 0; f < functions; f++) {
		printf "unsigned long f%d(struct item *it, const char *s, int n)\n{\n", f
		print "\tunsigned long acc = (unsigned long)n * " (f * 2654435761 % 1000003) "UL;"
		print "\tchar buf[64];\n\tsize_t len = strlen(s);"
		print "\tfor (int i = 0; i < n; i++) {"
		print "\t\tswitch ((i + " f ") % 6) {"
		for (c = 0; c < 6; c++)
			printf "\t\tcase %d: acc = mix(acc + (unsigned long)it->id * %d) ^ (unsigned long)(it->weight * %d.0); break;\n",
				c, (f * 31 + c * 7) % 97 + 1, c + 2
		print "\t\t}"
		print "\t\tif (it->next && (acc & " (f % 7 + 1) "))\n\t\t\tit = it->next;"
		print "\t}"
		printf "\tsnprintf(buf, sizeof buf, \"%%s-%d-%%lu\", it->name, acc);\n", f
		print "\tfor (size_t k = 0; k < len && k < sizeof buf; k++)\n\t\tacc += (unsigned char)buf[k] * (k + 1) + (unsigned char)s[k];"
		if (f > 0)
			printf "\tif (n > 1 && (acc & 3) == 0)\n\t\tacc += f%d(it, s + 1 < s + len ? s + 1 : s, n / 2);\n", int(f * 0.618) % f
		print "\treturn acc;\n}\n"
	}
	print "int main(int argc, char **argv)\n{\n\tstruct item a = { 1, 2.5, \"a\", NULL }, b = { 2, 3.5, \"b\", &a };\n\tunsigned long r = 0;"
	printf "\tfor (int i = 0; i < %d; i++)\n\t\tr += f%d(&b, argc > 1 ? argv[1] : \"seed\", i %% 50);\n", functions, functions - 1
	print "\tprintf(\"%lu\\n\", r);\n\treturn 0;\n}"
}
