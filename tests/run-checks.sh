#!/usr/bin/env bash
# Runs every Check suite, the simulator, and (given a runtime library) the integration
# programs, then prints one closing line: "check: N passed, M failed".
# Usage: run-checks.sh SIMULATE "SIM_ARGS" BUILD_DIR LIBDACCE|- CHECK_BIN...
set -u
simulate=$1
sim_args=$2
build=$3
libdacce=$4
shift 4

passed=0
failed=0

# Everything printed also goes to a log, so the closing lines can repeat what failed:
# CI shows only the end of a long output.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
exec 3>&1 4>&2 > >(tee "$log") 2>&1
tee_pid=$!
for suite in "$@"; do
	echo "== $suite"
	out=$("$suite" 2>&1)
	status=$?
	printf '%s\n' "$out"
	# Check's summary: "100%: Checks: 6, Failures: 0, Errors: 0"
	summary=$(printf '%s\n' "$out" | sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' | tail -n 1)
	if [ -z "$summary" ]; then
		echo "FAIL: $suite printed no summary (status $status)"
		failed=$((failed + 1))
		continue
	fi
	read -r total failures errors <<<"$summary"
	passed=$((passed + total - failures - errors))
	failed=$((failed + failures + errors))
	if [ "$status" -ne 0 ] && [ "$failures" -eq 0 ] && [ "$errors" -eq 0 ]; then
		failed=$((failed + 1))
		echo "FAIL: $suite exited with status $status"
	fi
done

echo "== simulator"
# shellcheck disable=SC2086
if "$simulate" $sim_args; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	echo "FAIL: simulator $sim_args"
fi
echo "== simulator mutation check (a wrong encoding must be caught)"
if "$simulate" --programs 50 --seed 7 --mutate --expect-mismatch; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	echo "FAIL: simulator mutation check"
fi

# Runs a runner that ends with "LABEL: N passed, M failed" and adds its counts.
run_counted() {
	local label=$1 out counts p f
	shift
	out=$("$@" 2>&1)
	printf '%s\n' "$out" | grep -v "^$label:"
	counts=$(printf '%s\n' "$out" | sed -n "s/^$label: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p")
	if [ -z "$counts" ]; then
		echo "$label: no summary"
		failed=$((failed + 1))
		return
	fi
	read -r p f <<<"$counts"
	passed=$((passed + p))
	failed=$((failed + f))
	echo "$label: $p passed, $f failed"
}

if [ "$libdacce" != "-" ]; then
	echo "== integration programs under libdacce.so (contexts against native backtrace())"
	run_counted programs tests/run-programs.sh "$build" "$libdacce"
	echo "== the report of the sites that took the most traps (DACCE_LOG)"
	run_counted trapreport tests/trap-report.sh "$build" "$libdacce"
	echo "== which libraries are instrumented (DACCE_LOG, DACCE_LIBS=0)"
	run_counted libraries tests/libraries.sh "$build" "$libdacce"
	echo "== scans kept between runs (DACCE_CACHE_DIR)"
	run_counted scancache tests/scan-cache.sh "$build" "$libdacce"
	echo "== real programs under libdacce.so (same output, same exit status)"
	run_counted real tests/run-real.sh "$build" "$libdacce"
	echo "== dacce launch end to end (BPF capture, reports, failures)"
	run_counted e2e tests/e2e.sh "$build/dacce" "$libdacce" "$build/e2e"
	echo "== the perf map of generated code (DACCE_PERF_MAP, read by perf)"
	run_counted perfmap tests/perfmap.sh "$libdacce" "$build/e2e/workload-O0" "$build/programs/closefds-O2"
	echo "== a program under the runtime run from gdb and attached to by it"
	run_counted gdb tests/gdb.sh "$libdacce"
	echo "== the integration programs under dacce launch --validate (contexts against stack walks)"
	run_counted validate-programs tests/validate-programs.sh "$build/dacce" "$build"
	echo "== pprof output read by go tool pprof"
	if tests/check-pprof.sh "$build/tests/report_sample"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL: pprof output"
	fi
fi

exec 1>&3 2>&4 3>&- 4>&-
wait "$tee_pid"
if [ "$failed" -ne 0 ] || grep -q '^RETRY' "$log"; then
	echo "== what failed or was retried"
	# Check's failure lines look like "check_x.c:12:F:suite:test:0: message".
	grep -E '^(FAIL|RETRY)|:[FE]:[^:]*:[^:]*:|printed no summary|: no summary$' "$log" | head -n 40
fi
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
