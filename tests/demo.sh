#!/usr/bin/env bash
# The main job: exact calling contexts of unmodified programs.
#  1. A program built here asks for its own calling context at probe points, natively
#     (glibc backtrace(), by unwinding) and under the runtime (dacce_backtrace(), decoded
#     from the encoding, no unwinding): the two columns must agree.
#  2. `dacce launch` profiles Debian's python3 running a workload: every sample carries
#     its context, read by BPF from the thread's state, decoded and symbolized by
#     `dacce report`.
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
echo "python3 under dacce launch (samples at 997 Hz, contexts decoded, not unwound):"
if [ "$(id -u)" != 0 ]; then
	echo "  dacce launch loads BPF programs: run this as root (sudo make demo)" >&2
	exit 1
fi
cat >"$build/demo/work.py" <<'EOF'
import json, re
data = [{"k": i, "v": [i] * 5} for i in range(50000)]
for _ in range(3):
    data = json.loads(json.dumps(data))
print("  python3 says:", len(data), re.findall(r"\d+", "a1b22c333"))
EOF
"$build/dacce" launch -o "$build/demo/python3.db" -- /usr/bin/python3 "$build/demo/work.py"
echo
"$build/dacce" report -i "$build/demo/python3.db" -n 3
echo
echo "the same capture as folded stacks (flamegraph.pl, speedscope), hottest 3:"

"$build/dacce" report -i "$build/demo/python3.db" -f folded | sort -k2 -t' ' -nr | head -3 |
	awk '{ n = length($0); print "  " (n > 160 ? "..." substr($0, n - 156) : $0) }'
