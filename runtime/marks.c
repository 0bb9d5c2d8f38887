// SPDX-License-Identifier: MIT
#include "marks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

#define FIRST_CAP 16

/* Keys are addresses or hashes; 0 marks an empty slot, so a key of 0 is kept as 1. */
static uint64_t stored_key(uint64_t key)
{
	return key ? key : 1;
}

static uint32_t home(const struct dacce_marks *marks, uint64_t key)
{
	return (uint32_t)dacce_hash64(key) & (marks->cap - 1);
}

/* The slot holding key, or the empty slot where it would go; NULL in an empty table. */
static struct dacce_mark_slot *probe(const struct dacce_marks *marks, uint64_t key)
{
	if (!marks->cap)
		return NULL;
	for (uint32_t i = home(marks, key);; i = (i + 1) & (marks->cap - 1)) {
		struct dacce_mark_slot *slot = &marks->slots[i];

		if (slot->key == key || slot->key == 0)
			return slot;
	}
}

struct jump_mark *dacce_marks_find(const struct dacce_marks *marks, uint64_t key)
{
	struct dacce_mark_slot *slot = probe(marks, stored_key(key));

	return slot && slot->key ? &slot->mark : NULL;
}

bool dacce_marks_have_room(const struct dacce_marks *marks)
{
	/* At most three quarters full: probes stay short and always meet an empty slot. */
	return (uint64_t)(marks->n + 1) * 4 <= (uint64_t)marks->cap * 3;
}

int dacce_marks_put(struct dacce_marks *marks, uint64_t key, const struct jump_mark *mark)
{
	struct dacce_mark_slot *slot;

	key = stored_key(key);
	slot = probe(marks, key);
	if (slot && slot->key) {
		slot->mark = *mark;
		return 0;
	}
	if (!dacce_marks_have_room(marks))
		return -ENOSPC;
	slot->mark = *mark;
	__atomic_store_n(&slot->key, key, __ATOMIC_RELEASE); /* after the mark: a signal may read it */
	marks->n++;
	return 0;
}

int dacce_marks_grow(struct dacce_marks *marks)
{
	uint32_t cap = marks->cap ? marks->cap * 2 : FIRST_CAP;
	struct dacce_marks grown = { .slots = calloc(cap, sizeof(*grown.slots)), .cap = cap };

	if (!grown.slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < marks->cap; i++)
		if (marks->slots[i].key) {
			struct dacce_mark_slot *slot = probe(&grown, marks->slots[i].key);

			*slot = marks->slots[i];
			grown.n++;
		}
	free(marks->slots);
	*marks = grown;
	return 0;
}

void dacce_marks_clear(struct dacce_marks *marks)
{
	if (marks->slots)
		memset(marks->slots, 0, marks->cap * sizeof(*marks->slots));
	marks->n = 0;
}

void dacce_marks_fini(struct dacce_marks *marks)
{
	free(marks->slots);
	memset(marks, 0, sizeof(*marks));
}
