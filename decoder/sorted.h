/* SPDX-License-Identifier: MIT */
/* Searching sorted arrays of 64-bit values (addresses, offsets). */
#ifndef DACCE_SORTED_H
#define DACCE_SORTED_H

#include <stddef.h>
#include <stdint.h>

/*
 * The index of the first of the sorted values v[0..n) that is not below key,
 * or n.  By hand rather than bsearch(): the runtime calls it under its lock,
 * where a bsearch the program defines would run.
 */
static inline size_t dacce_lower_bound_u64(const uint64_t *v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
