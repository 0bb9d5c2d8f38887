// SPDX-License-Identifier: MIT
#include "keyed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *place(const struct dacce_keyed *table, uint32_t i)
{
	return table->slots + (size_t)i * table->size;
}

static int grow(struct dacce_keyed *table)
{
	uint32_t cap = table->cap ? table->cap * 2 : 16;
	unsigned char *slots = realloc(table->slots, (size_t)cap * table->size);
	uint64_t *keys;

	if (!slots)
		return -ENOMEM;
	table->slots = slots;
	keys = realloc(table->keys, (size_t)cap * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	table->keys = keys;
	table->cap = cap;
	return 0;
}

void *dacce_keyed_get(struct dacce_keyed *table, uint64_t key, bool make)
{
	uint32_t i;

	if (dacce_hashmap_get(&table->index, key, &i) == 0)
		return place(table, i);
	if (!make || (table->n == table->cap && grow(table)))
		return NULL;
	if (dacce_hashmap_put(&table->index, key, table->n))
		return NULL;
	i = table->n++;
	table->keys[i] = key;
	memset(place(table, i), 0, table->size);
	return place(table, i);
}

void *dacce_keyed_at(const struct dacce_keyed *table, uint32_t i, uint64_t *key)
{
	*key = table->keys[i];
	return place(table, i);
}

int dacce_keyed_remove(struct dacce_keyed *table, uint64_t key)
{
	uint32_t i, last;

	if (dacce_hashmap_get(&table->index, key, &i) != 0)
		return -ENOENT;
	dacce_hashmap_remove(&table->index, key);
	last = --table->n;
	if (i != last) {
		memcpy(place(table, i), place(table, last), table->size);
		table->keys[i] = table->keys[last];
		dacce_hashmap_put(&table->index, table->keys[i], i); /* overwrites: no allocation */
	}
	return 0;
}
