#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scans and function tables kept between runs (runtime/scan_cache.h), read from DACCE_LOG's
# line "pid N: F scans read from the cache, M made; T function tables read from it": a first
# run makes its scans and writes them in a private directory, a second reads them all and
# makes none, and its function table too, and both print what the program prints
# natively (calls.c's backtraces); a damaged record misses and a damaged header makes the
# whole file miss, and the file is written again; a
# directory others may write to, and DACCE_CACHE=0, keep nothing; the program's libraries get
# files of their own (sqlite3); a fork child writes what it made; a process killed with
# SIGKILL has written what it made once it ran past DACCE_CACHE_SAVE_S; past DACCE_CACHE_MAX_MB
# the least recently used files go.  Ends with "scancache: N passed, M failed".
#
# usage: tests/scan-cache.sh BUILD_DIR LIBDACCE   (BUILD_DIR/programs/calls-O2 from run-programs.sh)
set -u
build=$1
lib=$(readlink -f "$2")
program=$build/programs/calls-O2
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$work/cache

# run DIR CMD...: runs CMD under the runtime with the cache in DIR; stdout to $work/out,
# the cache line (found made) to $work/counts.
run() {
	local dir=$1
	shift
	DACCE_CACHE_DIR=$dir DACCE_LOG=1 LD_PRELOAD="$lib" "$@" >"$work/out" 2>"$work/err"
	sed -n 's/^dacce: pid [0-9]*: \([0-9]*\) scans read from the cache, \([0-9]*\) made; \([0-9]*\) function tables read from it$/\1 \2 \3/p' \
		"$work/err" | head -n 1 >"$work/counts"
}

if [ ! -x "$program" ]; then
	fail "no $program (run-programs.sh builds it)"
	echo "scancache: $passed passed, $failed failed"
	exit 1
fi
"$program" >"$work/native"

run "$cache" "$program"
read -r found made tables <"$work/counts" || found="" made="" tables=""
files=$(find "$cache" -name '*.scans' -perm 0600 2>/dev/null | wc -l)
tables_kept=$(find "$cache" -name '*.funcs' -perm 0600 2>/dev/null | wc -l)
if [ "$found" = 0 ] && [ "${made:-0}" -gt 0 ] && [ "$files" -ge 1 ] && [ "$tables" = 0 ] &&
	cmp -s "$work/out" "$work/native"; then
	pass "a first run makes its scans and keeps them ($made, $files file, $tables_kept function tables)"
else
	fail "first run: found '$found' made '$made' tables '$tables', $files files, output $(cmp -s "$work/out" "$work/native" && echo same || echo differs)"
fi
first_made=${made:-0}

run "$cache" "$program"
read -r found made tables <"$work/counts" || found="" made="" tables=""
if [ "$found" = "$first_made" ] && [ "$made" = 0 ] && [ "${tables:-0}" -ge 1 ] &&
	cmp -s "$work/out" "$work/native"; then
	pass "a second run reads them all and makes none, and reads its function table"
else
	fail "second run: found '$found' made '$made' tables '$tables' (first made $first_made), output $(cmp -s "$work/out" "$work/native" && echo same || echo differs)"
fi

# Damaged: a record's bytes (the end of the file) miss alone, the header makes the whole file
# miss; either way the run makes what it missed and writes the file again whole.
damage() {
	local file size
	file=$(find "$cache" -name '*.scans' | head -n 1)
	size=$(stat -c %s "$file")
	printf 'garbage!' | dd of="$file" bs=1 seek=$(($1 < 0 ? size + $1 : $1)) conv=notrunc status=none
}
for where in -12 8; do
	damage "$where"
	run "$cache" "$program"
	read -r found made tables <"$work/counts" || found="" made="" tables=""
	if [ -n "$found" ] && [ $((found + made)) = "$first_made" ] && [ "$made" -ge 1 ] &&
		{ [ "$where" -lt 0 ] || [ "$found" = 0 ]; } && cmp -s "$work/out" "$work/native"; then
		run "$cache" "$program"
		read -r found made tables <"$work/counts" || found="" made="" tables=""
		if [ "$found" = "$first_made" ] && [ "$made" = 0 ]; then
			pass "damaged at $where: what is damaged is made again, and written"
		else
			fail "damaged at $where: found '$found' made '$made' in the run after"
		fi
	else
		fail "damaged at $where: found '$found' made '$made', output $(cmp -s "$work/out" "$work/native" && echo same || echo differs)"
	fi
done

# Not private: nothing read or written, and the log says why.
mkdir -m 0777 "$work/shared"
chmod 0777 "$work/shared"
run "$work/shared" "$program"
if [ ! -s "$work/counts" ] && grep -q "scans are not kept: no private cache directory" "$work/err" &&
	[ -z "$(ls -A "$work/shared")" ] && cmp -s "$work/out" "$work/native"; then
	pass "a directory others may write to is not used"
else
	fail "shared directory: counts '$(cat "$work/counts")', files: $(ls -A "$work/shared" | tr '\n' ' ')"
fi
DACCE_CACHE=0 run "$work/off" "$program"
if [ ! -s "$work/counts" ] && [ ! -e "$work/off" ]; then
	pass "DACCE_CACHE=0 keeps nothing"
else
	fail "DACCE_CACHE=0: counts '$(cat "$work/counts")'"
fi

# Libraries: sqlite3's run keeps a file for libsqlite3 too (two files at least).
echo 'select 1;' | run "$work/sqlite" sqlite3 :memory:
n=$(find "$work/sqlite" -name '*.scans' | wc -l)
if [ "$n" -ge 2 ] && [ "$(cat "$work/out")" = 1 ]; then
	pass "sqlite3 and its libraries get files of their own ($n)"
else
	fail "sqlite3: $n files, output '$(cat "$work/out")'"
fi

# A fork child that makes scans writes them: forkexec.c's child runs code its parent never did.
forker=$build/programs/forkexec-O2
if [ -x "$forker" ]; then
	run "$work/fork" "$forker"
	lines=$(grep -c 'scans read from the cache' "$work/err")
	run "$work/fork" "$forker"
	made_again=$(sed -n 's/.* scans read from the cache, \([0-9]*\) made;.*/\1/p' "$work/err" |
		awk '{ s += $1 } END { print s + 0 }')
	if [ "$lines" -ge 2 ] && [ "$made_again" = 0 ]; then
		pass "what parents and children made is all read back"
	else
		fail "fork: $lines cache lines in the first run, $made_again made in the second"
	fi
else
	fail "no $forker"
fi

# A process killed before it can exit (SIGKILL) has written what it made by then when it ran
# past DACCE_CACHE_SAVE_S, and not before.
killed_after() {
	DACCE_CACHE_DIR=$1 DACCE_CACHE_SAVE_S=$2 LD_PRELOAD="$lib" sleep 30 &
	local pid=$!
	sleep 2.5
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
}
killed_after "$work/killed" 1
killed_after "$work/killed-early" 60
if [ -s "$(find "$work/killed" -name '*.scans' | head -n 1)" ] &&
	[ -z "$(find "$work/killed-early" -name '*.scans' 2>/dev/null)" ]; then
	pass "a long run writes what it made every DACCE_CACHE_SAVE_S seconds"
else
	fail "killed runs: files $(find "$work/killed" "$work/killed-early" -name '*.scans' 2>/dev/null | tr '\n' ' ')"
fi

# Pruning: 3 MiB of old files against a bound of 2 MiB; a run that writes removes the oldest.
mkdir -m 0700 "$work/prune"
for i in 1 2 3; do
	head -c $((1024 * 1024)) /dev/zero >"$work/prune/old$i.scans"
	touch -d "$((10 - i)) days ago" "$work/prune/old$i.scans"
done
DACCE_CACHE_MAX_MB=2 run "$work/prune" "$program"
left=$(ls "$work/prune" | tr '\n' ' ')
if [ ! -e "$work/prune/old1.scans" ] && [ ! -e "$work/prune/old2.scans" ] &&
	[ -e "$work/prune/old3.scans" ] && [ "$(find "$work/prune" -name '*.scans' | wc -l)" -eq 2 ]; then
	pass "past DACCE_CACHE_MAX_MB the oldest files go"
else
	fail "pruning left: $left"
fi

echo "scancache: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
