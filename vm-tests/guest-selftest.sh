#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (vm-tests/selftest.sh): the guest kernel and user space are what the
# project's tests expect.  usage: guest-selftest.sh PROBE_BINARY
set -uo pipefail

PROBE=${1:?usage: guest-selftest.sh PROBE_BINARY}
passed=0
failed=0

check() { # check NAME COMMAND...: passes when COMMAND exits 0
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name"
		[[ -z $out ]] || printf '     %s\n' "${out//$'\n'/$'\n     '}"
		failed=$((failed + 1))
	fi
}

is_61() { [[ $(uname -r) == 6.1.* ]]; }
mounted() { grep -q " $1 $2 " /proc/mounts; }
sqlite_runs() { [[ $(sqlite3 :memory: 'select 40 + 2') == 42 ]]; }
btf_parses() {
	bpftool btf dump file /sys/kernel/btf/vmlinux format c >/tmp/vmlinux.h &&
		grep -q '^struct task_struct {' /tmp/vmlinux.h
}

echo "guest: $(uname -r), $(nproc) CPUs"
check "kernel is 6.1 ($(uname -r))" is_61
check "/sys/kernel/btf/vmlinux" test -s /sys/kernel/btf/vmlinux
T=/sys/kernel/tracing
check "tracefs with sched_process_fork and uprobe_events" \
	test -e $T/events/sched/sched_process_fork/id -a -e $T/uprobe_events
check "debugfs mounted" mounted /sys/kernel/debug debugfs
check "bpffs mounted" mounted /sys/fs/bpf bpf
check "a dynamically linked host program runs (sqlite3)" sqlite_runs
check "bpftool reads the kernel's BTF" btf_parses
# The probe prints a line per feature: shown whether it passes or not.
if "$PROBE" >/tmp/probe.out 2>&1; then probe_ok=true; else probe_ok=false; fi
sed 's/^/     /' /tmp/probe.out
check "BPF: uprobe, usdt, perf_event cpu-clock, tracepoint, ring buffer, CO-RE" $probe_ok

echo "selftest: $passed passed, $failed failed"
((failed == 0))
