// SPDX-License-Identifier: MIT
#include "keyed.h"

#include <stdlib.h>
#include <string.h>

void *dacce_keyed_get(struct dacce_keyed *table, uint64_t key, bool make)
{
	uint32_t i;

	if (dacce_hashmap_get(&table->index, key, &i) == 0)
		return table->slots + (size_t)i * table->size;
	if (!make)
		return NULL;
	if (table->n == table->cap) {
		uint32_t cap = table->cap ? table->cap * 2 : 16;
		unsigned char *grown = realloc(table->slots, (size_t)cap * table->size);

		if (!grown)
			return NULL;
		table->slots = grown;
		table->cap = cap;
	}
	if (dacce_hashmap_put(&table->index, key, table->n))
		return NULL;
	i = table->n++;
	memset(table->slots + (size_t)i * table->size, 0, table->size);
	return table->slots + (size_t)i * table->size;
}
