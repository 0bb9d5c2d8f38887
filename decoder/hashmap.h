/* SPDX-License-Identifier: MIT */
/*
 * Open-addressing map from 64-bit keys to 32-bit values.
 *
 * The call graph needs three lookups on its hot discovery path: function
 * identity -> node, call-site identity -> site, (site, callee) -> edge.
 * All keys are 64-bit and all values are indices, so one small map does.
 */
#ifndef DACCE_HASHMAP_H
#define DACCE_HASHMAP_H

#include <stdint.h>

struct dacce_hashmap {
	uint64_t *keys;
	uint32_t *values;
	uint8_t *used;
	uint32_t capacity; /* power of two, or 0 before the first insert */
	uint32_t count;
};

void dacce_hashmap_init(struct dacce_hashmap *map);
void dacce_hashmap_fini(struct dacce_hashmap *map);

/* Returns 0 and stores the value, or -ENOENT. */
int dacce_hashmap_get(const struct dacce_hashmap *map, uint64_t key, uint32_t *value);

/* Inserts or overwrites. Returns 0 or -ENOMEM. */
int dacce_hashmap_put(struct dacce_hashmap *map, uint64_t key, uint32_t value);

/* Removes key.  Returns 0, or -ENOENT when it was not there. */
int dacce_hashmap_remove(struct dacce_hashmap *map, uint64_t key);

/* Removes every key in [lo, hi).  Returns how many, or -ENOMEM (then none is removed). */
long dacce_hashmap_remove_range(struct dacce_hashmap *map, uint64_t lo, uint64_t hi);

/* A 64-bit mixer (the splitmix64 finaliser); good enough for addresses. */
static inline uint64_t dacce_hash64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#endif
