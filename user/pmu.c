// SPDX-License-Identifier: MIT
/* Sampling events through libpfm4 (see pmu.h). */
#include "pmu.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

/* perf's names for software events, which libpfm4 spells "perf::..." . */
static const char *pfm_name(const char *event)
{
	static const struct {
		const char *perf, *pfm;
	} aliases[] = {
		{ "cpu-clock", "perf::cpu-clock" },
		{ "task-clock", "perf::task-clock" },
		{ "page-faults", "perf::page-faults" },
		{ "context-switches", "perf::context-switches" },
	};

	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strcmp(event, aliases[i].perf) == 0)
			return aliases[i].pfm;
	return event;
}

static int encode(const char *event, struct perf_event_attr *attr, char *fq, size_t fq_len,
		  char *why, size_t why_len)
{
	pfm_perf_encode_arg_t arg;
	char *fstr = NULL;
	int ret;

	ret = pfm_initialize();
	if (ret != PFM_SUCCESS) {
		snprintf(why, why_len, "cannot initialise libpfm4: %s", pfm_strerror(ret));
		return -ENODEV;
	}
	memset(&arg, 0, sizeof(arg));
	memset(attr, 0, sizeof(*attr));
	arg.attr = attr;
	arg.size = sizeof(arg);
	arg.fstr = &fstr;
	ret = pfm_get_os_event_encoding(pfm_name(event), PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (ret != PFM_SUCCESS) {
		snprintf(why, why_len, "unknown event '%s': %s", event, pfm_strerror(ret));
		return -EINVAL;
	}
	snprintf(fq, fq_len, "%s", fstr ? fstr : event);
	free(fstr);
	attr->size = sizeof(*attr);
	return 0;
}

int dacce_sampler_open(struct dacce_sampler *s, const char *event, uint64_t period, uint64_t freq,
		       struct bpf_program *prog, char *why, size_t why_len)
{
	struct perf_event_attr attr;
	int err, opened = 0;

	memset(s, 0, sizeof(*s));
	err = encode(event, &attr, s->event, sizeof(s->event), why, why_len);
	if (err)
		return err;
	s->is_time = attr.type == PERF_TYPE_SOFTWARE && (attr.config == PERF_COUNT_SW_CPU_CLOCK ||
							 attr.config == PERF_COUNT_SW_TASK_CLOCK);
	if (period) {
		attr.sample_period = period;
		attr.freq = 0;
	} else {
		attr.sample_freq = freq;
		attr.freq = 1;
	}
	s->period = period;
	s->freq = freq;
	/* The BPF program reads user state itself: the kernel need not record anything. */
	attr.sample_type = 0;
	attr.exclude_kernel = 0;
	attr.exclude_hv = 1;
	s->n_cpus = libbpf_num_possible_cpus();
	if (s->n_cpus <= 0) {
		snprintf(why, why_len, "cannot count CPUs");
		return -ENODEV;
	}
	s->fds = calloc((size_t)s->n_cpus, sizeof(*s->fds));
	s->links = calloc((size_t)s->n_cpus, sizeof(*s->links));
	if (!s->fds || !s->links) {
		snprintf(why, why_len, "out of memory");
		err = -ENOMEM;
		goto fail;
	}
	for (int cpu = 0; cpu < s->n_cpus; cpu++) {
		s->fds[cpu] = perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (s->fds[cpu] < 0) {
			err = -errno;
			if (err == -ENODEV)
				continue; /* offline CPU */
			if (err == -ENOENT || err == -EOPNOTSUPP)
				snprintf(why, why_len,
					 "event '%s' is not supported on this machine (no hardware "
					 "PMU?); try -e cpu-clock", event);
			else if (err == -EACCES || err == -EPERM)
				snprintf(why, why_len,
					 "no permission to sample '%s' on all CPUs: run as root", event);
			else
				snprintf(why, why_len, "cannot open event '%s' on CPU %d: %s", event,
					 cpu, strerror(-err));
			goto fail;
		}
		s->links[cpu] = bpf_program__attach_perf_event(prog, s->fds[cpu]);
		if (!s->links[cpu]) {
			err = -errno;
			snprintf(why, why_len, "cannot attach the sampler to CPU %d: %s", cpu,
				 strerror(-err));
			goto fail;
		}
		opened++;
	}
	if (!opened) {
		snprintf(why, why_len, "event '%s' could not be opened on any CPU", event);
		err = -ENODEV;
		goto fail;
	}
	return 0;
fail:
	dacce_sampler_close(s);
	return err;
}

void dacce_sampler_close(struct dacce_sampler *s)
{
	if (!s)
		return;
	for (int cpu = 0; cpu < s->n_cpus; cpu++) {
		if (s->links && s->links[cpu])
			bpf_link__destroy(s->links[cpu]);
		if (s->fds && s->fds[cpu] > 0)
			close(s->fds[cpu]);
	}
	free(s->links);
	free(s->fds);
	s->links = NULL;
	s->fds = NULL;
	s->n_cpus = 0;
}
