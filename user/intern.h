/* SPDX-License-Identifier: MIT */
/*
 * A hash table from byte strings to pointers: interns names, frames and
 * stacks while a profile is built, so equal things become one pointer.
 */
#ifndef DACCE_USER_INTERN_H
#define DACCE_USER_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct dacce_intern_slot {
	uint64_t hash;
	void *key; /* owned copy; NULL: empty slot */
	size_t len;
	void *value;
};

struct dacce_intern {
	struct dacce_intern_slot *slots;
	size_t cap, n; /* cap: a power of two */
};

void dacce_intern_init(struct dacce_intern *t);
/* Frees the keys (values belong to the caller); NULL-safe. */
void dacce_intern_fini(struct dacce_intern *t);

/* The value stored under key, or NULL. */
void *dacce_intern_get(const struct dacce_intern *t, const void *key, size_t len);

/* Stores value under a copy of key (replacing any).  0 or -ENOMEM. */
int dacce_intern_put(struct dacce_intern *t, const void *key, size_t len, void *value);

/* Calls fn on each value. */
void dacce_intern_each(const struct dacce_intern *t, void (*fn)(void *value));

#endif
