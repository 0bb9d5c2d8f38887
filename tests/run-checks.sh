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
for suite in "$@"; do
	echo "== $suite"
	out=$("$suite" 2>&1)
	status=$?
	printf '%s\n' "$out"
	# Check's summary: "100%: Checks: 6, Failures: 0, Errors: 0"
	summary=$(printf '%s\n' "$out" | sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' | tail -n 1)
	if [ -z "$summary" ]; then
		echo "check: $suite printed no summary"
		failed=$((failed + 1))
		continue
	fi
	read -r total failures errors <<<"$summary"
	passed=$((passed + total - failures - errors))
	failed=$((failed + failures + errors))
	if [ "$status" -ne 0 ] && [ "$failures" -eq 0 ] && [ "$errors" -eq 0 ]; then
		failed=$((failed + 1))
	fi
done

echo "== simulator"
# shellcheck disable=SC2086
if "$simulate" $sim_args; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "== simulator mutation check (a wrong encoding must be caught)"
if "$simulate" --programs 50 --seed 7 --mutate --expect-mismatch; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi

if [ "$libdacce" != "-" ]; then
	echo "== integration programs under libdacce.so"
	programs_out=$(tests/run-programs.sh "$build" "$libdacce" 2>&1)
	printf '%s\n' "$programs_out" | grep -v '^programs:'
	counts=$(printf '%s\n' "$programs_out" | sed -n 's/^programs: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
	if [ -z "$counts" ]; then
		failed=$((failed + 1))
	else
		read -r p f <<<"$counts"
		passed=$((passed + p))
		failed=$((failed + f))
		echo "programs: $p passed, $f failed"
	fi
fi

echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
