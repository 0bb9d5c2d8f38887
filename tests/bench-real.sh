#!/usr/bin/env bash
# Real workloads, natively and under libdacce.so, in the same run: best of N wall-clock times,
# and ratios with geometric means, at default settings and with re-encoding off
# (DACCE_EPOCHS=0: what the epochs buy).  The N runs of each configuration are interleaved
# (native, runtime, runtime without epochs, then again), and a ratio is the median of the N
# rounds' own ratios: this machine's speed drifts by tens of percent over minutes, and blocks
# of runs compared by their best times took that drift for the runtime's cost.  Then the start-up cost on its own: the mean time of
# programs that do nothing, natively and under the runtime.  Prints numbers; never fails on them.
#
# Each workload takes about 1 s natively on the project's 2-core machine: long enough that the
# 10 ms resolution of the timer and a run's noise stay small against it, and that a program's
# start-up under the runtime (decoding the functions it runs first: 0.1 s for CPython) is a
# part of the ratio, as it is for a program that runs a second, but not all of it.  The start-up
# table shows that part for the programs that pay the most.  The workloads are the real
# programs the runtime must run unchanged (python3, perl, lua5.4, sqlite3, the compressors, gcc
# compiling a C file: its driver, cc1 and as all run under the runtime), and bash and gzip.
# Usage: bench-real.sh BUILD_DIR LIBDACCE [RUNS]   (RUNS rounds, default 5: this machine is noisy)
set -u
build=$1
runs=${3:-5}
# Absolute: the runs happen in the work directory, where a relative LD_PRELOAD would name
# nothing (the loader says so on stderr, which the timing discards, and every run is native).
lib=$(realpath -e "$2" 2>/dev/null) || {
	echo "bench-real: no runtime library at $2" >&2
	exit 1
}
bench=$(cd "$(dirname "${BASH_SOURCE[0]}")/bench" && pwd)
work=$build/bench
mkdir -p "$work"
cd "$work" || exit 1
[ -f input.txt ] || head -c 20000000 /dev/urandom | base64 >input.txt
# gcc's input: 80 generated functions, 10,000 lines (the one bench-launch.sh compiles).
[ -f prog.c ] || awk -v functions=80 -f "$bench/gen-c.awk" >prog.c

workloads=(
	"python3|/usr/bin/python3 -c 'import json; d = [{\"k\": i, \"v\": str(i) * 3} for i in range(800000)]; print(len(json.loads(json.dumps(d))))'"
	"perl|perl -e 'my %h; \$h{\$_ % 1000} .= \$_ for 1..10000000; print scalar(keys %h), qq(\n)'"
	"bzip2|bzip2 -c input.txt | md5sum"
	"xz -T2|xz -c -T2 -1 input.txt | md5sum"
	"zstd -T2|zstd -q -c -T2 -12 input.txt | md5sum"
	"gzip|gzip -c input.txt | md5sum"
	"sqlite3|sqlite3 :memory: 'with recursive c(x) as (select 1 union all select x + 1 from c where x < 5000000) select sum(x) from c;'"
	"bash|bash -c 'n=0; for i in \$(seq 1 600000); do n=\$((n + i)); done; echo \$n'"
	"lua5.4|lua5.4 $bench/tables.lua"
	"gcc|gcc -O2 -c prog.c -o prog.o"
)

startups=(
	"python3|/usr/bin/python3 -c pass"
	"perl|perl -e 1"
	"bash|bash -c :"
	"sqlite3|sqlite3 :memory: 'select 1;'"
	"zstd|zstd -q -c /dev/null"
)

# One wall-clock time of a command, in seconds.
time_of() {
	/usr/bin/time -f %e -o time.out bash -c "$1" >/dev/null 2>&1
	tail -n 1 time.out
}

# The smallest and the median of the numbers on stdin.
best_of() { sort -g | head -n 1; }
median_of() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

mean_ms() {
	local start end
	start=$(date +%s%N)
	for _ in $(seq 10); do bash -c "$1" >/dev/null 2>&1; done
	end=$(date +%s%N)
	awk -v ns=$((end - start)) 'BEGIN { printf "%.1f", ns / 10 / 1e6 }'
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) b = 0.01; printf "%.2f", a / b }'
}

printf '%-10s %10s %10s %8s %12s %8s\n' workload native dacce ratio "no epochs" ratio
log_sum=0
log_sum_off=0
count=0
for w in "${workloads[@]}"; do
	name=${w%%|*}
	cmd=${w#*|}
	rounds=$(mktemp)
	for _ in $(seq "$runs"); do
		echo "$(time_of "$cmd") $(time_of "LD_PRELOAD=$lib $cmd") $(time_of "DACCE_EPOCHS=0 LD_PRELOAD=$lib $cmd")" >>"$rounds"
	done
	native=$(awk '{ print $1 }' "$rounds" | best_of)
	dacce=$(awk '{ print $2 }' "$rounds" | best_of)
	off=$(awk '{ print $3 }' "$rounds" | best_of)
	r=$(awk '{ print $2 / ($1 > 0 ? $1 : 0.01) }' "$rounds" | median_of)
	r=$(ratio "$r" 1)
	r_off=$(awk '{ print $3 / ($1 > 0 ? $1 : 0.01) }' "$rounds" | median_of)
	r_off=$(ratio "$r_off" 1)
	rm -f "$rounds"
	printf '%-10s %9ss %9ss %7sx %11ss %7sx\n' "$name" "$native" "$dacce" "$r" "$off" "$r_off"
	log_sum=$(awk -v s="$log_sum" -v r="$r" 'BEGIN { print s + log(r) }')
	log_sum_off=$(awk -v s="$log_sum_off" -v r="$r_off" 'BEGIN { print s + log(r) }')
	count=$((count + 1))
done
awk -v s="$log_sum" -v n="$count" 'BEGIN { printf "geomean ratio (dacce / native): %.2fx over %d workloads\n", exp(s / n), n }'
awk -v s="$log_sum_off" -v n="$count" 'BEGIN { printf "geomean ratio with re-encoding off: %.2fx\n", exp(s / n) }'

echo
printf '%-10s %12s %12s %12s\n' start-up "native ms" "dacce ms" "added ms"
for w in "${startups[@]}"; do
	name=${w%%|*}
	cmd=${w#*|}
	native=$(mean_ms "$cmd")
	dacce=$(mean_ms "LD_PRELOAD=$lib $cmd")
	printf '%-10s %12s %12s %12s\n' "$name" "$native" "$dacce" \
		"$(awk -v a="$dacce" -v b="$native" 'BEGIN { printf "%.1f", a - b }')"
done
