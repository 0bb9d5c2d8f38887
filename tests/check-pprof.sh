#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `go tool pprof` must read what `dacce report --format pprof` writes, and find
# in it the functions and counts of the fixed profile of tests/report_profiles.h
# (written by tests/report_sample.c).
#
# Usage (from the top of the tree): tests/check-pprof.sh [REPORT_SAMPLE]
# Without REPORT_SAMPLE, builds tests/report_sample.c by hand into a temporary
# directory.  Prints one line, "pprof: ok" or "pprof: <what failed>", and exits
# non-zero on failure.
set -u

tmp=$(mktemp -d) || { echo "pprof: cannot make a temporary directory"; exit 1; }
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "pprof: $*"
	exit 1
}

# The report formats (not user/report_cmd.c and the like: `dacce report` itself),
# the protobuf-c code generated from user/profile.proto, the driver.
report_sources="user/report_common.c user/report_forest.c user/report_top.c user/report_cct.c
	user/report_kccf.c user/report_folded.c user/report_pprof.c user/report_json.c"

build_sample() {
	local flags="-std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
		-Wmissing-prototypes -D_GNU_SOURCE -Idecoder -Iinclude -Iuser -Itests/support
		-I$tmp/gen -O2"
	mkdir -p "$tmp/gen" || return 1
	protoc-c --proto_path=user --c_out="$tmp/gen" user/profile.proto || return 1
	# shellcheck disable=SC2086
	gcc $flags $report_sources tests/report_sample.c "$tmp/gen/profile.pb-c.c" \
		-o "$tmp/report_sample" -lprotobuf-c -lz
}

command -v go >/dev/null || fail "go not found (Debian: apt-get install golang-go)"

sample=${1:-}
if [ -z "$sample" ]; then
	build_sample >"$tmp/build.log" 2>&1 ||
		fail "cannot build tests/report_sample.c: $(grep -m1 -i 'error' "$tmp/build.log")"
	sample=$tmp/report_sample
fi
"$sample" pprof >"$tmp/profile.pb.gz" || fail "$sample pprof failed"

# go wants a home, a build cache and a module path even to run a tool.
mkdir -p "$tmp/home"
pprof() {
	HOME=$tmp/home GOCACHE=$tmp/gocache GOPATH=$tmp/gopath GOFLAGS='' \
		go tool pprof "$@" "$tmp/profile.pb.gz" 2>"$tmp/stderr"
}

pprof -top -sample_index=samples >"$tmp/top.txt" ||
	fail "go tool pprof -top failed: $(head -n1 "$tmp/stderr")"

# "flat cum" of the -top line whose name (columns 6 on) is exactly $1.
counts_of() {
	awk -v want="$1" '{
		name = $6
		for (i = 7; i <= NF; i++)
			name = name " " $i
		if (name == want) {
			print $1, $4
			exit
		}
	}' "$tmp/top.txt"
}

# name flat cum: flat is where samples ended, cum where the function was on the stack.
while read -r flat cum name; do
	got=$(counts_of "$name")
	[ -n "$got" ] || fail "no line for '$name' in go tool pprof -top"
	[ "$got" = "$flat $cum" ] || fail "'$name': flat, cum are $got, expected $flat $cum"
done <<'EOF'
6 6 fib
6 6 memcpy
3 10 compute
1 7 work
1 1 on_alarm
2 2 libx.so+0x4321
0 23 main
0 7 start_workers
0 7 worker
0 2 deep
0 6 add (inline)
0 2 [truncated]
EOF

# pprof shortens C++ names (drops template arguments): match the start only.
awk '$6 == "void" && $7 ~ /^Table/ && $1 == 6 { found = 1 } END { exit !found }' \
	"$tmp/top.txt" || fail "no line for the C++ template function with 6 samples"
grep -q 'Total samples = 25 *$' "$tmp/top.txt" ||
	fail "expected 25 samples in total: $(grep -m1 'Total samples' "$tmp/top.txt")"

# The default sample type is the event: cpu time, 1 ms per sample.
pprof -top >"$tmp/cpu.txt" || fail "go tool pprof -top (cpu) failed: $(head -n1 "$tmp/stderr")"
grep -q '^Type: cpu$' "$tmp/cpu.txt" || fail "the default sample type is not cpu"
grep -Eq '^ +6ms +24\.00% .* fib$' "$tmp/cpu.txt" || fail "fib does not have 6ms of cpu"

pprof -raw >"$tmp/raw.txt" || fail "go tool pprof -raw failed: $(head -n1 "$tmp/stderr")"
grep -q '^PeriodType: cpu nanoseconds$' "$tmp/raw.txt" || fail "period type is not cpu/nanoseconds"
grep -q '^Period: 1000000$' "$tmp/raw.txt" || fail "period is not 1000000"
grep -q 'tid:\[102\]' "$tmp/raw.txt" || fail "no tid label 102"
grep -q 'comm:\[worker\]' "$tmp/raw.txt" || fail "no comm label worker"
grep -q '/usr/bin/app aabbccdd00112233' "$tmp/raw.txt" || fail "no mapping for /usr/bin/app with its build id"

echo "pprof: ok"
