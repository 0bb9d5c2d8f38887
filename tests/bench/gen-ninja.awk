# Benchmark input (tests/bench-launch.sh): a ninja manifest of a large C project
# (generated sources, objects with header dependencies, programs linking them) for a
# dry run.  Usage: awk -v objects=N -v programs=P -f gen-ninja.awk
BEGIN {
	print "rule gen\n  command = touch $out\nrule cc\n  command = gcc -MD -MF $out.d -c $in -o $out\n" \
		"  description = CC $out\nrule link\n  command = gcc $in -o $out\n  description = LINK $out\n"
	for (i = 0; i < 50; i++)
		printf "build inc/h%d.h: gen\n", i
	for (i = 0; i < objects; i++)
		printf "build src/d%d/f%d.c: gen\nbuild obj/d%d/f%d.o: cc src/d%d/f%d.c | inc/h%d.h inc/h%d.h\n",
			i % 100, i, i % 100, i, i % 100, i, i % 50, (i * 7) % 50
	for (j = 0; j < programs; j++) {
		printf "build bin/p%d: link", j
		for (i = j; i < objects; i += programs)
			printf " obj/d%d/f%d.o", i % 100, i
		print ""
	}
	printf "default"
	for (j = 0; j < programs; j++)
		printf " bin/p%d", j
	print ""
}
