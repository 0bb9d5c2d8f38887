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

int dacce_debug_returns_add(uintptr_t code, uintptr_t native)
{
	struct dacce_debug_returns *t = &dacce_debug_returns;

	if (t->count == t->cap) {
		/* A debugger reads it only with every thread stopped: moving it is safe. */
		uint32_t cap = t->cap ? t->cap * 2 : 1024;
		struct dacce_debug_return *grown = realloc(t->entries, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->entries = grown;
		t->cap = cap;
	}
	t->entries[t->count] = (struct dacce_debug_return){ .code = code, .native = native };
	__atomic_store_n(&t->count, t->count + 1, __ATOMIC_RELEASE);
	return 0;
}
