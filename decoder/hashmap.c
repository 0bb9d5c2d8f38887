// SPDX-License-Identifier: MIT
#include "hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void dacce_hashmap_init(struct dacce_hashmap *map)
{
	memset(map, 0, sizeof(*map));
}

void dacce_hashmap_fini(struct dacce_hashmap *map)
{
	if (!map)
		return;
	free(map->keys);
	free(map->values);
	free(map->used);
	memset(map, 0, sizeof(*map));
}

static uint32_t slot_of(const struct dacce_hashmap *map, uint64_t key)
{
	return (uint32_t)dacce_hash64(key) & (map->capacity - 1);
}

int dacce_hashmap_get(const struct dacce_hashmap *map, uint64_t key, uint32_t *value)
{
	if (map->capacity == 0)
		return -ENOENT;
	for (uint32_t i = slot_of(map, key);; i = (i + 1) & (map->capacity - 1)) {
		if (!map->used[i])
			return -ENOENT;
		if (map->keys[i] == key) {
			*value = map->values[i];
			return 0;
		}
	}
}

static void insert_fresh(struct dacce_hashmap *map, uint64_t key, uint32_t value)
{
	uint32_t i = slot_of(map, key);

	while (map->used[i])
		i = (i + 1) & (map->capacity - 1);
	map->used[i] = 1;
	map->keys[i] = key;
	map->values[i] = value;
	map->count++;
}

static int grow(struct dacce_hashmap *map)
{
	struct dacce_hashmap bigger;
	uint32_t capacity = map->capacity ? map->capacity * 2 : 64;

	if (capacity == 0 || capacity > (1u << 31))
		return -ENOMEM;
	dacce_hashmap_init(&bigger);
	bigger.capacity = capacity;
	bigger.keys = malloc(sizeof(*bigger.keys) * capacity);
	bigger.values = malloc(sizeof(*bigger.values) * capacity);
	bigger.used = calloc(capacity, 1);
	if (!bigger.keys || !bigger.values || !bigger.used) {
		dacce_hashmap_fini(&bigger);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < map->capacity; i++)
		if (map->used[i])
			insert_fresh(&bigger, map->keys[i], map->values[i]);
	dacce_hashmap_fini(map);
	*map = bigger;
	return 0;
}

int dacce_hashmap_put(struct dacce_hashmap *map, uint64_t key, uint32_t value)
{
	int err;

	if (map->capacity) {
		for (uint32_t i = slot_of(map, key);; i = (i + 1) & (map->capacity - 1)) {
			if (!map->used[i])
				break;
			if (map->keys[i] == key) {
				map->values[i] = value;
				return 0;
			}
		}
	}
	/* Keep the load factor at or below 1/2 so probes stay short. */
	if ((uint64_t)(map->count + 1) * 2 > map->capacity) {
		err = grow(map);
		if (err)
			return err;
	}
	insert_fresh(map, key, value);
	return 0;
}
