#!/usr/bin/env bash
# What relocating functions into the code cache could buy (docs/runtime.md, Not done 12): one
# generated program (tests/bench/gen-calls.awk: 6,000 functions, conditional calls down a
# random DAG, no recursion) natively, built with the id's arithmetic inline at every call site
# (-DINLINE: an `addq` and a `subq` on a TLS word, as a relocated function would do), and
# natively built under libdacce.so (every call through a trampoline), and under it with
# DACCE_RELOCATE=1 (functions run from copies with the arithmetic inline).  ROUNDS interleaved
# rounds; each ratio is the median of the rounds' own.  Prints numbers; never fails on them.
# Usage: bench-inline.sh BUILD_DIR LIBDACCE [ROUNDS]   (default 5)
set -u
build=$1
rounds=${3:-5}
lib=$(realpath -e "$2" 2>/dev/null) || {
	echo "bench-inline: no runtime library at $2" >&2
	exit 1
}
bench=$(cd "$(dirname "${BASH_SOURCE[0]}")/bench" && pwd)
work=$build/bench-inline
iterations=4000000
mkdir -p "$work"
cd "$work" || exit 1
if ! awk -v functions=6000 -f "$bench/gen-calls.awk" >calls.c ||
	! ${CC:-cc} -O2 -o calls calls.c || ! ${CC:-cc} -O2 -DINLINE -o calls-inline calls.c; then
	echo "bench-inline: cannot build the generated program" >&2
	exit 1
fi

# One wall-clock time of a command (its output in out.N), in seconds.
time_of() {
	local n=$1
	shift
	/usr/bin/time -f %e -o time.out "$@" >"out.$n" 2>/dev/null
	tail -n 1 time.out
}

problems=0
for ((r = 1; r <= rounds; r++)); do
	native=$(time_of 0 ./calls $iterations)
	inline=$(time_of 1 ./calls-inline $iterations)
	runtime=$(time_of 2 env LD_PRELOAD="$lib" ./calls $iterations)
	moved=$(time_of 3 env DACCE_RELOCATE=1 LD_PRELOAD="$lib" ./calls $iterations)
	if ! cmp -s out.0 out.1 || ! cmp -s out.0 out.2 || ! cmp -s out.0 out.3; then
		echo "bench-inline: round $r: outputs differ" >&2
		problems=$((problems + 1))
	fi
	echo "$native $inline $runtime $moved"
done >rounds.txt
awk -v problems=$problems '
	{ n[NR] = $1; i[NR] = $2 / $1; d[NR] = $3 / $1; r[NR] = $4 / $1 }
	function median(a, k,   j, m, t) {
		for (j = 1; j <= k; j++)
			for (m = j + 1; m <= k; m++)
				if (a[m] < a[j]) { t = a[j]; a[j] = a[m]; a[m] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		printf "calls through 6,000 functions, %d rounds\n", NR
		printf "native                      %6.2f s (median)\n", median(n, NR)
		printf "arithmetic inline at sites  %6.3fx native\n", median(i, NR)
		printf "under libdacce.so           %6.3fx native\n", median(d, NR)
		printf "  functions moved (RELOCATE) %5.3fx native\n", median(r, NR)
		if (problems)
			printf "PROBLEMS: %d rounds whose outputs differed\n", problems
	}' rounds.txt
