// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm-tests self-test: the kernel features the project's BPF side relies on (DESIGN.md section 7),
 * each reduced to one program.  Loaded by probe.c inside the guest.
 *   uprobe     on probe_target(): bpf_probe_read_user, bpf_get_stack(BPF_F_USER_STACK), a CO-RE
 *              read of task->thread.fsbase, out through a ring buffer
 *   usdt       on a <sys/sdt.h> probe, its argument out through the ring buffer
 *   perf_event on a cpu-clock sampling event: counts samples
 *   tracepoint sched/sched_process_fork: counts forks of the loader
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "probe.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile __u32 target_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROBE_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static void count(__u32 which)
{
	__u64 *value = bpf_map_lookup_elem(&counters, &which);

	if (value)
		__sync_fetch_and_add(value, 1);
}

static int ours(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

SEC("uprobe")
int BPF_KPROBE(on_target, const __u64 *cookie)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct probe_event *ev;

	if (!ours())
		return 0;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev)
		return 0;
	ev->kind = PROBE_EV_UPROBE;
	if (bpf_probe_read_user(&ev->value, sizeof(ev->value), cookie))
		ev->value = 0;
	ev->fsbase = BPF_CORE_READ(task, thread.fsbase);
	ev->stack_bytes = bpf_get_stack(ctx, ev->stack, sizeof(ev->stack), BPF_F_USER_STACK);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_usdt, __u64 value)
{
	struct probe_event *ev;

	if (!ours())
		return 0;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev)
		return 0;
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = PROBE_EV_USDT;
	ev->value = value;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	if (ours())
		count(PROBE_CNT_SAMPLES);
	return 0;
}

SEC("tp/sched/sched_process_fork")
int on_fork(struct trace_event_raw_sched_process_fork *ctx)
{
	if (ours())
		count(PROBE_CNT_FORKS);
	return 0;
}
