#!/usr/bin/env bash
# Cross-validation on the integration corpus: each program of tests/programs, as
# tests/run-programs.sh built it, runs under `dacce launch --validate` sampling fast; every
# sample whose decoded context and unwound stack are both complete must agree
# (mismatched=0, exact = verified).  Needs root (BPF), as tests/e2e.sh.
# Ends with "validate-programs: N passed, M failed".
#
# Usage: validate-programs.sh DACCE BUILD_DIR [VARIANT...]   (default variants: O2 O0)
# VALIDATE_SHOW=1 prints each program's validate lines.
# Programs listed in tests/validate-known.txt (a known runtime limitation) run and print
# their numbers as KNOWN, counting neither as passed nor as failed.
set -u
dacce=$(readlink -f "$1")
build=$2
shift 2
variants=("$@")
[ ${#variants[@]} -eq 0 ] && variants=(O2 O0)
out=$(cd "$build" && pwd)/programs
work=$(mktemp -d /tmp/dacce-validate.XXXXXX)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
known=0
samples=0
verified=0
exact=0
if [ "$(id -u)" != 0 ]; then
	echo "validate-programs: needs root for BPF (run as root, as CI does)"
	echo "validate-programs: 0 passed, 1 failed"
	exit 1
fi
for f in tests/programs/*.c tests/programs/*.cpp; do
	case $f in *.lib.c | *.lib.cpp) continue ;; esac
	prog=$(basename "${f%.*}")
	why_known=$(awk -v p="$prog" '$1 == p { $1 = ""; sub(/^ +/, ""); print; exit }' tests/validate-known.txt)
	for variant in "${variants[@]}"; do
		bin=$out/$prog-$variant
		if [ ! -x "$bin" ]; then
			echo "FAIL $prog-$variant: not built (run tests/run-programs.sh first)"
			failed=$((failed + 1))
			continue
		fi
		# 20 kHz: the programs run for tenths of a second.  The controller's epochs stay on.
		# One retry, reported (as tests/run-programs.sh does): two runs with a mismatch fail.
		for attempt in 1 2; do
			(cd "$(dirname "$bin")" && timeout -k 10 300 env DACCE_LOG= "$dacce" launch -q \
				--validate -F 20011 -o "$work/$prog-$variant.db" -- "$bin") >"$work/out" 2>&1
			line=$(grep '^validate: samples=' "$work/out")
			if [ "$attempt" = 1 ] && [ -z "$why_known" ] && [ -n "$line" ] && ! grep -q ' mismatched=0 ' <<<"$line"; then
				echo "RETRY $prog-$variant: $line"
				sed -n '/^validate: mismatch/,$p' "$work/out" | head -n 30
				continue
			fi
			break
		done
		if [ -z "$line" ]; then
			echo "FAIL $prog-$variant: no validation ($(grep -v '^validate' "$work/out" | tail -n 2 | tr '\n' ' '))"
			failed=$((failed + 1))
			continue
		fi
		[ -n "${VALIDATE_SHOW:-}" ] && grep '^validate' "$work/out" | sed "s/^/$prog-$variant: /"
		if [ -n "$why_known" ]; then
			echo "KNOWN $prog-$variant: $line ($why_known)"
			known=$((known + 1))
			continue
		fi
		read -r s v e m <<<"$(sed -n 's/.*samples=\([0-9]*\) verified=\([0-9]*\) exact=\([0-9]*\) mismatched=\([0-9]*\).*/\1 \2 \3 \4/p' <<<"$line")"
		samples=$((samples + s))
		verified=$((verified + v))
		exact=$((exact + e))
		if [ "$m" = 0 ] && [ "$e" = "$v" ]; then
			passed=$((passed + 1))
		else
			echo "FAIL $prog-$variant: $line"
			sed -n '/^validate: mismatch/,$p' "$work/out" | head -n 60
			failed=$((failed + 1))
		fi
	done
done
echo "validate-programs: corpus: samples=$samples verified=$verified exact=$exact" \
	"(without $known known runs: tests/validate-known.txt)"
# A corpus that verified nothing proved nothing.
if [ "$verified" -lt 1000 ]; then
	echo "FAIL: only $verified samples verified over the corpus"
	failed=$((failed + 1))
fi
echo "validate-programs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
