/* SPDX-License-Identifier: MIT */
/*
 * The controller's re-encoding policy (the paper's triggers, section 4):
 * for each followed process, from what the capture sees,
 *  - new edges: edges found since the last epoch, all of them pushed;
 *  - ccStack in use: the share of recent samples whose ccStack holds a
 *    pushed edge that could be encoded;
 *  - hot paths changed: the hottest such edges differ from last time;
 *  - a hot back edge: a back edge of the last epoch (not a call to itself)
 *    on the ccStack in that share of samples, asked for once.
 * When one fires, it asks the runtime for an epoch, sending the sampled
 * frequencies of those edges as hints.
 */
#ifndef DACCE_USER_POLICY_H
#define DACCE_USER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "control.h"

struct dacce_policy;

struct dacce_policy_settings {
	uint32_t new_edges;	     /* new encodable edges that call for an epoch */
	double pushed_share;	     /* share of samples with a pushed edge that calls for one */
	uint32_t min_samples;	     /* samples a share is judged on */
	uint64_t min_interval_ns;    /* between two requests to one process */
};

void dacce_policy_settings_default(struct dacce_policy_settings *s);

int dacce_policy_new(const struct dacce_policy_settings *s, struct dacce_policy **out);
void dacce_policy_free(struct dacce_policy *p); /* NULL-safe */

/* Feeds one ring-buffer record (the same ones the capture stores). */
void dacce_policy_record(struct dacce_policy *p, const void *data, size_t size);

/* Sends the requests that are due; now_ns on the CLOCK_MONOTONIC clock. */
void dacce_policy_tick(struct dacce_policy *p, struct dacce_control *ctl, uint64_t now_ns);

/*
 * Whether pid is due for an epoch at now_ns (what dacce_policy_tick asks
 * for, its connection aside): 1 and its hints, up to DACCE_CONTROL_MAX_HINTS
 * (edges found since the last epoch, hottest first, then back edges of the
 * last epoch met in samples), 0 when not, -ENOENT for a process it does
 * not know.
 */
int dacce_policy_due(const struct dacce_policy *p, uint32_t pid, uint64_t now_ns,
		     struct dacce_control_hint *hints, uint32_t *n_hints);

/* That request was sent: the policy waits for its epoch, and asks for a back edge once. */
void dacce_policy_requested(struct dacce_policy *p, uint32_t pid, uint64_t now_ns,
			    const struct dacce_control_hint *hints, uint32_t n_hints);

/* The runtime of pid answered a request (control.h's done callback). */
void dacce_policy_done(struct dacce_policy *p, uint32_t pid, int result, uint64_t epoch);

/* Requests sent so far. */
uint64_t dacce_policy_requests(const struct dacce_policy *p);

#endif
