// SPDX-License-Identifier: MIT
/*
 * vm-tests self-test loader: loads probe.bpf.c, attaches each program to this process, makes
 * each fire once (a call, a USDT probe, a fork, some CPU time) and checks what came back.
 * Prints one "ok"/"FAIL" line per feature; exits 0 only if all passed.  Must run as root.
 */
#include <asm/prctl.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "probe.h"
#include "probe.skel.h"

#define MAX_CPUS 64

static struct {
	int uprobe_events, usdt_events;
	__u64 uprobe_value, usdt_value, fsbase;
	int stack_bytes;
	__u64 stack0;
} seen;

static int failures;

static void check(int ok, const char *what, const char *detail)
{
	printf("%s %s: %s\n", ok ? "ok  " : "FAIL", what, detail);
	if (!ok)
		failures++;
}

/* The uprobe's target: reads *cookie through bpf_probe_read_user. */
__attribute__((noinline)) int probe_target(const __u64 *cookie);
__attribute__((noinline)) int probe_target(const __u64 *cookie)
{
	__asm__ volatile("" : : "r"(cookie) : "memory");
	return (int)(*cookie & 1);
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct probe_event *ev = data;

	(void)ctx;
	if (size < sizeof(*ev))
		return 0;
	if (ev->kind == PROBE_EV_UPROBE) {
		seen.uprobe_events++;
		seen.uprobe_value = ev->value;
		seen.fsbase = ev->fsbase;
		seen.stack_bytes = ev->stack_bytes;
		seen.stack0 = ev->stack_bytes > 0 ? ev->stack[0] : 0;
	} else if (ev->kind == PROBE_EV_USDT) {
		seen.usdt_events++;
		seen.usdt_value = ev->value;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct probe_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct bpf_link *links[MAX_CPUS] = { 0 };
	int perf_fds[MAX_CPUS];
	int ncpus = 0, samples_attached = 0;
	__u64 cookie = 0xdacce, my_fsbase = 0, value;
	__u32 key;
	char exe[4096], detail[256];
	ssize_t n;
	pid_t child;
	LIBBPF_OPTS(bpf_uprobe_opts, uopts, .func_name = "probe_target");

	setvbuf(stdout, NULL, _IOLBF, 0);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		perror("probe: readlink /proc/self/exe");
		return 1;
	}
	exe[n] = '\0';

	skel = probe_bpf__open();
	if (!skel) {
		fprintf(stderr, "probe: cannot open the BPF object: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->target_tgid = getpid();
	if (probe_bpf__load(skel)) {
		check(0, "load", "the verifier refused the programs (see libbpf's log above)");
		goto cleanup;
	}
	check(1, "load", "uprobe, usdt, perf_event and tracepoint programs, ring buffer map");

	skel->links.on_target = bpf_program__attach_uprobe_opts(skel->progs.on_target, getpid(),
								 exe, 0, &uopts);
	check(skel->links.on_target != NULL, "attach uprobe", "probe_target() in this program");
	skel->links.on_usdt = bpf_program__attach_usdt(skel->progs.on_usdt, getpid(), exe,
						       "dacce_vm", "probe", NULL);
	check(skel->links.on_usdt != NULL, "attach usdt", "dacce_vm:probe in this program");
	skel->links.on_fork = bpf_program__attach(skel->progs.on_fork);
	check(skel->links.on_fork != NULL, "attach tracepoint", "sched/sched_process_fork");

	ncpus = libbpf_num_possible_cpus();
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(attr),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.sample_freq = 999,
			.freq = 1,
		};

		perf_fds[cpu] = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (perf_fds[cpu] < 0)
			continue; /* an offline CPU */
		links[cpu] = bpf_program__attach_perf_event(skel->progs.on_sample, perf_fds[cpu]);
		if (links[cpu])
			samples_attached++;
	}
	check(samples_attached > 0, "attach perf_event", "cpu-clock sampling at 999 Hz on each CPU");

	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, NULL, NULL);
	check(rb != NULL, "ring buffer", "opened for polling");
	if (failures)
		goto cleanup;

	/* Make each program fire. */
	probe_target(&cookie);
	value = 0x5eed;
	DTRACE_PROBE1(dacce_vm, probe, value);
	child = fork();
	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
	for (double end = now() + 0.3; now() < end;)
		; /* CPU time for the sampler */
	ring_buffer__poll(rb, 100);
	syscall(SYS_arch_prctl, ARCH_GET_FS, &my_fsbase);

	snprintf(detail, sizeof(detail), "%d event(s), read *cookie = %#llx", seen.uprobe_events,
		 (unsigned long long)seen.uprobe_value);
	check(seen.uprobe_events == 1 && seen.uprobe_value == cookie, "uprobe + bpf_probe_read_user",
	      detail);
	snprintf(detail, sizeof(detail), "%d frame(s), top %#llx, probe_target at %p",
		 seen.stack_bytes / 8, (unsigned long long)seen.stack0, (void *)probe_target);
	check(seen.stack_bytes >= 8 && seen.stack0 == (__u64)(unsigned long)probe_target,
	      "bpf_get_stack(BPF_F_USER_STACK)", detail);
	snprintf(detail, sizeof(detail), "read %#llx, arch_prctl says %#llx",
		 (unsigned long long)seen.fsbase, (unsigned long long)my_fsbase);
	check(seen.fsbase == my_fsbase && my_fsbase != 0, "CO-RE task->thread.fsbase", detail);
	snprintf(detail, sizeof(detail), "%d event(s), argument %#llx", seen.usdt_events,
		 (unsigned long long)seen.usdt_value);
	check(seen.usdt_events == 1 && seen.usdt_value == 0x5eed, "usdt argument", detail);

	key = PROBE_CNT_SAMPLES;
	value = 0;
	bpf_map__lookup_elem(skel->maps.counters, &key, sizeof(key), &value, sizeof(value), 0);
	snprintf(detail, sizeof(detail), "%llu sample(s) in 0.3 s of CPU time", (unsigned long long)value);
	check(value > 0, "perf_event cpu-clock samples", detail);
	key = PROBE_CNT_FORKS;
	value = 0;
	bpf_map__lookup_elem(skel->maps.counters, &key, sizeof(key), &value, sizeof(value), 0);
	snprintf(detail, sizeof(detail), "%llu fork(s) seen", (unsigned long long)value);
	check(value == 1, "tracepoint sched_process_fork", detail);

cleanup:
	ring_buffer__free(rb);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		bpf_link__destroy(links[cpu]);
		if (perf_fds[cpu] >= 0)
			close(perf_fds[cpu]);
	}
	probe_bpf__destroy(skel);
	printf("probe: %s\n", failures ? "FAILED" : "all kernel features work");
	return failures ? 1 : 0;
}
