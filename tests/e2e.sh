#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of `dacce launch` and `dacce report` through the real BPF
# path (root needed): contexts must be exactly the true paths, every output
# format must be readable by the tools that read it, and bad input must give
# one line and a non-zero exit.  Ends with "e2e: N passed, M failed".
#
# usage: tests/e2e.sh DACCE LIBDACCE PROGRAMS_DIR [WORK_DIR]
# PROGRAMS_DIR holds the workload built three ways (workload, workload-O0, static) and a
# C++ one (shapes): the Makefile's e2e-programs, so that no compiler is needed where the
# test runs (vm-check).
# E2E_NO_GO=1 skips the check with go tool pprof (no Go toolchain in the VM).
# E2E_SLOW=1 (the VM, emulated) runs smaller real workloads and the known workload longer,
# so that start-up does not dominate it.
set -u
dacce=$(readlink -f "$1")
libdacce=$(readlink -f "$2")
programs=$(readlink -f "$3")
here=$(cd "$(dirname "$0")" && pwd)
work=${4:-$(mktemp -d /tmp/dacce-e2e.XXXXXX)}
mkdir -p "$work"
keep_work=${4:-}
cleanup() { [ -z "$keep_work" ] && rm -rf "$work"; }
trap cleanup EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

if [ "$(id -u)" != 0 ]; then
	echo "e2e: needs root for BPF (run as root, as CI does)"
	echo "e2e: 0 passed, 1 failed"
	exit 1
fi
# `dacce launch` must find the runtime it was built with.
export DACCE_RUNTIME=$libdacce

for p in workload workload-O0 static shapes; do
	cp "$programs/$p" "$work/$p" || { echo "$programs/$p missing (make e2e-programs)"; echo "e2e: 0 passed, 1 failed"; exit 1; }
done

# One line on stderr, and a given exit status.
expect_error() { # NAME STATUS_WANTED(any non-zero: "!0") PATTERN CMD...
	local name=$1 want=$2 pattern=$3 status lines
	shift 3
	"$@" >"$work/out" 2>"$work/err"
	status=$?
	lines=$(grep -c . "$work/err")
	if { [ "$want" = "!0" ] && [ "$status" -ne 0 ]; } || [ "$status" = "$want" ]; then
		if [ "$lines" = 1 ] && grep -q -- "$pattern" "$work/err"; then
			pass "$name"
			return
		fi
	fi
	fail "$name (status $status, stderr: $(head -c 300 "$work/err"))"
}

# ------------------------------------------------------------------ contexts are exact
check_exact() { # NAME BINARY ARGS...
	local name=$1 bin=$2 status
	shift 2
	"$dacce" launch -q -o "$work/$name.db" -- "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err"
	status=$?
	if [ "$status" != 3 ]; then
		fail "$name: dacce launch exited $status, want the program's 3 ($(head -c 300 "$work/$name.err"))"
		return
	fi
	if ! "$dacce" report -i "$work/$name.db" -f json -n 0 >"$work/$name.json" 2>"$work/$name.rerr"; then
		fail "$name: report failed: $(cat "$work/$name.rerr")"
		return
	fi
	if out=$(/usr/bin/python3 "$here/e2e/check-report.py" "$here/e2e/expected-paths.txt" \
		"$work/$name.json" "$min_judged"); then
		pass "$name: $out"
	else
		fail "$name: $out"
	fi
}
if [ -n "${E2E_SLOW:-}" ]; then
	seconds=4 min_judged=50 py_items=8000 blob_bytes=4000000
else
	seconds=1.5 min_judged=70 py_items=60000 blob_bytes=20000000
fi
check_exact workload-O2 "$work/workload" $seconds 3 --fork
check_exact workload-O0-nopie "$work/workload-O0" $seconds 3 --fork
# Functions run from copies (runtime/relocated.h): a sample in one is in its function.
DACCE_RELOCATE=1 check_exact workload-O2-moved "$work/workload" $seconds 3 --fork

# ------------------------------------------------------------------ what the capture holds
db=$work/workload-O2.db
q() { sqlite3 "$db" "$1"; }
if [ "$(q "select count(*) from procs where runtime = 1")" -ge 2 ]; then
	pass "fork child followed (its own process image)"
else
	fail "fork child not followed: $(q 'select id, pid, parent, runtime from procs')"
fi
# Every sample of the child is stored with its image, which knows its parent's code: samples
# have a ring of their own, and read before the fork event they went to a row of no parent
# (seen in the QEMU guest, where the controller is slow: the child's contexts all unresolved).
child_samples=$(q "select count(*) from samples s join procs p on p.id = s.proc
	where p.pid in (select pid from procs where parent is not null) and p.parent is not null")
stray_samples=$(q "select count(*) from samples s join procs p on p.id = s.proc
	where p.pid in (select pid from procs where parent is not null) and p.parent is null")
if [ "${child_samples:-0}" -gt 0 ] && [ "$stray_samples" = 0 ]; then
	pass "fork child's samples stored with its image ($child_samples)"
else
	fail "fork child's samples: $child_samples with its image, $stray_samples in a row of no parent"
fi
if [ "$(q "select count(*) from threads where ctx_epoch is not null")" -ge 2 ]; then
	pass "threads carry their creation contexts"
else
	fail "no creation contexts: $(q 'select * from threads')"
fi
if [ "$(q "select count(*) from epochs where driver = 'controller' and dict is not null")" -ge 1 ]; then
	pass "epochs driven by the controller, dictionaries captured"
else
	fail "no controller epoch: $(q 'select proc, epoch, driver, length(dict) from epochs')"
fi
# Code entries come out in batches of 64 (runtime/entry_notes.h): more than two batches
# arrived, each entry inside a code region or in the program's text (a hop through padding),
# the tail-call return stub among them.  A fork child makes code in its parent's regions.
entries=$(q "select count(*) from code_entries")
outside=$(q "select count(*) from code_entries e where not exists (select 1 from code_regions r
	where e.address >= r.start and e.address < r.start + r.size) and not exists (select 1
	from modules m where m.path = '$work/workload' and e.address >= m.start and e.address < m.end)")
stubs=$(q "select count(distinct proc) from code_entries where site_caller = 4294967295")
if [ "$entries" -gt 128 ] && [ "$outside" = 0 ] && [ "$stubs" -ge 1 ]; then
	pass "code entries captured ($entries, all inside code regions, tail-call return stub too)"
else
	fail "code entries: $entries captured, $outside outside code regions, $stubs tail stubs"
fi
# And none is held back: the capture has every entry the runtime noted (its DACCE_LOG summary),
# the last batch of each lock hold included.
DACCE_LOG=1 "$dacce" launch -q -o "$work/entries.db" -- "$work/workload" 1 3 >/dev/null 2>"$work/entries.err"
told=$(sed -n 's/.* \([0-9]*\) code entries told to a tracer.*/\1/p' "$work/entries.err" | head -n 1)
kept=$(sqlite3 "$work/entries.db" "select count(*) from code_entries")
if [ -n "$told" ] && [ "$told" -gt 0 ] && [ "$told" = "$kept" ]; then
	pass "every code entry the runtime noted is in the capture ($kept)"
else
	fail "code entries: the runtime noted ${told:-none}, the capture has $kept"
fi
stats=$("$dacce" report -i "$db" --stats)
if grep -q "controller" <<<"$stats" && grep -qE "^#\s+epoch\s+maxID\s+nodes\s+edges" <<<"$stats"; then
	pass "report lists epochs with maxID, nodes and edges"
else
	fail "report's epoch table: $stats"
fi

# ------------------------------------------------------------------ formats
"$dacce" report -i "$db" -f folded >"$work/folded" 2>&1
if [ -s "$work/folded" ] && ! grep -vqE '^[^ ].* [0-9]+$' "$work/folded" &&
	grep -q "main;start_workers;.*;worker_a;worker_a_step;spin_worker_a [0-9]*$" "$work/folded"; then
	pass "folded: one stack per line, outermost first"
else
	fail "folded output: $(head -3 "$work/folded")"
fi
for f in cct kccf top; do
	if "$dacce" report -i "$db" -f $f -k 2 >"$work/$f" 2>&1 && grep -q spin_worker_b "$work/$f"; then
		pass "report -f $f"
	else
		fail "report -f $f: $(head -3 "$work/$f")"
	fi
done
if "$dacce" report -i "$db" -f pprof -o "$work/profile.pb.gz" 2>"$work/err" && [ -s "$work/profile.pb.gz" ]; then
	if [ -n "${E2E_NO_GO:-}" ]; then
		echo "skip: pprof read by go tool pprof (E2E_NO_GO)"
	elif command -v go >/dev/null; then
		gohome=$work/go
		mkdir -p "$gohome"
		if HOME=$gohome GOCACHE=$gohome/cache GOPATH=$gohome/path GOFLAGS=-mod=mod \
			go tool pprof -top -sample_index=samples "$work/profile.pb.gz" >"$work/pprof.top" 2>&1 &&
			grep -q spin_worker_a "$work/pprof.top"; then
			pass "pprof: go tool pprof -top reads it"
		else
			fail "go tool pprof -top: $(head -5 "$work/pprof.top")"
		fi
	else
		fail "pprof: go is not installed (make deps installs golang-go)"
	fi
else
	fail "report -f pprof: $(cat "$work/err")"
fi

# ------------------------------------------------------------------ dacce decode
# A sampled raw context of main's thread, decoded alone, gives main_path's path.
le() { local h=$1 out= i; for ((i = ${#h} - 2; i >= 0; i -= 2)); do out+=${h:i:2}; done; echo $((16#$out)); }
# spin_main's extent from its symbol size: the next function starts right after it.
read -r spin_main spin_main_size < <(nm -S "$work/workload" | awk '$4 == "spin_main" { print $1, $2 }')
row=$(q "select p.pid, s.epoch, s.id, s.pc, hex(s.entries) from samples s join procs p on p.id = s.proc
	join modules m on m.proc = p.id and m.path like '%/workload' and m.idx = 0
	where s.ctx_flags = 1 and s.pc - m.bias >= $((16#$spin_main)) and s.pc - m.bias < $((16#$spin_main + 16#$spin_main_size))
	limit 1")
IFS='|' read -r pid epoch id pc entries <<<"$row"
args=()
while [ -n "$entries" ]; do
	e=${entries:0:32}
	entries=${entries:32}
	# 16 bytes little-endian: id (8), edge (4), aux (4).
	args+=("$(le "${e:0:16}"):$(le "${e:16:8}"):$(le "${e:24:8}")")
done
if [ -n "$row" ] && "$dacce" decode -i "$db" -p "$pid" -e "$epoch" --id "$id" --pc "$pc" "${args[@]}" \
	>"$work/decoded" 2>&1 && [ "$(awk '{ print $2 }' "$work/decoded" | tr '\n' ' ')" = \
	"spin_main main_path_inner main_path main " ]; then
	pass "dacce decode of a sampled context"
else
	fail "dacce decode (sample '$row'): $(cat "$work/decoded")"
fi

# ------------------------------------------------------------------ validation against stack walks
# validate_line FILE: "samples verified exact mismatched" of its "validate: samples=..." line.
validate_line() {
	sed -n 's/^validate: samples=\([0-9]*\) verified=\([0-9]*\) exact=\([0-9]*\) mismatched=\([0-9]*\).*/\1 \2 \3 \4/p' "$1"
}
"$dacce" launch -q --validate -o "$work/validate.db" -- "$work/workload" "$seconds" 0 --fork \
	>/dev/null 2>"$work/validate.err"
read -r vs vv ve vm <<<"$(validate_line "$work/validate.err")"
# Nearly all of this workload's samples can be verified, but for the runtime's own work (its
# start, first calls, and its policy thread, whose wake-ups took 10 to 17 % of the samples in
# the QEMU guest, where system calls are emulated, and under 1 % on the host): that is
# bounded by itself, so that reading everything "inside the runtime" cannot pass.
in_runtime=$(sed -n 's/^validate: unverifiable:.* \([0-9]*\) inside the runtime.*/\1/p' "$work/validate.err")
in_runtime=${in_runtime:-0}
if [ -n "$vs" ] && [ "$vm" = 0 ] && [ "$ve" = "$vv" ] && [ $((in_runtime * 10)) -le $((vs * 3)) ] &&
	[ $((vv * 10)) -ge $(((vs - in_runtime) * 8)) ]; then
	pass "--validate: every verified context is the stack walk's ($vv of $vs samples verified, $in_runtime inside the runtime)"
else
	fail "--validate: $(grep '^validate' "$work/validate.err" | head -n 20)"
fi
# The workload calls setjmp, whose thunk is announced after the tail-call return stub: the walks
# of tail_path's samples must still go through the stub (taken for other code, they ran off into
# addresses of no module).
# (A stray one, in the vDSO say, is no sign of it: the lost walks were a tenth of the samples.)
lost=$(sed -n 's/^validate: unverifiable:.* \([0-9]*\) pc in no module.*/\1/p' "$work/validate.err")
if [ -n "$vs" ] && [ $((${lost:-0} * 100)) -le "$vs" ]; then
	pass "--validate: walks go through the tail-call return stub"
else
	fail "--validate: walks lost at the tail-call return stub: $(grep '^validate: unverifiable' "$work/validate.err")"
fi
# Contexts made wrong (recursion one level short) must come out as mismatches, the rest exact.
cp "$work/validate.db" "$work/corrupt.db"
corrupted=$(/usr/bin/python3 "$here/e2e/corrupt-context.py" "$work/corrupt.db")
"$dacce" report --validate=1 -i "$work/corrupt.db" >"$work/corrupt.out" 2>&1
status=$?
read -r cs cv ce cm <<<"$(validate_line "$work/corrupt.out")"
if [ "$status" = 1 ] && [ "${corrupted:-0}" -gt 0 ] && [ "${cm:-0}" -gt 0 ] &&
	[ "$cm" -le "$corrupted" ] && [ $((ce + cm)) = "$cv" ] && [ "$cv" = "$vv" ] &&
	grep -q 'first difference' "$work/corrupt.out"; then
	pass "--validate: $cm of $corrupted corrupted contexts reported as mismatches"
else
	fail "--validate on corrupted contexts ($corrupted changed, status $status): $(grep '^validate: samples' "$work/corrupt.out")"
fi
# --count-calls: the paper's calls/s and ccStack/s.  The workload makes tens of thousands of
# calls a second through instrumented sites, and its recursion pushes: a few thousand in a
# QEMU guest without KVM on a busy machine (vm-check), so the bar only says counting works.
"$dacce" launch -q --count-calls -o "$work/count.db" -- "$work/workload" 0.5 0 >/dev/null 2>&1
read -r calls_s pushes_s <<<"$("$dacce" report -i "$work/count.db" --stats 2>/dev/null |
	sed -n 's/.*calls\/s \([0-9]*\), ccStack pushes\/s \([0-9]*\).*/\1 \2/p' | head -n 1)"
if [ "${calls_s:-0}" -gt 1000 ] && [ "${pushes_s:-0}" -gt 0 ] &&
	"$dacce" report -i "$db" --stats | grep -q 'not counted'; then
	pass "--count-calls: $calls_s calls/s, $pushes_s ccStack pushes/s; none without it"
else
	fail "--count-calls: '$calls_s' calls/s, '$pushes_s' pushes/s"
fi
expect_error "validation of a capture without stack copies" 1 "no stack copies" \
	"$dacce" report --validate -i "$db"
expect_error "bad stack size" 2 "bad stack size" "$dacce" launch --validate --stack-size 1M -- /bin/true

# ------------------------------------------------------------------ real programs
real_program() { # NAME NAMES_WANTED('|'-separated, may be empty) MIN_FRAMES CMD...
	local name=$1 want=$2 min_frames=$3 status out
	shift 3
	"$@" >"$work/$name.native" 2>&1
	"$dacce" launch -q -o "$work/$name.db" -- "$@" >"$work/$name.out" 2>"$work/$name.err"
	status=$?
	if [ "$status" != 0 ] || ! cmp -s "$work/$name.native" "$work/$name.out"; then
		fail "$name: exit status $status or output differs: $(head -c 300 "$work/$name.err")"
		return
	fi
	"$dacce" report -i "$work/$name.db" -f json -n 0 >"$work/$name.json" 2>&1
	if out=$(/usr/bin/python3 "$here/e2e/check-complete.py" "$work/$name.json" "$want" "$min_frames"); then
		pass "$name: same output; $out"
	else
		fail "$name: $out"
	fi
}
cat >"$work/script.py" <<EOF
import json
data = [{"k": i, "v": [i] * 5} for i in range($py_items)]
for _ in range(3):
    data = json.loads(json.dumps(data))
print(len(data))
EOF
real_program python3 "_PyEval_EvalFrameDefault|Py_BytesMain" 5 /usr/bin/python3 "$work/script.py"
real_program perl perl_run 5 /usr/bin/perl -e 'my %h; for my $i (1..400000) { $h{$i % 1000} .= "x" } print scalar(keys %h), "\n"'
head -c "$blob_bytes" /dev/urandom >"$work/blob"
real_program zstd-T2 "" 5 /usr/bin/zstd -q -T2 -c "$work/blob"
real_program c++ "geo::Circle::area() const|geo::Square::area() const|main" 3 "$work/shapes"

# ------------------------------------------------------------------ failures
"$dacce" launch -q -o "$work/crash.db" -- "$work/workload" 0.3 0 --crash >/dev/null 2>&1
status=$?
if [ "$status" = 139 ] && "$dacce" report -i "$work/crash.db" -n 1 >/dev/null 2>&1 &&
	[ "$(sqlite3 "$work/crash.db" 'select count(*) from samples')" -gt 0 ]; then
	pass "a crashing program: its status (139) passed on, capture kept"
else
	fail "crashing program: status $status"
fi
# Waits (at most SECONDS) until a process whose command line matches PATTERN (anchored: not
# dacce's own, which names the program too) runs: dacce launch starts it once its probes are
# attached.  A signal sent sooner would reach dacce before its handlers are set: a background
# job of a script ignores SIGINT, and would run on forever (a slow QEMU guest hung so).
started_within() { # PATTERN SECONDS
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		pgrep -f "$1" >/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# A signal aimed at dacce is passed on, what was captured is kept.  (SIGTERM:
# a script's background job ignores SIGINT, and so would the program.)
"$dacce" launch -q -o "$work/int.db" -- "$work/workload" 30 0 >/dev/null 2>&1 &
launcher=$!
started_within "^$work/workload 30 0" 60
sleep 1
kill -TERM $launcher
wait $launcher
status=$?
if [ "$status" = 143 ] && [ "$(sqlite3 "$work/int.db" 'select count(*) from samples')" -gt 0 ]; then
	pass "termination: passed on to the program (status 143), capture flushed"
else
	fail "termination: status $status"
fi
# Detaching leaves the program running, unharmed.
rm -f "$work/stop"
"$dacce" launch -q --detach-on-interrupt -o "$work/detach.db" -- \
	"$work/workload" 0.5 5 --until-file "$work/stop" >"$work/detach.out" 2>&1 &
launcher=$!
started_within "^$work/workload 0.5 5 --until-file" 60
sleep 1
kill -INT $launcher
wait $launcher
status=$?
app=$(pgrep -f "workload 0.5 5 --until-file")
touch "$work/stop"
if [ "$status" = 0 ] && [ -n "$app" ]; then
	for _ in $(seq 50); do kill -0 "$app" 2>/dev/null || break; sleep 0.1; done
	if ! kill -0 "$app" 2>/dev/null && grep -q "workload done" "$work/detach.out"; then
		pass "detach on interrupt: the program ran on and finished"
	else
		fail "detach: the program did not finish"
	fi
else
	fail "detach: dacce status $status, program pid '${app}'"
	[ -n "$app" ] && kill "$app"
fi

if "$(dirname "$dacce")/dacce-launch" -q -o "$work/short.db" -- "$work/workload" 0.1 7 >/dev/null; [ $? = 7 ]; then
	pass "dacce-launch is dacce launch"
else
	fail "dacce-launch"
fi
nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
# Only where an unprivileged user can run dacce at all (a checkout in a private directory not).
if setpriv --help 2>&1 | grep -q -- --reuid && $nobody test -x "$dacce" -a -r "$libdacce"; then
	expect_error "no privileges" 1 "permission denied" $nobody "$dacce" launch -o /tmp/dacce-e2e-nobody.db -- "$(command -v sqlite3)" :memory: "select 1"
fi
expect_error "missing program" 127 "cannot run" "$dacce" launch -o "$work/x.db" -- "$work/no-such-program"
expect_error "static program" "!0" "statically linked" "$dacce" launch -o "$work/x.db" -- "$work/static"
expect_error "not a program" "!0" "not an" "$dacce" launch -o "$work/x.db" -- "$here/e2e/expected-paths.txt"
expect_error "unknown event" "!0" "unknown event" "$dacce" launch -e no-such-event -o "$work/x.db" -- "$work/workload" 0
expect_error "hardware event without a PMU" "!0" "not supported on this machine\|cannot open event" \
	"$dacce" launch -e cycles -o "$work/x.db" -- "$work/workload" 0
expect_error "bad frequency" 2 "bad frequency" "$dacce" launch -F 0 -- /bin/true
expect_error "no program" 2 "no program" "$dacce" launch
expect_error "unknown command" 2 "not a dacce command" "$dacce" frobnicate
expect_error "missing capture" "!0" "cannot read" "$dacce" report -i "$work/no-such.db"
head -c 5000 /dev/urandom >"$work/garbage.db"
expect_error "garbage capture" "!0" "not a dacce capture" "$dacce" report -i "$work/garbage.db"
sqlite3 "$work/other.db" "create table t(x); insert into t values (1);"
expect_error "another database" "!0" "not a dacce capture" "$dacce" report -i "$work/other.db"
head -c 30000 "$db" >"$work/truncated.db"
expect_error "truncated capture" "!0" "dacce:" "$dacce" report -i "$work/truncated.db"
cp "$db" "$work/future.db"
sqlite3 "$work/future.db" "update meta set value = '99' where key = 'schema_version'"
expect_error "capture of a later schema" "!0" "schema version 99" "$dacce" report -i "$work/future.db"
expect_error "unknown format" 2 "unknown format" "$dacce" report -i "$db" -f nope
expect_error "decode of an unknown pid" "!0" "ran no runtime" "$dacce" decode -i "$db" -p 1 -e 0 --id 0
expect_error "decode of a wrong context" "!0" "does not decode" "$dacce" decode -i "$db" -p "$pid" -e 1 --id 999999 0:999999

echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
