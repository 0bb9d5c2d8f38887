# Benchmark input (tests/bench-launch.sh): deterministic English-like text for the
# compressors.  Usage: awk -v lines=N -f gen-text.awk
BEGIN {
	srand(1)
	n = split("the of and to in a is that for it as was with be by on not he this are or his " \
		"from at which but have an they you were their one all we can her has there been if " \
		"more when will would who so no time system kernel thread process memory context call " \
		"stack sample encoding graph edge node epoch runtime library function program", w, " ")
	for (l = 0; l < lines; l++) {
		line = ""
		while (length(line) < 72) {
			line = line w[int(rand() * n) + 1]
			r = rand()
			if (r < 0.08)
				line = line " " int(rand() * 100000)
			else if (r < 0.12)
				line = line ","
			line = line " "
		}
		print line "."
	}
}
