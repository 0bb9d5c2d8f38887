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
	uint64_t *keys; /* of each place */
	size_t size;	/* of a record */
	uint32_t n, cap;
};

#define DACCE_KEYED_INIT(record_size) { .size = (record_size) }

/*
 * The record under key, or, with make, a zeroed one made for it; NULL when
 * there is none or memory ran out.  Making or removing one may move every
 * record: a pointer from an earlier call is stale after such a call.
 */
void *dacce_keyed_get(struct dacce_keyed *table, uint64_t key, bool make);

/* The i-th record (i < n) and its key: for walking every record. */
void *dacce_keyed_at(const struct dacce_keyed *table, uint32_t i, uint64_t *key);

/* Forgets the record under key (the last record takes its place).  0, or -ENOENT. */
int dacce_keyed_remove(struct dacce_keyed *table, uint64_t key);

#endif
