/* SPDX-License-Identifier: MIT */
/*
 * Trampolines built for the next epoch before the world stops.  Building
 * the code of a new encoding took most of each pause (CPython: 2 to 5 ms of
 * 3 to 8); the policy thread now builds it beforehand, a few hundred sites
 * per hold of the runtime lock, so program threads keep running and making
 * first calls in between.  With the world stopped, the epoch's plan takes a
 * prebuilt trampoline only if it replaces the same code for the same edge,
 * target and operation; a site that changed in between gets new code then.
 * Entries are keyed by the entry of the code they replace, which is never
 * reused (code of past epochs is not reclaimed).  Callers hold rt.lock.
 */
#ifndef DACCE_RT_PREBUILT_H
#define DACCE_RT_PREBUILT_H

#include <stdbool.h>
#include <stdint.h>

#include "ops.h"

struct dacce_prebuilt {
	uint32_t edge;
	uintptr_t target;
	struct dacce_rt_op op;
	uintptr_t entry, after; /* the new code, as build_trampoline returns them */
};

int dacce_prebuilt_put(uintptr_t replaces, const struct dacce_prebuilt *code);
/* The code built to replace `replaces` for exactly this edge, target and op; false if none. */
bool dacce_prebuilt_take(uintptr_t replaces, uint32_t edge, uintptr_t target,
			 const struct dacce_rt_op *op, struct dacce_prebuilt *out);
size_t dacce_prebuilt_count(void);
/* Forgets every entry (the code stays in the cache, unused). */
void dacce_prebuilt_drop(void);

#endif
