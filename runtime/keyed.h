/* SPDX-License-Identifier: MIT */
/*
 * Records of a fixed size kept under 64-bit keys (addresses): a growing
 * array with a hash index.  No lock: callers hold their own.
 */
#ifndef DACCE_RT_KEYED_H
#define DACCE_RT_KEYED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct dacce_keyed {
	struct dacce_hashmap index; /* key -> place in slots */
	unsigned char *slots;
	size_t size; /* of a record */
	uint32_t n, cap;
};

#define DACCE_KEYED_INIT(record_size) { .size = (record_size) }

/*
 * The record under key, or, with make, a zeroed one made for it; NULL when
 * there is none or memory ran out.  Making one may move every record: a
 * pointer from an earlier call is stale after a call with make.
 */
void *dacce_keyed_get(struct dacce_keyed *table, uint64_t key, bool make);

#endif
