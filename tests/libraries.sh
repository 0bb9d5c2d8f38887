#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Which libraries the runtime instruments (runtime/libraries.h), read from DACCE_LOG's lines
# "instrumenting library PATH": under sqlite3, libsqlite3 and libreadline are, while libc, libm
# (glibc's) and libz (a dependency of the runtime itself, through libelf) are not, nor are
# jemalloc and tcmalloc preloaded (they replace libc's allocator); with DACCE_LIBS=0 none is.  libcalls.c's library (run-programs.sh builds it, linked at start)
# with DACCE_LIBS=0 runs uninstrumented: each of its probes must then equal the native line
# or read "partial", never another context, and those through the library must be partial.
# Ends with "libraries: N passed, M failed".
#
# usage: tests/libraries.sh BUILD_DIR LIBDACCE   (BUILD_DIR/programs/libcalls-O2 from run-programs.sh)
set -u
build=$1
lib=$(readlink -f "$2")
program=$build/programs/libcalls-O2
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

# The libraries a run of "$@" instruments, one file name a line, sorted.
instrumented() {
	echo 'select 1;' | DACCE_LOG=1 LD_PRELOAD="$lib" "$@" 2>&1 >/dev/null |
		sed -n 's|^dacce: instrumenting library .*/||p' | sed 's/ (.*//' | sort
}

libs=$(instrumented sqlite3 :memory:)
missing=""
for want in libsqlite3.so.0 libreadline.so.8; do
	printf '%s\n' "$libs" | grep -qx "$want" || missing="$missing $want"
done
if [ -z "$missing" ]; then
	pass "sqlite3's own libraries are instrumented"
else
	fail "not instrumented under sqlite3:$missing (got: $(echo $libs))"
fi
wrong=$(printf '%s\n' "$libs" | grep -E '^(libc|libm|libz|libelf|libdw|libZydis|ld-linux)' | tr '\n' ' ')
if [ -z "$wrong" ]; then
	pass "glibc's libraries and the runtime's dependencies are left alone"
else
	fail "instrumented though they must be left alone: $wrong"
fi
# Allocators that replace libc's are left alone (libraries.c), preloaded or not: the runtime's
# own work calls them.  sqlite3 still gets its libraries instrumented beside them.
for allocator in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
	/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
	name=$(basename "$allocator")
	if [ ! -f "$allocator" ]; then
		fail "$name is not installed (make deps installs it)"
		continue
	fi
	libs=$(instrumented env LD_PRELOAD="$allocator $lib" sqlite3 :memory:)
	if printf '%s\n' "$libs" | grep -qx "$name"; then
		fail "$name replaces libc's allocator but is instrumented"
	elif ! printf '%s\n' "$libs" | grep -qx libsqlite3.so.0; then
		fail "under $name, sqlite3's libraries are not instrumented (got: $(echo $libs))"
	else
		pass "$name, which replaces libc's allocator, is left alone"
	fi
done
libs=$(DACCE_LIBS=0 instrumented sqlite3 :memory:)
if [ -z "$libs" ]; then
	pass "DACCE_LIBS=0 instruments the program alone"
else
	fail "DACCE_LIBS=0 still instruments: $(echo $libs)"
fi

if [ ! -x "$program" ]; then
	fail "no $program (run-programs.sh builds it)"
else
	"$program" >"$program.libs-native" 2>&1
	DACCE_LIBS=0 LD_PRELOAD="$lib" "$program" >"$program.libs-off" 2>&1
	# Line by line, in order (the program's probes come in a fixed order).
	bad=$(paste -d '\n' "$program.libs-native" "$program.libs-off" | paste - - -d '\t' |
		awk -F '\t' '{ split($1, n, ": "); split($2, d, ": ");
			if (n[1] != d[1] || ($1 != $2 && d[2] != "partial")) print NR ": " $2 }' | head -n 3)
	partial=$(grep -c ': partial$' "$program.libs-off")
	if [ "$(wc -l <"$program.libs-native")" -ne "$(wc -l <"$program.libs-off")" ]; then
		fail "DACCE_LIBS=0: the run printed other lines than natively"
	elif [ -n "$bad" ]; then
		fail "DACCE_LIBS=0: a context neither native nor partial: $bad"
	elif [ "$partial" -eq 0 ]; then
		fail "DACCE_LIBS=0: no context through the library read partial (was it instrumented?)"
	else
		pass "DACCE_LIBS=0: the library's contexts read partial, never wrong ($partial lines)"
	fi
fi

echo "libraries: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
