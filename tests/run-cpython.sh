#!/usr/bin/env bash
# CPython's own test suite (Debian's libpython3.11-testsuite), a subset, natively and under
# libdacce.so: every test that passes natively must pass under the runtime, with the
# standalone policy re-encoding as it likes.  Outside `make check` (it takes minutes):
# `make check-cpython`, which .ci/run calls.
# Usage: run-cpython.sh LIBDACCE [TEST...]
set -u
# Debian's interpreter, whose tests libpython3.11-testsuite installs (not a python3 earlier on PATH).
py=/usr/bin/python3
lib=$1
shift
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(test_json test_re test_threading test_exceptions test_signal test_os test_ctypes)
if ! "$py" -c 'import test.libregrtest' 2>/dev/null; then
	echo "cpython: python3's test suite is not installed (make deps installs libpython3.11-testsuite)"
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
for t in "${tests[@]}"; do
	# -j0 would fork workers: one process, so every test runs under the runtime as it starts.
	(cd "$work" && timeout -k 10 900 "$py" -m test -q "$t") >"$work/native.log" 2>&1
	native=$?
	(cd "$work" && timeout -k 10 1800 env LD_PRELOAD="$lib" "$py" -m test -q "$t") >"$work/dacce.log" 2>&1
	dacce=$?
	if [ $native -ne 0 ]; then
		echo "SKIP $t: fails natively (status $native)"
	elif [ $dacce -eq 0 ]; then
		passed=$((passed + 1))
	else
		echo "FAIL $t: status $dacce under dacce, 0 natively"
		tail -n 15 "$work/dacce.log"
		failed=$((failed + 1))
	fi
done
echo "cpython: $passed passed, $failed failed"
[ $failed -eq 0 ]
