/* SPDX-License-Identifier: MIT */
/*
 * Writes to program text gathered while the world is stopped (an epoch
 * pointing thousands of sites at new code), then written in runs: sorted by
 * address, nearby ones in one write with the bytes between read back as
 * they are.  One write per site cost CPython's epochs most of their pause.
 */
#ifndef DACCE_RT_PATCH_RUNS_H
#define DACCE_RT_PATCH_RUNS_H

#include <stddef.h>
#include <stdint.h>

#define DACCE_PATCH_RUN_BYTES 8 /* the most one gathered write holds */

struct dacce_patch_write {
	uintptr_t addr;
	uint32_t order; /* of gathering: of two writes to one byte the later wins */
	uint8_t len;
	uint8_t bytes[DACCE_PATCH_RUN_BYTES];
};

struct dacce_patch_runs {
	struct dacce_patch_write *writes;
	size_t n, cap;
};

/* Gathers len (1..DACCE_PATCH_RUN_BYTES) bytes for addr.  0, -EINVAL or -ENOMEM. */
int dacce_patch_runs_add(struct dacce_patch_runs *runs, uintptr_t addr, const void *bytes,
			 size_t len);

/*
 * Writes everything gathered through mem (dacce_patch_mem_open) and empties
 * runs.  Returns 0 or the first error (the writes before it are done).
 */
int dacce_patch_runs_write(struct dacce_patch_runs *runs, int mem);

void dacce_patch_runs_fini(struct dacce_patch_runs *runs);

#endif
