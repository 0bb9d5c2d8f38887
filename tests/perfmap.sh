#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The perf map (DACCE_PERF_MAP=1, runtime/perfmap.h): /tmp/perf-PID.map names every piece of
# generated code, well formed and without overlaps; a fork child gets its own file holding
# the parent's names; nothing is written when it is off; and perf itself then names the
# return addresses a frame-pointer call graph finds in trampolines.  A program that closes every
# descriptor above 2 (closefds.c) keeps its files intact, and the map goes on naming the code
# made after the close.
# Ends with "perfmap: N passed, M failed".
#
# usage: tests/perfmap.sh LIBDACCE WORKLOAD [CLOSEFDS]   (WORKLOAD: tests/e2e/workload.c built
# with frame pointers, the Makefile's $(BUILD)/e2e/workload-O0; CLOSEFDS: run-programs.sh's
# build of tests/programs/closefds.c)
set -u
lib=$(readlink -f "$1")
workload=$(readlink -f "$2")
closefds=${3:+$(readlink -f "$3")}
work=$(mktemp -d /tmp/dacce-perfmap.XXXXXX)
pids=()
cleanup() {
	rm -rf "$work"
	for p in "${pids[@]}"; do rm -f "/tmp/perf-$p.map"; done
}
trap cleanup EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

# Runs the workload under the runtime; its pid (and its fork child's) go to $work/pids.
run() { # ENV_ASSIGNMENTS... -- WORKLOAD_ARGS...
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	sh -c 'echo $$ >"$0"; exec "$@"' "$work/pid" env "${envs[@]}" LD_PRELOAD="$lib" \
		"$workload" "$@" >"$work/out" 2>&1
}

# Every line "START SIZE dacce:KIND@WHERE" in hex, sorted by start without overlaps.
well_formed() { # MAP
	local start size name end=0
	if grep -vqE '^[0-9a-f]+ [0-9a-f]+ dacce:[a-z_]+(@[^ ]+\+0x[0-9a-f]+)?$' "$1"; then
		echo "bad line: $(grep -vE '^[0-9a-f]+ [0-9a-f]+ dacce:' "$1" | head -n 1)"
		return 1
	fi
	while read -r start size name; do
		if [ "$size" -eq 0 ]; then
			echo "empty piece at $start ($name)"
			return 1
		fi
		if [ "$start" -lt "$end" ]; then
			echo "overlap at $(printf %x "$start") ($name)"
			return 1
		fi
		end=$((start + size))
	done < <(while read -r start size name; do echo "$((16#$start)) $((16#$size)) $name"; done <"$1" | sort -n)
}

touch "$work/start"
sleep 1 # file times: the maps made from now on are newer
if run DACCE_PERF_MAP=1 -- 0.3 0 --fork; then
	pid=$(cat "$work/pid")
	pids+=("$pid")
	map=/tmp/perf-$pid.map
	if [ ! -s "$map" ]; then
		fail "map written ($map missing or empty)"
	elif ! why=$(well_formed "$map"); then
		fail "map well formed ($why)"
	elif ! grep -q ' dacce:call@main+0x' "$map" || ! grep -q ' dacce:tail_call_return$' "$map"; then
		fail "map names main's call sites and the tail stub ($(head -n 3 "$map" | tr '\n' ' '))"
	else
		pass "map written and well formed ($(wc -l <"$map") pieces)"
	fi
	# The fork child: its own file (the one other map made during the run), starting with
	# the parent's names at the fork.
	child=
	for f in $(find /tmp -maxdepth 1 -name 'perf-*.map' -newer "$work/start" 2>/dev/null); do
		p=${f#/tmp/perf-}
		p=${p%.map}
		[ "$p" != "$pid" ] && child=$p
	done
	if [ -z "$child" ]; then
		fail "fork child's map (no other map made during the run)"
	else
		pids+=("$child")
		cmap=/tmp/perf-$child.map
		if [ -s "$cmap" ] && well_formed "$cmap" >/dev/null &&
			[ "$(head -n 1 "$cmap")" = "$(head -n 1 "$map")" ]; then
			pass "fork child's map starts with the parent's names"
		else
			fail "fork child's map ($cmap: $(head -n 2 "$cmap" 2>&1 | tr '\n' ' '))"
		fi
	fi
else
	fail "workload under the runtime with the map on (status $?, $(tail -n 2 "$work/out" | tr '\n' ' '))"
fi

# Off by default: no file.
if run -- 0.1 0; then
	pid=$(cat "$work/pid")
	pids+=("$pid")
	if [ -e "/tmp/perf-$pid.map" ]; then
		fail "no map unless asked (/tmp/perf-$pid.map exists)"
	else
		pass "no map unless asked"
	fi
else
	fail "workload under the runtime (status $?)"
fi

# perf names trampoline return addresses in frame-pointer call graphs.
if [ ! -x /usr/bin/perf ]; then
	fail "perf names generated code (/usr/bin/perf missing: Debian package linux-perf)"
elif ! /usr/bin/perf record -q -e cpu-clock:u -F 2000 --call-graph fp --no-buildid-cache \
	-o "$work/perf.data" -- sh -c 'echo $$ >"$0"; exec "$@"' "$work/pid" env DACCE_PERF_MAP=1 \
	LD_PRELOAD="$lib" "$workload" 1 0 >"$work/out" 2>&1; then
	fail "perf record under the runtime ($(tail -n 2 "$work/out" | tr '\n' ' '))"
else
	pids+=("$(cat "$work/pid")")
	/usr/bin/perf script -i "$work/perf.data" -F ip,sym 2>/dev/null >"$work/script"
	named=$(grep -c ' dacce:call@' "$work/script")
	if [ "$named" -gt 0 ]; then
		pass "perf names trampolines in call graphs ($named frames)"
	else
		fail "perf names trampolines in call graphs (none in $(wc -l <"$work/script") lines)"
	fi
fi

# The map's descriptor closed by the program (closefrom), its number reused for the program's files.
if [ -n "$closefds" ]; then
	sh -c 'echo $$ >"$0"; exec "$@"' "$work/pid" env DACCE_PERF_MAP=1 LD_PRELOAD="$lib" \
		"$closefds" >"$work/out" 2>&1
	status=$?
	pid=$(cat "$work/pid")
	pids+=("$pid")
	if [ $status -ne 0 ] || ! grep -q '^files intact' "$work/out"; then
		fail "closefrom under the perf map (status $status: $(grep -v ': ' "$work/out" | head -n 2 | tr '\n' ' '))"
	elif ! grep -q ' dacce:[a-z_]*@after_close+' "/tmp/perf-$pid.map" 2>/dev/null; then
		fail "closefrom under the perf map: code made after the close is not named"
	else
		pass "closefrom under the perf map: the program's files intact, the map still written"
	fi
fi

echo "perfmap: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
