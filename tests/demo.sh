#!/usr/bin/env bash
# The main job today: run ordinary programs under libdacce.so.
#  1. A program built here asks for its own calling context at probe points, natively
#     (glibc backtrace(), by unwinding) and under the runtime (dacce_backtrace(), decoded
#     from the encoding, no unwinding): the two columns must agree.
#  2. Debian's python3 runs a workload under the runtime, unchanged, and the runtime
#     reports what it instrumented.
# Usage: demo.sh BUILD_DIR LIBDACCE
set -eu
build=$1
lib=$2
mkdir -p "$build/demo"
gcc -O2 -g -D_GNU_SOURCE -Itests/programs tests/programs/calls.c -o "$build/demo/calls" -ldl
"$build/demo/calls" >"$build/demo/native.txt"
LD_PRELOAD=$lib "$build/demo/calls" >"$build/demo/dacce.txt"
echo "contexts of tests/programs/calls.c (return addresses, innermost first):"
paste -d '|' "$build/demo/native.txt" "$build/demo/dacce.txt" |
	awk -F'|' '{ printf "  native %-48s | dacce %s\n", substr($1, 1, 48), substr($2, 1, 48) }'
if cmp -s "$build/demo/native.txt" "$build/demo/dacce.txt"; then
	echo "=> identical"
else
	echo "=> DIFFERENT"
	exit 1
fi
echo
echo "python3 under the runtime:"
DACCE_LOG=1 LD_PRELOAD=$lib /usr/bin/python3 -c '
import json, re, sqlite3
rows = sqlite3.connect(":memory:").execute("select 6 * 7").fetchall()
print("  json:", json.dumps({"answer": rows[0][0]}), "re:", re.findall(r"\d+", "a1b22c333"))'
