/* SPDX-License-Identifier: MIT */
/*
 * Sampling events named the way perf names them, encoded by libpfm4, and
 * opened on every CPU with a BPF program attached to each.
 */
#ifndef DACCE_USER_PMU_H
#define DACCE_USER_PMU_H

#include <stddef.h>
#include <stdint.h>

struct bpf_link;
struct bpf_program;

struct dacce_sampler {
	int n_cpus;
	int *fds;		 /* one perf event per CPU, -1 where the CPU is offline */
	struct bpf_link **links; /* the BPF program attached to each */
	char event[128];	 /* the fully qualified name libpfm4 gave */
	uint64_t period;	 /* event units per sample, when fixed */
	uint64_t freq;		 /* samples per second, when frequency-based */
	int is_time;		 /* the event counts nanoseconds (software clocks) */
};

/*
 * Opens event (a libpfm4/perf name such as "cpu-clock", "task-clock",
 * "cycles", "instructions:u") on every CPU, sampling every period events,
 * or freq times a second when period is 0, and attaches prog to each.
 * Returns 0 or a negative errno with a one-line reason in why (e.g. the
 * machine has no hardware PMU for the event).
 */
int dacce_sampler_open(struct dacce_sampler *s, const char *event, uint64_t period, uint64_t freq,
		       struct bpf_program *prog, char *why, size_t why_len);

/* Stops and frees everything; safe on a zeroed or half-opened sampler. */
void dacce_sampler_close(struct dacce_sampler *s);

#endif
