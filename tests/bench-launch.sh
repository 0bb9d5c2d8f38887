#!/usr/bin/env bash
# Real workloads from Debian packages, in one run: natively, under `dacce launch -q` at default
# settings, and under `perf record --call-graph dwarf` and `--call-graph fp` at the same event
# and rate (cpu-clock, user mode, 997 Hz).  Best of N wall-clock times and program run times,
# their ratios to native and geometric means; from each workload's dacce capture the paper's
# Table 1 columns it holds (nodes, edges, maxID, epochs, re-encoding pause, samples, exact share,
# mean ccStack depth); plots as PNG (gnuplot).  Prints numbers and never fails on them: it fails
# only on a broken setup (not root, a tool missing, dacce or perf unable to run at all).
# How to read the output: docs/benchmarks.md.
# Usage: bench-launch.sh BUILD_DIR [RUNS]   (RUNS: best of how many, default 3; or BENCH_RUNS)
#        BENCH_ONLY=REGEX bench-launch.sh ...  runs only the workloads whose names match
#        bench-launch.sh --inputs DIR            only writes the workloads' inputs into DIR
set -u

die() {
	echo "bench-launch: $*" >&2
	exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$here/bench

# The workloads' inputs, into the current directory.
gen_inputs() {
	awk -v lines=150000 -f "$bench/gen-text.awk" >text.txt &&
		awk -v objects=60000 -v programs=600 -f "$bench/gen-ninja.awk" >build.ninja &&
		awk -v functions=80 -f "$bench/gen-c.awk" >prog.c
}

if [ "${1:-}" = --inputs ]; then   # only write the inputs into DIR, to rerun a workload by hand
	[ $# = 2 ] || die "usage: bench-launch.sh --inputs DIR"
	mkdir -p "$2" && cd "$2" || die "cannot enter $2"
	gen_inputs || die "cannot generate the inputs in $2"
	echo "bench-launch: inputs in $2 (text.txt, build.ninja, prog.c); scripts in $bench"
	exit 0
fi
[ $# -ge 1 ] || die "usage: bench-launch.sh BUILD_DIR [RUNS]"
build=$(cd "$1" 2>/dev/null && pwd) || die "no build directory $1"
runs=${2:-${BENCH_RUNS:-3}}
case $runs in '' | *[!0-9]* | 0) die "RUNS must be a positive integer, not '$runs'" ;; esac
dacce=$build/dacce
lib=$build/libdacce.so
results=$build/bench-launch
freq=997
perf_event=cpu-clock:u   # the event dacce launch samples by default: cpu-clock, user mode

# ---------------------------------------------------------------- set-up checks
[ "$(id -u)" = 0 ] || die "needs root: dacce launch loads BPF programs and samples every CPU"
[ -x "$dacce" ] || die "$dacce missing (make $dacce $lib)"
[ -f "$lib" ] || die "$lib missing (make $dacce $lib)"
# The workloads run Debian's programs by absolute path (a PATH may put pyenv's python3 first).
for t in /usr/bin/perf /usr/bin/python3 /usr/bin/perl /usr/bin/lua5.4 /usr/bin/sqlite3 /usr/bin/bzip2 \
	/usr/bin/xz /usr/bin/zstd /usr/bin/ninja /usr/bin/gcc; do
	[ -x "$t" ] || die "$t not found (Debian packages: linux-perf python3 perl lua5.4 sqlite3 bzip2 xz-utils zstd ninja-build gcc)"
done
for t in gnuplot sqlite3 awk md5sum timeout; do
	command -v "$t" >/dev/null 2>&1 || die "$t not found (Debian packages: gnuplot-nox sqlite3 mawk coreutils)"
done
perf=/usr/bin/perf
for f in json_re.py words.pl tables.lua queries.sql gen-text.awk gen-ninja.awk gen-c.awk plot.gp; do
	[ -f "$bench/$f" ] || die "$bench/$f missing"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dacce-bench.XXXXXX") || die "cannot create a temporary directory"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
mkdir -p "$tmp/work" "$tmp/caps" "$results" || die "cannot create $tmp/work or $results"
cd "$tmp/work" || die "cannot enter $tmp/work"

# Copies taken now: a rebuild while the benchmark runs does not mix versions.
mkdir -p "$tmp/bin" && cp "$dacce" "$lib" "$tmp/bin/" || die "cannot copy $dacce and $lib to $tmp/bin"
build_stamp=$(stat -c %y "$dacce" "$lib" | cut -c1-19 | tr '\n' ' ')
orig_dacce=$dacce
dacce=$tmp/bin/dacce
if ! "$dacce" launch -q -o "$tmp/check.db" -- /bin/true >/dev/null 2>"$tmp/check.err"; then
	die "dacce launch cannot run: $(tail -n 1 "$tmp/check.err")"
fi
if ! "$perf" record -q -e "$perf_event" -F "$freq" --call-graph fp --no-buildid-cache \
	-o "$tmp/check.data" -- /bin/true >/dev/null 2>"$tmp/check.err"; then
	die "perf record cannot run: $(tail -n 1 "$tmp/check.err")"
fi

# ---------------------------------------------------------------- inputs (generated, deterministic)
gen_inputs || die "cannot generate the inputs in $PWD"

# name|command (bash words, $bench expanded)|output file checked besides stdout|what it is
workloads=(
	"bzip2|/usr/bin/bzip2 -9 -c text.txt||single-threaded compressor, 11 MB of text"
	"xz -T2|/usr/bin/xz -T2 -2 --block-size=1MiB -c text.txt||2 threads, 1 MiB blocks"
	"zstd -T2|/usr/bin/zstd -q -T2 -12 -B1M -c text.txt||2 threads, 1 MiB jobs"
	"python3|/usr/bin/python3 \$bench/json_re.py||json round trips and regexes, 60,000 records"
	"perl|/usr/bin/perl \$bench/words.pl||regex word counts, hashes, sort"
	"lua5.4|/usr/bin/lua5.4 \$bench/tables.lua||tables, closures, sort"
	"sqlite3|/usr/bin/sqlite3 :memory: \".read \$bench/queries.sql\"||300,000 rows: joins, group by, window, update"
	"ninja (C++)|/usr/bin/ninja -n -f build.ninja||dry run of 120,000 edges; C++ without exception tables"
	"gcc|/usr/bin/gcc -O2 -c prog.c -o prog.o|prog.o|-O2, 80 generated functions; cc1 and the driver are C++ with exception tables"
)
modes=(native dacce dwarf fp)
if [ -n "${BENCH_ONLY:-}" ]; then   # a regular expression: run only the workloads it names
	kept=()
	for w in "${workloads[@]}"; do [[ ${w%%|*} =~ $BENCH_ONLY ]] && kept+=("$w"); done
	[ ${#kept[@]} -gt 0 ] || die "BENCH_ONLY='$BENCH_ONLY' names no workload"
	workloads=("${kept[@]}")
fi

# ---------------------------------------------------------------- one run
# run_once MODE LIMIT OUTFILE CMD...: sets r_wall, r_run (seconds), r_rc, r_sum
run_once() {
	local mode=$1 limit=$2 outfile=$3 start end
	shift 3
	rm -f "$tmp/cap.db" "$tmp/cap.db.old" "$tmp/cap.db-wal" "$tmp/cap.db-shm" \
		"$tmp/perf.data" "$tmp/perf.data.old" "$outfile" "$tmp/out" "$tmp/err"
	start=$EPOCHREALTIME
	case $mode in
	native) timeout -k 5 "$limit" "$@" </dev/null >"$tmp/out" 2>"$tmp/err" ;;
	dacce) timeout -k 5 "$limit" "$dacce" launch -q -o "$tmp/cap.db" -- "$@" </dev/null >"$tmp/out" 2>"$tmp/err" ;;
	dwarf | fp) timeout -k 5 "$limit" "$perf" record -q -e "$perf_event" -F "$freq" --call-graph "$mode" \
		--no-buildid-cache -o "$tmp/perf.data" -- "$@" </dev/null >"$tmp/out" 2>"$tmp/err" ;;
	esac
	r_rc=$?
	end=$EPOCHREALTIME
	r_wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
	r_sum=$( { cat "$tmp/out"; [ -z "$outfile" ] || cat "$outfile" 2>/dev/null; } | md5sum | cut -c1-32)
	r_run=
	case $mode in
	native) r_run=$r_wall ;;
	dacce)
		# the program's own time: first image started (fork) to last image ended
		[ -f "$tmp/cap.db" ] && r_run=$(sqlite3 "$tmp/cap.db" \
			'select printf("%.3f", (max(ended_ns) - min(started_ns)) / 1e9) from procs' 2>/dev/null) ;;
	dwarf | fp)
		# the program's own time: its exec to the last task's exit, from perf's task events
		[ -f "$tmp/perf.data" ] && r_run=$("$perf" script -i "$tmp/perf.data" --show-task-events \
			-F comm,tid,time,event 2>/dev/null | awk '
			/PERF_RECORD_COMM exec/ && first == "" { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) first = $i + 0 }
			/PERF_RECORD_EXIT/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) last = $i + 0 }
			END { if (first != "" && last != "") printf "%.3f", last - first }') ;;
	esac
}

min() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print b; else if (b == "" || a + 0 <= b + 0) print a; else print b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a + 0 <= 0 || b + 0 <= 0) print "?"; else printf "%.2f", a / b }'; }

declare -A best_wall best_run status
problems=()
nw=${#workloads[@]}
echo "bench-launch: $nw workloads, best of $runs, native / dacce launch -q / perf record --call-graph dwarf / fp"
echo "bench-launch: build/dacce and build/libdacce.so of $build_stamp(copied at start)"
echo "bench-launch: $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg) at start"
t_begin=$EPOCHREALTIME
for ((w = 0; w < nw; w++)); do
	IFS='|' read -r name cmdline outfile _ <<<"${workloads[$w]}"
	cmd=()
	eval "cmd=($cmdline)"
	ref_rc='' ref_sum='' limit=120
	for mode in "${modes[@]}"; do status[$w,$mode]=ok; done
	for ((r = 1; r <= runs; r++)); do
		for mode in "${modes[@]}"; do
			[ "${status[$w,$mode]}" = ok ] || continue
			run_once "$mode" "$limit" "$outfile" "${cmd[@]}"
			if [ "$mode" = native ] && [ -z "$ref_sum" ]; then
				[ "$r_rc" = 0 ] || die "$name fails natively (exit $r_rc): $(tail -n 1 "$tmp/err")"
				ref_rc=$r_rc ref_sum=$r_sum
				limit=$(awk -v t="$r_wall" 'BEGIN { printf "%d", 30 * t + 60 }')
			fi
			what=
			if [ "$r_rc" = 124 ] || [ "$r_rc" = 137 ]; then
				what="timed out after $limit s"
			elif [ "$r_rc" != "$ref_rc" ]; then
				what="exit status $r_rc instead of $ref_rc"
			elif [ "$r_sum" != "$ref_sum" ]; then
				what="output differs from the native run's"
			fi
			if [ -n "$what" ]; then
				status[$w,$mode]=$what
				problems+=("$name under $mode (run $r): $what; stderr: $(tail -n 3 "$tmp/err" | tr '\n' ' ')")
				how=$(printf ' %q' "${cmd[@]}")
				case $mode in
				dacce) how=" $orig_dacce launch -q -o cap.db --$how" ;;
				dwarf | fp) how=" $perf record -q -e $perf_event -F $freq --call-graph $mode -o perf.data --$how" ;;
				esac
				problems+=("    reproduce: $0 --inputs DIR; cd DIR;${how}")
				continue
			fi
			best_wall[$w,$mode]=$(min "${best_wall[$w,$mode]:-}" "$r_wall")
			[ -n "$r_run" ] && best_run[$w,$mode]=$(min "${best_run[$w,$mode]:-}" "$r_run")
			[ "$mode" = dacce ] && mv -f "$tmp/cap.db" "$tmp/caps/$w.db" 2>/dev/null
		done
	done
	printf '  [%d/%d] %-12s native %ss, dacce %ss, perf dwarf %ss, perf fp %ss\n' $((w + 1)) "$nw" "$name" \
		"${best_wall[$w,native]:-?}" "${best_wall[$w,dacce]:-?}" "${best_wall[$w,dwarf]:-?}" "${best_wall[$w,fp]:-?}"
done

# ---------------------------------------------------------------- tables
# times_table KIND (wall | run): one line per workload, then geometric means
times_table() {
	local kind=$1 w mode v n rs line
	declare -A logsum count
	printf '%-12s %8s %8s %6s %8s %6s %8s %6s\n' workload native dacce ratio "dwarf" ratio "fp" ratio
	for ((w = 0; w < nw; w++)); do
		IFS='|' read -r name _ <<<"${workloads[$w]}"
		if [ "$kind" = wall ]; then n=${best_wall[$w,native]:-}; else n=${best_run[$w,native]:-}; fi
		line=$(printf '%-12s %7ss' "$name" "${n:-?}")
		rs=
		for mode in dacce dwarf fp; do
			if [ "$kind" = wall ]; then v=${best_wall[$w,$mode]:-}; else v=${best_run[$w,$mode]:-}; fi
			if [ "${status[$w,$mode]}" != ok ]; then
				line+=$(printf ' %8s %6s' FAIL -)
				rs+=" ?"
				continue
			fi
			r=$(ratio "$v" "$n")
			line+=$(printf ' %7ss %5sx' "${v:-?}" "$r")
			rs+=" $r"
			if [ "$r" != "?" ]; then
				logsum[$mode]=$(awk -v s="${logsum[$mode]:-0}" -v r="$r" 'BEGIN { print s + log(r) }')
				count[$mode]=$((${count[$mode]:-0} + 1))
			fi
		done
		echo "$line"
		echo "\"$name\"$rs" >>"$tmp/plot-$kind.dat"
	done
	line=$(printf '%-12s %8s' geomean "")
	for mode in dacce dwarf fp; do
		if [ "${count[$mode]:-0}" -gt 0 ]; then
			line+=$(awk -v s="${logsum[$mode]}" -v n="${count[$mode]}" 'BEGIN { printf " %8s %5.2fx", "(" n ")", exp(s / n) }')
		else
			line+=$(printf ' %8s %6s' - -)
		fi
	done
	echo "$line"
}

echo
echo "== wall clock of the whole command, best of $runs (dwarf, fp: perf record --call-graph dwarf, fp)"
times_table wall
echo
echo "== the program's own run time, best of $runs (dacce: its capture's first image start to last"
echo "   image end; perf: the exec to the last exit in perf.data): without each tool's start and stop"
times_table run

# ---------------------------------------------------------------- precision and counts
# One more run of each workload with stack copies (--validate: every exact context against the
# stack walk, docs/validation.md) and with the runtime counting calls and ccStack pushes
# (--count-calls: the paper's calls/s and ccStack/s).  Not timed: both cost what they cost.
declare -A val_line val_why rate_calls rate_pushes
for ((w = 0; w < nw; w++)); do
	IFS='|' read -r name cmdline outfile _ <<<"${workloads[$w]}"
	cmd=()
	eval "cmd=($cmdline)"
	rm -f "$tmp/val.db" "$tmp/val.db.old" "$outfile"
	timeout -k 5 600 "$dacce" launch -q --validate --count-calls -o "$tmp/val.db" -- "${cmd[@]}" \
		</dev/null >/dev/null 2>"$tmp/val.err"
	val_line[$w]=$(grep '^validate: samples=' "$tmp/val.err")
	[ -n "${val_line[$w]}" ] || val_line[$w]="no validation: $(grep -v '^validate' "$tmp/val.err" | tail -n 1)"
	val_why[$w]=$(sed -n 's/^validate: unverifiable: //p' "$tmp/val.err" | tr ',' '\n' |
		sed 's/^ *//' | sort -n -r | head -n 1)
	if grep -q ' mismatched=[1-9]' <<<"${val_line[$w]}"; then
		problems+=("$name under dacce launch --validate: wrong contexts:")
		while IFS= read -r l; do problems+=("    $l"); done < <(sed -n '/^validate: mismatch/,/^validate: samples/p' "$tmp/val.err" | head -n 40)
	fi
	# The image with most samples, as in the captures table.
	img_pid=$(sqlite3 "$tmp/val.db" 'select p.pid from procs p where p.runtime = 1 order by (select count(*) from samples s where s.proc = p.id) desc, p.id limit 1' 2>/dev/null)
	rates=$([ -n "$img_pid" ] && "$dacce" report -i "$tmp/val.db" --stats -p "$img_pid" 2>/dev/null |
		sed -n 's/.*calls\/s \([0-9]*\), ccStack pushes\/s \([0-9]*\).*/\1 \2/p' | head -n 1)
	read -r rate_calls[$w] rate_pushes[$w] <<<"${rates:-n/a n/a}"
done

echo
echo "== dacce captures (the last run of each workload; Table 1 columns of the paper; image: the"
echo "   instrumented process image with most samples; epochs counts epoch 0)"
printf '%-12s %-12s %6s %6s %12s %6s %9s %7s %7s %6s %7s %7s  %s\n' workload image nodes edges maxID \
	epochs "pause ms" samples exact depth "ops/s" "calls/s" "not instrumented"
for ((w = 0; w < nw; w++)); do
	IFS='|' read -r name _ <<<"${workloads[$w]}"
	db=$tmp/caps/$w.db
	if [ ! -f "$db" ]; then
		printf '%-12s (no capture: %s)\n' "$name" "${status[$w,dacce]}"
		continue
	fi
	q() { sqlite3 "$db" "$1" 2>/dev/null; }
	img=$(q 'select p.id from procs p where p.runtime = 1 order by (select count(*) from samples s where s.proc = p.id) desc, p.id limit 1')
	samples=$(q 'select count(*) from samples')
	lost=$(q "select coalesce(sum(value), 0) from counters where name in ('lost_samples', 'lost_records')")
	exact=$("$dacce" report -i "$db" --stats 2>/dev/null | sed -n 's/^# contexts:.*exact [0-9]* (\([0-9.]*%\)).*/\1/p')
	alone=$(q "select group_concat(distinct replace(exe, rtrim(exe, replace(exe, '/', '')), '')) from procs where runtime = 0 and coalesce(exe, '') != ''")
	[ "${lost:-0}" = 0 ] || alone="${alone:+$alone, }LOST $lost records/samples"
	if [ -z "$img" ]; then
		printf '%-12s %-12s %6s %6s %12s %6s %9s %7s %7s %6s %7s %7s  %s\n' "$name" "(none)" - - - - - \
			"$samples" "${exact:-0%}" - n/a n/a "${alone:--}"
		continue
	fi
	exe=$(q "select replace(exe, rtrim(exe, replace(exe, '/', '')), '') from procs where id = $img")
	read -r nodes edges maxid epochs pause depth < <(q "select
		(select count(*) from nodes where proc = $img), (select count(*) from edges where proc = $img),
		(select max_id from epochs where proc = $img order by epoch desc limit 1),
		(select count(*) from epochs where proc = $img),
		(select printf('%.1f', coalesce(sum(pause_ns), 0) / 1e6) from epochs where proc = $img),
		(select printf('%.2f', avg(depth)) from samples where proc = $img)" | tr '|' ' ')
	printf '%-12s %-12s %6s %6s %12s %6s %9s %7s %7s %6s %7s %7s  %s\n' "$name" "${exe#x86_64-linux-gnu-}" "$nodes" "$edges" \
		"$maxid" "$epochs" "$pause" "$samples" "${exact:-0%}" "$depth" "${rate_pushes[$w]}" \
		"${rate_calls[$w]}" "${alone:--}"
done
echo "(ops/s: ccStack pushes per second, each popped once; calls/s: calls and tail calls through"
echo " instrumented sites per second; both from a separate run with --count-calls)"

echo
echo "== precision: dacce launch --validate (the same run; verified: the decoded context was exact"
echo "   and the stack walk reached the outermost frame; exact %: of verified)"
printf '%-12s %8s %8s %8s %10s %12s %8s  %s\n' workload samples verified exact mismatched unverifiable "exact %" \
	"most unverifiable: why"
declare -A prec_total
for ((w = 0; w < nw; w++)); do
	IFS='|' read -r name _ <<<"${workloads[$w]}"
	read -r vs vv ve vm vu <<<"$(sed -n 's/.*samples=\([0-9]*\) verified=\([0-9]*\) exact=\([0-9]*\) mismatched=\([0-9]*\) unverifiable=\([0-9]*\).*/\1 \2 \3 \4 \5/p' <<<"${val_line[$w]}")"
	if [ -z "$vs" ]; then
		printf '%-12s (%s)\n' "$name" "${val_line[$w]}"
		continue
	fi
	printf '%-12s %8s %8s %8s %10s %12s %8s  %s\n' "$name" "$vs" "$vv" "$ve" "$vm" "$vu" \
		"$(awk -v e="$ve" -v v="$vv" 'BEGIN { if (v > 0) printf "%.2f", 100 * e / v; else print "-" }')" "${val_why[$w]:--}"
	for k in vs vv ve vm vu; do prec_total[$k]=$((${prec_total[$k]:-0} + ${!k})); done
done
printf '%-12s %8s %8s %8s %10s %12s %8s\n' all "${prec_total[vs]:-0}" "${prec_total[vv]:-0}" \
	"${prec_total[ve]:-0}" "${prec_total[vm]:-0}" "${prec_total[vu]:-0}" \
	"$(awk -v e="${prec_total[ve]:-0}" -v v="${prec_total[vv]:-0}" 'BEGIN { if (v > 0) printf "%.2f", 100 * e / v; else print "-" }')"

# ---------------------------------------------------------------- plots and raw numbers
{
	printf 'workload\tmode\tstatus\twall_s\trun_s\n'
	for ((w = 0; w < nw; w++)); do
		IFS='|' read -r name _ <<<"${workloads[$w]}"
		for mode in "${modes[@]}"; do
			printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "${status[$w,$mode]}" "${best_wall[$w,$mode]:-}" "${best_run[$w,$mode]:-}"
		done
	done
} >"$results/results.tsv"
echo
for kind in run wall; do
	case $kind in
	run) png=$results/overhead.png what="program run time" ;;
	wall) png=$results/overhead-wall.png what="wall clock of the whole command" ;;
	esac
	if gnuplot -e "data='$tmp/plot-$kind.dat'; col=2; out='$png'; what='$what, best of $runs'" "$bench/plot.gp" 2>"$tmp/gnuplot.err"; then
		echo "plot: $png"
	else
		echo "plot: gnuplot failed: $(tail -n 1 "$tmp/gnuplot.err")"
	fi
done
echo "raw numbers: $results/results.tsv"
elapsed=$(awk -v a="$t_begin" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
echo "took ${elapsed} s; load $(cut -d' ' -f1-3 /proc/loadavg) at end"
if [ ${#problems[@]} -gt 0 ]; then
	echo
	echo "PROBLEMS (a tool changed the program's behaviour; not counted in the means):"
	printf '  %s\n' "${problems[@]}"
fi
exit 0
