// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for dictionary files.  Whatever the reader accepts must
 * be safe to decode with: this walks it the way a decoder does, with every
 * access bounds-checked by ASan, and aborts on any broken promise:
 *  - an accepted file re-serialises to exactly the same bytes;
 *  - every in-edge list holds encoded edges of its node, by increasing En,
 *    and the decoder's index (in_range) matches it;
 *  - walking from any node and id towards R ends within n_nodes steps;
 *  - every dispatch table is found by its site and finds each stored callee;
 *  - the real decoder, given contexts built from the dictionary, returns.
 * Each input is tried as it is and with its framing repaired (payload length
 * and checksum recomputed): random mutations almost never keep the checksum
 * right, and the repaired copy lets them reach the payload checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "decode.h"
#include "dict_io.h"

/* Header layout (docs/dictionary-format.md). */
#define HEADER_SIZE 32u
#define OFF_PAYLOAD_LEN 16u
#define OFF_CRC 24u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int condition)
{
	if (!condition)
		abort();
}

static void check_reserialises(const struct dacce_dict *d, const uint8_t *data, size_t size)
{
	uint8_t *buf = NULL;
	size_t len = 0;

	require(dacce_dict_serialize(d, &buf, &len) == 0);
	require(len == size && memcmp(buf, data, size) == 0);
	free(buf);
}

static void check_in_edges(const struct dacce_dict *d)
{
	for (uint32_t n = 0; n < d->n_nodes; n++) {
		for (uint32_t k = d->in_start[n]; k < d->in_start[n + 1]; k++) {
			uint32_t e = d->in_edges[k];
			struct dacce_edge_view view;

			require(dacce_dict_edge(d, NULL, e, &view) == 0);
			require(view.callee == n && view.class == DACCE_EDGE_ENCODED);
			require(view.en + d->num_cc[view.caller] <= d->num_cc[n]);
			require(k == d->in_start[n] || d->en[d->in_edges[k - 1]] < view.en);
			/* The decoder reads the derived index, not the arrays. */
			require(d->in_range[k].edge == e && d->in_range[k].caller == view.caller);
			require(d->in_range[k].en == view.en);
			require(d->in_range[k].end == view.en + d->num_cc[view.caller]);
		}
	}
}

/* The in-edge of node whose range holds id, or DACCE_NONE. */
static uint32_t edge_holding(const struct dacce_dict *d, uint32_t node, uint64_t id)
{
	for (uint32_t k = d->in_start[node]; k < d->in_start[node + 1]; k++) {
		uint32_t e = d->in_edges[k];

		if (id >= d->en[e] && id - d->en[e] < d->num_cc[d->edge_caller[e]])
			return e;
	}
	return DACCE_NONE;
}

/* The encoded part of decoding (Algorithm 1): must end, whatever the start. */
static void walk_to_root(const struct dacce_dict *d, uint32_t node, uint64_t id)
{
	for (uint32_t steps = 0;; steps++) {
		uint32_t e = edge_holding(d, node, id);

		if (e == DACCE_NONE)
			return;
		require(steps < d->n_nodes);
		id -= d->en[e];
		node = d->edge_caller[e];
	}
}

static void check_walks(const struct dacce_dict *d)
{
	for (uint32_t n = 0; n < d->n_nodes; n++) {
		uint64_t ids = d->num_cc[n];

		if (ids == 0)
			continue;
		walk_to_root(d, n, 0);
		walk_to_root(d, n, ids / 2);
		walk_to_root(d, n, ids - 1);
	}
}

static void check_dispatch(const struct dacce_dict *d)
{
	for (uint32_t i = 0; i < d->n_dispatch; i++) {
		const struct dacce_dispatch *t = &d->dispatch[i];

		require(dacce_dict_dispatch(d, t->site) == t);
		for (uint32_t slot = 0; slot < (1u << t->bits); slot++) {
			if (t->callee[slot] == DACCE_NONE)
				continue;
			require(dacce_dispatch_lookup(t, t->callee[slot]) == t->edge[slot]);
		}
		/* No stored callee is >= n_nodes, so this must miss. */
		require(dacce_dispatch_lookup(t, d->n_nodes) == DACCE_NONE);
	}
}

static void decode_one(const struct dacce_dict *d, uint32_t node, uint64_t id,
		       const struct dacce_cc_entry *cc, uint32_t cc_depth)
{
	struct dacce_snapshot snap = {
		.epoch = d->epoch, .id = id, .node = node, .cc_depth = cc_depth, .cc = cc,
	};
	struct dacce_frame frames[64];
	struct dacce_decode_error err = { 0 };

	/* Any result will do; it must come back without touching memory it should not. */
	(void)dacce_decode(d, NULL, &snap, frames, sizeof(frames) / sizeof(frames[0]), &err);
}

/* Contexts made of the dictionary's own nodes, ids and edges (bounded, for speed). */
static void check_decoder(const struct dacce_dict *d)
{
	uint64_t onstack = d->max_id + 1;

	for (uint32_t n = 0; n < d->n_nodes && n < 64; n++) {
		decode_one(d, n, 0, NULL, 0);
		if (d->num_cc[n])
			decode_one(d, n, d->num_cc[n] - 1, NULL, 0);
		decode_one(d, n, onstack, NULL, 0);
		decode_one(d, n, onstack + d->max_id, NULL, 0);
	}
	for (uint32_t e = 0; e < d->n_edges && e < 64; e++) {
		struct dacce_cc_entry cc[2] = {
			{ .id = 0, .edge = e, .aux = d->edge_caller[e] },
			{ .id = onstack, .edge = e, .aux = 1 },
		};

		decode_one(d, d->edge_callee[e], onstack, cc, 1);
		decode_one(d, d->edge_callee[e], onstack, cc, 2);
	}
}

static void check_file(const uint8_t *data, size_t size)
{
	struct dacce_dict *d = NULL;
	const char *why = NULL;
	int err = dacce_dict_deserialize(data, size, &d, &why);

	if (err) {
		require(err < 0 && d == NULL && why != NULL);
		return;
	}
	check_reserialises(d, data, size);
	check_in_edges(d);
	check_walks(d);
	check_dispatch(d);
	check_decoder(d);
	dacce_dict_free(d);
}

static void put_le(uint8_t *p, uint64_t value, unsigned width)
{
	for (unsigned i = 0; i < width; i++)
		p[i] = (uint8_t)(value >> (8 * i));
}

/* A copy whose payload length and checksum match its bytes. */
static uint8_t *repaired_copy(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size);
	uLong crc;

	require(copy != NULL);
	memcpy(copy, data, size);
	crc = crc32(crc32(0L, Z_NULL, 0), copy + HEADER_SIZE, (uInt)(size - HEADER_SIZE));
	put_le(copy + OFF_PAYLOAD_LEN, size - HEADER_SIZE, 8);
	put_le(copy + OFF_CRC, crc, 4);
	return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	check_file(data, size);
	if (size < HEADER_SIZE)
		return 0;
	copy = repaired_copy(data, size);
	check_file(copy, size);
	free(copy);
	return 0;
}
