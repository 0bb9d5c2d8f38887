// SPDX-License-Identifier: MIT
#include "debug_returns.h"

#include <errno.h>
#include <stdlib.h>

__attribute__((visibility("default"))) struct dacce_debug_returns dacce_debug_returns;

void dacce_debug_returns_start(uintptr_t tail_stub, int64_t tpoff)
{
	dacce_debug_returns.tail_stub = tail_stub;
	dacce_debug_returns.tpoff = tpoff;
	__atomic_store_n(&dacce_debug_returns.layout, DACCE_DEBUG_RETURNS_LAYOUT, __ATOMIC_RELEASE);
}

/*
 * Room for one more element in *array of *cap, n used.  A debugger reads the
 * arrays only with every thread stopped: moving them is safe.
 */
static int room_for_one(void **array, uint32_t *cap, uint32_t n, size_t size)
{
	uint32_t grown_cap = *cap ? *cap * 2 : 1024;
	void *grown;

	if (n < *cap)
		return 0;
	grown = realloc(*array, grown_cap * size);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = grown_cap;
	return 0;
}

int dacce_debug_returns_add(uintptr_t code, uintptr_t native)
{
	struct dacce_debug_returns *t = &dacce_debug_returns;

	if (room_for_one((void **)&t->entries, &t->cap, t->count, sizeof(*t->entries)))
		return -ENOMEM;
	t->entries[t->count] = (struct dacce_debug_return){ .code = code, .native = native };
	__atomic_store_n(&t->count, t->count + 1, __ATOMIC_RELEASE);
	return 0;
}

int dacce_debug_returns_add_range(uintptr_t start, uintptr_t end, uintptr_t native)
{
	struct dacce_debug_returns *t = &dacce_debug_returns;

	if (room_for_one((void **)&t->ranges, &t->cap_ranges, t->n_ranges, sizeof(*t->ranges)))
		return -ENOMEM;
	t->ranges[t->n_ranges] =
		(struct dacce_debug_range){ .start = start, .end = end, .native = native };
	__atomic_store_n(&t->n_ranges, t->n_ranges + 1, __ATOMIC_RELEASE);
	return 0;
}
