/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* Shared by probe.bpf.c and probe.c (vm-tests self-test). */
#ifndef DACCE_VM_PROBE_H
#define DACCE_VM_PROBE_H

#define PROBE_STACK_DEPTH 32

enum probe_event_kind {
	PROBE_EV_UPROBE = 1,
	PROBE_EV_USDT = 2,
};

enum probe_counter {
	PROBE_CNT_SAMPLES,
	PROBE_CNT_FORKS,
	PROBE_CNT_MAX,
};

struct probe_event {
	__u32 kind;
	__s32 stack_bytes;
	__u64 value;
	__u64 fsbase;
	__u64 stack[PROBE_STACK_DEPTH];
};

#endif
