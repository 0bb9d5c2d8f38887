// SPDX-License-Identifier: MIT
#include "prebuilt.h"

#include <errno.h>
#include <stdlib.h>

#include "hashmap.h"

static struct {
	struct dacce_hashmap by_replaced; /* replaced entry -> index in items */
	struct dacce_prebuilt *items;
	size_t n, cap;
} built;

int dacce_prebuilt_put(uintptr_t replaces, const struct dacce_prebuilt *code)
{
	int err;

	if (built.n == built.cap) {
		size_t cap = built.cap ? 2 * built.cap : 256;
		struct dacce_prebuilt *grown = realloc(built.items, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		built.items = grown;
		built.cap = cap;
	}
	if (built.n > UINT32_MAX)
		return -ENOMEM;
	err = dacce_hashmap_put(&built.by_replaced, replaces, (uint32_t)built.n);
	if (err)
		return err;
	built.items[built.n++] = *code;
	return 0;
}

bool dacce_prebuilt_take(uintptr_t replaces, uint32_t edge, uintptr_t target,
			 const struct dacce_rt_op *op, struct dacce_prebuilt *out)
{
	const struct dacce_prebuilt *code;
	uint32_t at;

	if (dacce_hashmap_get(&built.by_replaced, replaces, &at))
		return false;
	code = &built.items[at];
	if (code->edge != edge || code->target != target || !dacce_rt_op_same_code(&code->op, op))
		return false;
	*out = *code;
	return true;
}

size_t dacce_prebuilt_count(void)
{
	return built.n;
}

void dacce_prebuilt_drop(void)
{
	dacce_hashmap_fini(&built.by_replaced);
	free(built.items);
	built.items = NULL;
	built.n = built.cap = 0;
}
