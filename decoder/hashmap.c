// SPDX-License-Identifier: MIT
#include "hashmap.h"

#include <errno.h>
#include <stdbool.h>
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

/* The slot holding key: true and *slot, or false when key is not there. */
static bool find_slot(const struct dacce_hashmap *map, uint64_t key, uint32_t *slot)
{
	if (map->capacity == 0)
		return false;
	for (uint32_t i = slot_of(map, key);; i = (i + 1) & (map->capacity - 1)) {
		if (!map->used[i])
			return false;
		if (map->keys[i] == key) {
			*slot = i;
			return true;
		}
	}
}

int dacce_hashmap_get(const struct dacce_hashmap *map, uint64_t key, uint32_t *value)
{
	uint32_t i;

	if (!find_slot(map, key, &i))
		return -ENOENT;
	*value = map->values[i];
	return 0;
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
	uint32_t i;
	int err;

	if (find_slot(map, key, &i)) {
		map->values[i] = value;
		return 0;
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

/*
 * Linear probing without tombstones: the entries after the emptied slot,
 * up to the next empty one, move back into it when their home slot allows,
 * so that every lookup still finds them before an empty slot.
 */
static void empty_slot(struct dacce_hashmap *map, uint32_t hole)
{
	uint32_t mask = map->capacity - 1;

	map->used[hole] = 0;
	map->count--;
	for (uint32_t j = (hole + 1) & mask; map->used[j]; j = (j + 1) & mask) {
		uint32_t home = slot_of(map, map->keys[j]);
		/* Stays when its home lies cyclically in (hole, j]. */
		bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);

		if (stays)
			continue;
		map->keys[hole] = map->keys[j];
		map->values[hole] = map->values[j];
		map->used[hole] = 1;
		map->used[j] = 0;
		hole = j;
	}
}

int dacce_hashmap_remove(struct dacce_hashmap *map, uint64_t key)
{
	uint32_t i;

	if (!find_slot(map, key, &i))
		return -ENOENT;
	empty_slot(map, i);
	return 0;
}

long dacce_hashmap_remove_range(struct dacce_hashmap *map, uint64_t lo, uint64_t hi)
{
	uint64_t *doomed;
	long n = 0;

	if (map->count == 0)
		return 0;
	doomed = malloc(sizeof(*doomed) * map->count);
	if (!doomed)
		return -ENOMEM;
	for (uint32_t i = 0; i < map->capacity; i++)
		if (map->used[i] && map->keys[i] >= lo && map->keys[i] < hi)
			doomed[n++] = map->keys[i];
	for (long i = 0; i < n; i++)
		dacce_hashmap_remove(map, doomed[i]);
	free(doomed);
	return n;
}
