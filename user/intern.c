// SPDX-License-Identifier: MIT
/* Byte-string keyed table (see intern.h): open addressing, linear probing. */
#include "intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const void *key, size_t len)
{
	const uint8_t *p = key;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void dacce_intern_init(struct dacce_intern *t)
{
	memset(t, 0, sizeof(*t));
}

void dacce_intern_fini(struct dacce_intern *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].key);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static struct dacce_intern_slot *find(const struct dacce_intern *t, uint64_t hash,
				      const void *key, size_t len)
{
	size_t mask = t->cap - 1;

	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		struct dacce_intern_slot *s = &t->slots[i];

		if (!s->key || (s->hash == hash && s->len == len && memcmp(s->key, key, len) == 0))
			return s;
	}
}

void *dacce_intern_get(const struct dacce_intern *t, const void *key, size_t len)
{
	struct dacce_intern_slot *s;

	if (!t->cap)
		return NULL;
	s = find(t, hash_bytes(key, len), key, len);
	return s->key ? s->value : NULL;
}

static int rehash(struct dacce_intern *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct dacce_intern_slot *old = t->slots, *slots = calloc(cap, sizeof(*slots));
	size_t old_cap = t->cap;

	if (!slots)
		return -ENOMEM;
	t->slots = slots;
	t->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].key)
			*find(t, old[i].hash, old[i].key, old[i].len) = old[i];
	free(old);
	return 0;
}

int dacce_intern_put(struct dacce_intern *t, const void *key, size_t len, void *value)
{
	struct dacce_intern_slot *s;
	uint64_t hash = hash_bytes(key, len);

	if ((t->n + 1) * 4 > t->cap * 3 && rehash(t))
		return -ENOMEM;
	s = find(t, hash, key, len);
	if (!s->key) {
		s->key = malloc(len ? len : 1);
		if (!s->key)
			return -ENOMEM;
		memcpy(s->key, key, len);
		s->len = len;
		s->hash = hash;
		t->n++;
	}
	s->value = value;
	return 0;
}

void dacce_intern_each(const struct dacce_intern *t, void (*fn)(void *value))
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].key)
			fn(t->slots[i].value);
}
