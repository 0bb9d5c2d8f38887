// SPDX-License-Identifier: MIT
/*
 * Dictionary files: round trips, the byte layout of docs/dictionary-format.md
 * (checked against a second, independent writer kept here), and one test per
 * validation rule.  Rule tests corrupt one field of a valid dictionary, write
 * it with the independent writer (which validates nothing and computes a
 * correct checksum) and expect the reader to refuse it for that reason.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dict.h"
#include "dict_io.h"
#include "testgraph.h"

#define HEADER_SIZE 32u
#define OFF_VERSION 8u
#define OFF_HEADER_SIZE 12u
#define OFF_PAYLOAD_LEN 16u
#define OFF_CRC 24u
#define OFF_FLAGS 28u
/* Payload offsets of the scalar fields. */
#define POFF_COMPRESS_NEW 24u
#define POFF_N_EDGES 33u

/* ------------------------------------------------------------ the test dictionary */

/* Nodes of the hand-built dictionary. */
enum { R, MAIN, F, G, H, SIG, ORPHAN, N_NODES };
/* Its call sites after the root sites. */
enum { S_MAIN_F = DACCE_NR_ROOT_SITES, S_MAIN_G, S_F_H, S_G_H, S_H_IND, S_MAIN_IND, S_ORPHAN,
       N_SITES };
/* Its edges. */
enum { E_ROOT_MAIN, E_MAIN_F, E_MAIN_G, E_F_H, E_G_H, E_H_F_BACK, E_ROOT_SIG, E_IND_F, E_IND_G,
       E_IND_H, E_ORPHAN_SELF, N_EDGES };
#define N_IN_EDGES 7u
#define IN_EDGES_ROOM 8u /* one spare entry for tests that add an encoded edge */
/* Dispatch tables, sorted by site. */
enum { T_H_IND, T_MAIN_IND, N_TABLES };

static void set_site(struct dacce_dict *d, uint32_t s, uint32_t caller, enum dacce_site_kind kind)
{
	d->site_caller[s] = caller;
	d->site_kind[s] = (uint8_t)kind;
}

static void set_edge(struct dacce_dict *d, uint32_t e, uint32_t site, uint32_t callee,
		     enum dacce_edge_class class, uint64_t en, uint8_t compress)
{
	d->edge_site[e] = site;
	d->edge_caller[e] = d->site_caller[site];
	d->edge_callee[e] = callee;
	d->edge_class[e] = (uint8_t)class;
	d->en[e] = en;
	d->edge_compress[e] = compress;
}

/* Linear probing from the home slot, as the runtime builds tables. */
static void table_put(struct dacce_dispatch *t, uint32_t callee, uint32_t edge)
{
	uint32_t mask = (1u << t->bits) - 1;
	uint32_t slot = dacce_dispatch_slot(callee, t->bits);

	while (t->callee[slot] != DACCE_NONE)
		slot = (slot + 1) & mask;
	t->callee[slot] = callee;
	t->edge[slot] = edge;
}

static void table_init(struct dacce_dispatch *t, uint32_t site, uint32_t bits)
{
	t->site = site;
	t->bits = bits;
	t->callee = malloc(sizeof(*t->callee) << bits);
	t->edge = malloc(sizeof(*t->edge) << bits);
	ck_assert_ptr_nonnull(t->callee);
	ck_assert_ptr_nonnull(t->edge);
	for (uint32_t i = 0; i < (1u << bits); i++) {
		t->callee[i] = DACCE_NONE;
		t->edge[i] = DACCE_NONE;
	}
}

/* The slot holding callee, or DACCE_NONE. */
static uint32_t table_slot_of(const struct dacce_dispatch *t, uint32_t callee)
{
	for (uint32_t i = 0; i < (1u << t->bits); i++)
		if (t->callee[i] == callee)
			return i;
	return DACCE_NONE;
}

/*
 * R -> main -> {f, g} -> h, main also reaching f, g (encoded) and h (new) via
 * an indirect site with a dispatch table; h -> f closes a cycle (back edge);
 * a signal handler is a nested root with a dummy context; an orphan node
 * has no path at all (num_cc 0) and calls itself.
 */
static struct dacce_dict *build_full(void)
{
	struct dacce_dict *d = dacce_dict_alloc(N_NODES, N_SITES, N_EDGES, IN_EDGES_ROOM,
						N_TABLES);
	static const uint64_t num_cc[N_NODES] = { 1, 1, 2, 2, 4, 1, 0 };
	static const uint32_t in_start[N_NODES + 1] = { 0, 0, 1, 3, 5, 7, 7, 7 };
	static const uint32_t in_edges[N_IN_EDGES] = {
		E_ROOT_MAIN, E_MAIN_F, E_IND_F, E_MAIN_G, E_IND_G, E_F_H, E_G_H,
	};

	ck_assert_ptr_nonnull(d);
	d->epoch = 7;
	d->max_id = 3;
	d->id_limit = DACCE_ID_LIMIT_DEFAULT;
	d->compress_new = true;
	memcpy(d->num_cc, num_cc, sizeof(num_cc));
	d->dummy[SIG] = 1;
	memcpy(d->in_start, in_start, sizeof(in_start));
	memcpy(d->in_edges, in_edges, sizeof(in_edges));

	for (uint32_t s = 0; s < DACCE_NR_ROOT_SITES; s++)
		set_site(d, s, R, DACCE_SITE_ROOT_MAIN + s);
	set_site(d, S_MAIN_F, MAIN, DACCE_SITE_DIRECT);
	set_site(d, S_MAIN_G, MAIN, DACCE_SITE_DIRECT);
	set_site(d, S_F_H, F, DACCE_SITE_DIRECT);
	set_site(d, S_G_H, G, DACCE_SITE_TAIL_DIRECT);
	set_site(d, S_H_IND, H, DACCE_SITE_INDIRECT);
	set_site(d, S_MAIN_IND, MAIN, DACCE_SITE_INDIRECT);
	set_site(d, S_ORPHAN, ORPHAN, DACCE_SITE_PLT);

	set_edge(d, E_ROOT_MAIN, DACCE_ROOT_SITE_MAIN, MAIN, DACCE_EDGE_ENCODED, 0, 0);
	set_edge(d, E_MAIN_F, S_MAIN_F, F, DACCE_EDGE_ENCODED, 0, 0);
	set_edge(d, E_MAIN_G, S_MAIN_G, G, DACCE_EDGE_ENCODED, 0, 0);
	set_edge(d, E_F_H, S_F_H, H, DACCE_EDGE_ENCODED, 0, 0);
	set_edge(d, E_G_H, S_G_H, H, DACCE_EDGE_ENCODED, 2, 0);
	set_edge(d, E_H_F_BACK, S_H_IND, F, DACCE_EDGE_BACK, 0, 1);
	set_edge(d, E_ROOT_SIG, DACCE_ROOT_SITE_SIGNAL, SIG, DACCE_EDGE_UNENCODED, 0, 0);
	set_edge(d, E_IND_F, S_MAIN_IND, F, DACCE_EDGE_ENCODED, 1, 0);
	set_edge(d, E_IND_G, S_MAIN_IND, G, DACCE_EDGE_ENCODED, 1, 0);
	set_edge(d, E_IND_H, S_MAIN_IND, H, DACCE_EDGE_UNENCODED, 0, 1);
	set_edge(d, E_ORPHAN_SELF, S_ORPHAN, ORPHAN, DACCE_EDGE_BACK, 0, 1);

	table_init(&d->dispatch[T_H_IND], S_H_IND, 1);
	table_put(&d->dispatch[T_H_IND], F, E_H_F_BACK);
	table_init(&d->dispatch[T_MAIN_IND], S_MAIN_IND, 2);
	table_put(&d->dispatch[T_MAIN_IND], F, E_IND_F);
	table_put(&d->dispatch[T_MAIN_IND], G, E_IND_G);
	return d;
}

/* The smallest valid dictionary: R and the root sites, nothing else. */
static struct dacce_dict *build_minimal(void)
{
	struct dacce_dict *d = dacce_dict_alloc(1, DACCE_NR_ROOT_SITES, 0, 0, 0);

	ck_assert_ptr_nonnull(d);
	d->num_cc[R] = 1;
	d->id_limit = 1;
	for (uint32_t s = 0; s < DACCE_NR_ROOT_SITES; s++)
		set_site(d, s, R, DACCE_SITE_ROOT_MAIN + s);
	return d;
}

/* ------------------------------------------------------------ an independent writer */

struct bytes {
	uint8_t *data;
	size_t len, cap;
};

static void bytes_put(struct bytes *b, uint64_t value, unsigned width)
{
	if (b->len + width > b->cap) {
		b->cap = (b->len + width) * 2;
		b->data = realloc(b->data, b->cap);
		ck_assert_ptr_nonnull(b->data);
	}
	for (unsigned i = 0; i < width; i++)
		b->data[b->len++] = (uint8_t)(value >> (8 * i));
}

static void patch_le(uint8_t *p, uint64_t value, unsigned width)
{
	for (unsigned i = 0; i < width; i++)
		p[i] = (uint8_t)(value >> (8 * i));
}

static void fix_crc(uint8_t *buf, size_t len)
{
	uLong crc = crc32(crc32(0L, Z_NULL, 0), buf + HEADER_SIZE, (uInt)(len - HEADER_SIZE));

	patch_le(buf + OFF_CRC, crc, 4);
}

/* A file around payload bytes, with a correct header and checksum. */
static uint8_t *wrap_payload(const uint8_t *payload, size_t payload_len, size_t *len)
{
	struct bytes b = { 0 };

	for (size_t i = 0; i < 8; i++)
		bytes_put(&b, (uint8_t)DACCE_DICT_MAGIC[i], 1);
	bytes_put(&b, DACCE_DICT_VERSION, 4);
	bytes_put(&b, HEADER_SIZE, 4);
	bytes_put(&b, payload_len, 8);
	bytes_put(&b, 0, 4); /* checksum, below */
	bytes_put(&b, 0, 4);
	for (size_t i = 0; i < payload_len; i++)
		bytes_put(&b, payload[i], 1);
	fix_crc(b.data, b.len);
	*len = b.len;
	return b.data;
}

/* The payload of docs/dictionary-format.md, field by field, checking nothing. */
static struct bytes raw_payload(const struct dacce_dict *d, uint32_t n_in_edges)
{
	struct bytes b = { 0 };

	bytes_put(&b, d->epoch, 8);
	bytes_put(&b, d->max_id, 8);
	bytes_put(&b, d->id_limit, 8);
	bytes_put(&b, d->compress_new, 1);
	bytes_put(&b, d->n_nodes, 4);
	bytes_put(&b, d->n_sites, 4);
	bytes_put(&b, d->n_edges, 4);
	bytes_put(&b, n_in_edges, 4);
	bytes_put(&b, d->n_dispatch, 4);
	for (uint32_t n = 0; n < d->n_nodes; n++) {
		bytes_put(&b, d->num_cc[n], 8);
		bytes_put(&b, d->dummy[n], 1);
	}
	for (uint32_t n = 0; n <= d->n_nodes; n++)
		bytes_put(&b, d->in_start[n], 4);
	for (uint32_t k = 0; k < n_in_edges; k++)
		bytes_put(&b, d->in_edges[k], 4);
	for (uint32_t s = 0; s < d->n_sites; s++) {
		bytes_put(&b, d->site_caller[s], 4);
		bytes_put(&b, d->site_kind[s], 1);
	}
	for (uint32_t e = 0; e < d->n_edges; e++) {
		bytes_put(&b, d->edge_site[e], 4);
		bytes_put(&b, d->edge_caller[e], 4);
		bytes_put(&b, d->edge_callee[e], 4);
		bytes_put(&b, d->edge_class[e], 1);
		bytes_put(&b, d->edge_compress[e], 1);
		bytes_put(&b, d->en[e], 8);
	}
	for (uint32_t i = 0; i < d->n_dispatch; i++) {
		const struct dacce_dispatch *t = &d->dispatch[i];

		bytes_put(&b, t->site, 4);
		bytes_put(&b, t->bits, 4);
		for (uint32_t slot = 0; slot < (1u << t->bits); slot++) {
			bytes_put(&b, t->callee[slot], 4);
			bytes_put(&b, t->edge[slot], 4);
		}
	}
	return b;
}

static uint8_t *raw_write(const struct dacce_dict *d, uint32_t n_in_edges, size_t *len)
{
	struct bytes payload = raw_payload(d, n_in_edges);
	uint8_t *file = wrap_payload(payload.data, payload.len, len);

	free(payload.data);
	return file;
}

/* ------------------------------------------------------------ assertions */

static void assert_dicts_equal(const struct dacce_dict *a, const struct dacce_dict *b)
{
	uint32_t n_in = a->in_start[a->n_nodes];

	ck_assert_uint_eq(a->epoch, b->epoch);
	ck_assert_uint_eq(a->max_id, b->max_id);
	ck_assert_uint_eq(a->id_limit, b->id_limit);
	ck_assert_int_eq(a->compress_new, b->compress_new);
	ck_assert_uint_eq(a->n_nodes, b->n_nodes);
	ck_assert_uint_eq(a->n_sites, b->n_sites);
	ck_assert_uint_eq(a->n_edges, b->n_edges);
	ck_assert_uint_eq(a->n_dispatch, b->n_dispatch);
	ck_assert_mem_eq(a->num_cc, b->num_cc, sizeof(*a->num_cc) * a->n_nodes);
	ck_assert_mem_eq(a->dummy, b->dummy, a->n_nodes);
	ck_assert_mem_eq(a->in_start, b->in_start, sizeof(*a->in_start) * (a->n_nodes + 1));
	ck_assert_mem_eq(a->in_edges, b->in_edges, sizeof(*a->in_edges) * n_in);
	ck_assert_mem_eq(a->site_caller, b->site_caller, sizeof(*a->site_caller) * a->n_sites);
	ck_assert_mem_eq(a->site_kind, b->site_kind, a->n_sites);
	ck_assert_mem_eq(a->edge_site, b->edge_site, sizeof(*a->edge_site) * a->n_edges);
	ck_assert_mem_eq(a->edge_caller, b->edge_caller, sizeof(*a->edge_caller) * a->n_edges);
	ck_assert_mem_eq(a->edge_callee, b->edge_callee, sizeof(*a->edge_callee) * a->n_edges);
	ck_assert_mem_eq(a->edge_class, b->edge_class, a->n_edges);
	ck_assert_mem_eq(a->edge_compress, b->edge_compress, a->n_edges);
	ck_assert_mem_eq(a->en, b->en, sizeof(*a->en) * a->n_edges);
	for (uint32_t i = 0; i < a->n_dispatch; i++) {
		const struct dacce_dispatch *ta = &a->dispatch[i], *tb = &b->dispatch[i];

		ck_assert_uint_eq(ta->site, tb->site);
		ck_assert_uint_eq(ta->bits, tb->bits);
		ck_assert_mem_eq(ta->callee, tb->callee, sizeof(*ta->callee) << ta->bits);
		/* Values of empty slots mean nothing. */
		for (uint32_t s = 0; s < (1u << ta->bits); s++)
			if (ta->callee[s] != DACCE_NONE)
				ck_assert_uint_eq(ta->edge[s], tb->edge[s]);
	}
}

/* A dictionary read from a file comes with the decoder's index built. */
static void assert_indexed(const struct dacce_dict *d)
{
	ck_assert_ptr_nonnull(d->in_range);
	for (uint32_t k = 0; k < d->in_start[d->n_nodes]; k++) {
		uint32_t e = d->in_edges[k];

		ck_assert_uint_eq(d->in_range[k].edge, e);
		ck_assert_uint_eq(d->in_range[k].caller, d->edge_caller[e]);
		ck_assert_uint_eq(d->in_range[k].en, d->en[e]);
		ck_assert_uint_eq(d->in_range[k].end, d->en[e] + d->num_cc[d->edge_caller[e]]);
	}
}

static void assert_round_trip(const struct dacce_dict *d)
{
	struct dacce_dict *back = NULL;
	const char *why = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(dacce_dict_serialize(d, &buf, &len), 0);
	ck_assert_int_eq(dacce_dict_deserialize(buf, len, &back, &why), 0);
	ck_assert_ptr_null(why);
	assert_dicts_equal(d, back);
	assert_indexed(back);
	dacce_dict_free(back);
	free(buf);
}

static void expect_rejected_bytes(const uint8_t *buf, size_t len, int err, const char *reason)
{
	struct dacce_dict sentinel;
	struct dacce_dict *out = &sentinel; /* must be reset to NULL */
	const char *why = NULL;

	ck_assert_int_eq(dacce_dict_deserialize(buf, len, &out, &why), err);
	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(why);
	if (reason)
		ck_assert_str_eq(why, reason);
}

/* Writes d as is (valid checksum) and expects the reader to refuse it for reason. */
static void expect_rejected(const struct dacce_dict *d, uint32_t n_in_edges, const char *reason)
{
	size_t len;
	uint8_t *buf = raw_write(d, n_in_edges, &len);

	expect_rejected_bytes(buf, len, -EBADMSG, reason);
	free(buf);
}

/* A valid file of the full dictionary, from the library writer. */
static uint8_t *full_file(size_t *len)
{
	struct dacce_dict *d = build_full();
	uint8_t *buf = NULL;

	ck_assert_int_eq(dacce_dict_serialize(d, &buf, len), 0);
	dacce_dict_free(d);
	return buf;
}

/* Offset of the bits field of the last dispatch table of the full dictionary. */
static size_t last_table_bits_offset(size_t len)
{
	return len - 8 * (1u << 2) - 8 + 4;
}

/* ------------------------------------------------------------ round trips */

START_TEST(test_round_trip_full)
{
	struct dacce_dict *d = build_full();

	assert_round_trip(d);
	dacce_dict_free(d);
}
END_TEST

START_TEST(test_round_trip_minimal)
{
	struct dacce_dict *d = build_minimal();

	assert_round_trip(d);
	dacce_dict_free(d);
}
END_TEST

START_TEST(test_round_trip_extreme_values)
{
	struct dacce_dict *d = build_full();

	/* Ids at the limit: num_cc[h] = 2^62 = id_limit, ranges still exact. */
	d->epoch = UINT64_MAX;
	d->compress_new = false;
	d->num_cc[H] = DACCE_ID_LIMIT_DEFAULT;
	d->max_id = DACCE_ID_LIMIT_DEFAULT - 1;
	d->en[E_G_H] = DACCE_ID_LIMIT_DEFAULT - 2;
	assert_round_trip(d);
	dacce_dict_free(d);
}
END_TEST

/* A graph with recursion, a signal handler and a busy indirect site, through dacce_encode. */
static struct dacce_graph *build_graph(void)
{
	static const uint8_t build_id[] = { 0x5e, 0xed };
	struct dacce_graph *g = dacce_graph_new();
	uint32_t m, main_fn, a, b, handler, direct_ab, direct_ba, ind, e, target;

	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq(dacce_graph_add_module(g, build_id, sizeof(build_id), &m), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x100, &main_fn), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x200, &a), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x300, &b), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x400, &handler), 0);
	ck_assert_int_eq(dacce_graph_add_root_edge(g, DACCE_ROOT_SITE_MAIN, main_fn, &e), 0);
	ck_assert_int_eq(dacce_graph_add_root_edge(g, DACCE_ROOT_SITE_SIGNAL, handler, &e), 0);
	ck_assert_int_eq(dacce_graph_add_site(g, main_fn, m, 0x110, DACCE_SITE_DIRECT,
					      &direct_ab), 0);
	ck_assert_int_eq(dacce_graph_add_edge(g, direct_ab, a, &e), 0);
	g->edges[e].freq = 50;
	ck_assert_int_eq(dacce_graph_add_site(g, a, m, 0x210, DACCE_SITE_DIRECT, &direct_ab), 0);
	ck_assert_int_eq(dacce_graph_add_edge(g, direct_ab, b, &e), 0);
	g->edges[e].freq = 40;
	ck_assert_int_eq(dacce_graph_add_site(g, b, m, 0x310, DACCE_SITE_DIRECT, &direct_ba), 0);
	ck_assert_int_eq(dacce_graph_add_edge(g, direct_ba, a, &e), 0);
	g->edges[e].freq = 30;
	ck_assert_int_eq(dacce_graph_add_site(g, main_fn, m, 0x120, DACCE_SITE_INDIRECT, &ind), 0);
	for (uint32_t i = 0; i < 12; i++) {
		ck_assert_int_eq(dacce_graph_add_node(g, m, 0x1000 + 0x10 * i, &target), 0);
		ck_assert_int_eq(dacce_graph_add_edge(g, ind, target, &e), 0);
		g->edges[e].freq = i;
	}
	ck_assert_int_eq(dacce_graph_add_edge(g, ind, a, &e), 0);
	return g;
}

START_TEST(test_round_trip_encoded)
{
	struct dacce_graph *g = build_graph();
	struct dacce_encode_opts opts;
	struct dacce_dict *d = NULL;

	dacce_encode_opts_default(&opts);
	opts.epoch = 3;
	ck_assert_int_eq(dacce_encode(g, &opts, &d), 0);
	ck_assert_uint_ge(d->n_dispatch, 1);
	assert_round_trip(d);
	dacce_dict_free(d);
	dacce_graph_free(g);
}
END_TEST

/* The library writes exactly the layout the document gives (our second writer). */
START_TEST(test_layout_matches_document)
{
	struct dacce_dict *d = build_full();
	size_t len, raw_len;
	uint8_t *buf = NULL, *raw = raw_write(d, N_IN_EDGES, &raw_len);

	ck_assert_int_eq(dacce_dict_serialize(d, &buf, &len), 0);
	ck_assert_uint_eq(len, raw_len);
	ck_assert_mem_eq(buf, raw, len);
	ck_assert_mem_eq(buf, "DACCEDIC", 8);
	ck_assert_mem_eq(buf + OFF_VERSION, "\x01\x00\x00\x00", 4);
	ck_assert_mem_eq(buf + OFF_HEADER_SIZE, "\x20\x00\x00\x00", 4);
	dacce_dict_free(d);
	free(buf);
	free(raw);
}
END_TEST

START_TEST(test_empty_slots_written_canonically)
{
	struct dacce_dict *d = build_full(), *back = NULL;
	struct dacce_dispatch *t = &d->dispatch[T_MAIN_IND];
	uint32_t empty = table_slot_of(t, DACCE_NONE);
	uint8_t *buf = NULL;
	size_t len;

	/* Whatever sits in an empty slot's edge is written as DACCE_NONE. */
	t->edge[empty] = 1234;
	ck_assert_int_eq(dacce_dict_serialize(d, &buf, &len), 0);
	ck_assert_int_eq(dacce_dict_deserialize(buf, len, &back, NULL), 0);
	ck_assert_uint_eq(back->dispatch[T_MAIN_IND].edge[empty], DACCE_NONE);
	dacce_dict_free(d);
	dacce_dict_free(back);
	free(buf);
}
END_TEST

START_TEST(test_serialize_refuses_invalid)
{
	struct dacce_dict *d = build_full();
	uint8_t *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(dacce_dict_serialize(NULL, &buf, &len), -EINVAL);
	ck_assert_int_eq(dacce_dict_serialize(d, NULL, &len), -EINVAL);
	ck_assert_int_eq(dacce_dict_serialize(d, &buf, NULL), -EINVAL);
	/* The reader would refuse it, so the writer does too. */
	d->en[E_G_H] = 3;
	ck_assert_int_eq(dacce_dict_serialize(d, &buf, &len), -EINVAL);
	ck_assert_ptr_null(buf);
	dacce_dict_free(d);
}
END_TEST

START_TEST(test_deserialize_arguments)
{
	struct dacce_dict *out = NULL;
	const char *why = NULL;
	size_t len;
	uint8_t *buf = full_file(&len);

	ck_assert_int_eq(dacce_dict_deserialize(buf, len, NULL, &why), -EINVAL);
	ck_assert_ptr_nonnull(why);
	ck_assert_int_eq(dacce_dict_deserialize(NULL, len, &out, &why), -EINVAL);
	ck_assert_int_eq(dacce_dict_deserialize(NULL, 0, &out, &why), -ENODATA);
	/* why is optional. */
	ck_assert_int_eq(dacce_dict_deserialize(buf, len - 1, &out, NULL), -ENODATA);
	ck_assert_int_eq(dacce_dict_deserialize(buf, len, &out, NULL), 0);
	dacce_dict_free(out);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------ framing */

START_TEST(test_bad_magic)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	buf[3] ^= 0x20;
	expect_rejected_bytes(buf, len, -EBADMSG, "not a dictionary (bad magic)");
	free(buf);
}
END_TEST

START_TEST(test_wrong_version)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	patch_le(buf + OFF_VERSION, DACCE_DICT_VERSION + 1, 4);
	expect_rejected_bytes(buf, len, -EPROTONOSUPPORT, "unsupported dictionary version");
	/* Told even when the rest of the header is missing. */
	expect_rejected_bytes(buf, OFF_VERSION + 4, -EPROTONOSUPPORT, NULL);
	patch_le(buf + OFF_VERSION, 0, 4);
	expect_rejected_bytes(buf, len, -EPROTONOSUPPORT, NULL);
	free(buf);
}
END_TEST

START_TEST(test_bad_header_size)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	patch_le(buf + OFF_HEADER_SIZE, 40, 4);
	expect_rejected_bytes(buf, len, -EBADMSG, "bad header size");
	free(buf);
}
END_TEST

START_TEST(test_unknown_flags)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	buf[OFF_FLAGS + 3] = 0x80;
	expect_rejected_bytes(buf, len, -EBADMSG, "unknown header flags");
	free(buf);
}
END_TEST

START_TEST(test_truncated_at_every_length)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	for (size_t cut = 0; cut < len; cut++) {
		/* A fresh copy of exactly cut bytes, so ASan sees any read past it. */
		uint8_t *part = malloc(cut ? cut : 1);

		memcpy(part, buf, cut);
		expect_rejected_bytes(part, cut, -ENODATA, NULL);
		free(part);
	}
	free(buf);
}
END_TEST

START_TEST(test_trailing_bytes)
{
	size_t len;
	uint8_t *buf = full_file(&len);
	uint8_t *longer = calloc(1, len + 1);

	memcpy(longer, buf, len);
	expect_rejected_bytes(longer, len + 1, -EBADMSG, "trailing bytes after payload");
	free(longer);
	free(buf);
}
END_TEST

START_TEST(test_payload_length_too_large)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	patch_le(buf + OFF_PAYLOAD_LEN, UINT64_MAX, 8);
	expect_rejected_bytes(buf, len, -ENODATA, "truncated payload");
	free(buf);
}
END_TEST

START_TEST(test_flipped_payload_byte)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	for (size_t at = HEADER_SIZE; at < len; at++) {
		buf[at] ^= 0xff;
		expect_rejected_bytes(buf, len, -EBADMSG, "payload checksum mismatch");
		buf[at] ^= 0xff;
	}
	free(buf);
}
END_TEST

START_TEST(test_flipped_checksum)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	buf[OFF_CRC] ^= 0x01;
	expect_rejected_bytes(buf, len, -EBADMSG, "payload checksum mismatch");
	free(buf);
}
END_TEST

/* ------------------------------------------------------------ payload structure */

START_TEST(test_payload_too_short)
{
	static const uint8_t payload[10];
	size_t len;
	uint8_t *buf = wrap_payload(payload, sizeof(payload), &len);

	expect_rejected_bytes(buf, len, -EBADMSG, "payload too short for its fields");
	free(buf);
}
END_TEST

START_TEST(test_counts_exceed_payload)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	/* Would be a 90 GiB allocation if believed. */
	patch_le(buf + HEADER_SIZE + POFF_N_EDGES, UINT32_MAX - 1, 4);
	fix_crc(buf, len);
	expect_rejected_bytes(buf, len, -EBADMSG, "counts exceed payload");
	free(buf);
}
END_TEST

START_TEST(test_trailing_bytes_in_payload)
{
	struct dacce_dict *d = build_full();
	struct bytes payload = raw_payload(d, N_IN_EDGES);
	uint8_t *buf;
	size_t len;

	bytes_put(&payload, 0, 1);
	buf = wrap_payload(payload.data, payload.len, &len);
	expect_rejected_bytes(buf, len, -EBADMSG, "trailing bytes in payload");
	free(buf);
	free(payload.data);
	dacce_dict_free(d);
}
END_TEST

START_TEST(test_compress_new_not_bool)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	buf[HEADER_SIZE + POFF_COMPRESS_NEW] = 2;
	fix_crc(buf, len);
	expect_rejected_bytes(buf, len, -EBADMSG, "compress_new flag not 0 or 1");
	free(buf);
}
END_TEST

START_TEST(test_dispatch_bits_out_of_range)
{
	static const uint32_t bad_bits[] = { 0, 25, 32, 64, UINT32_MAX };
	size_t len;
	uint8_t *buf = full_file(&len);

	for (size_t i = 0; i < sizeof(bad_bits) / sizeof(bad_bits[0]); i++) {
		patch_le(buf + last_table_bits_offset(len), bad_bits[i], 4);
		fix_crc(buf, len);
		expect_rejected_bytes(buf, len, -EBADMSG, "dispatch table size out of range");
	}
	free(buf);
}
END_TEST

START_TEST(test_dispatch_exceeds_payload)
{
	size_t len;
	uint8_t *buf = full_file(&len);

	patch_le(buf + last_table_bits_offset(len), 24, 4);
	fix_crc(buf, len);
	expect_rejected_bytes(buf, len, -EBADMSG, "dispatch tables exceed payload");
	free(buf);
}
END_TEST

START_TEST(test_empty_slot_with_edge)
{
	struct dacce_dict *d = build_full();
	struct dacce_dispatch *t = &d->dispatch[T_MAIN_IND];

	t->edge[table_slot_of(t, DACCE_NONE)] = E_IND_H;
	expect_rejected(d, N_IN_EDGES, "empty dispatch slot with an edge");
	dacce_dict_free(d);
}
END_TEST

/* ------------------------------------------------------------ rules: counts and ids */

/*
 * One corruption of the full dictionary per test.  RULE_TEST defines a test
 * that builds it, applies the statement(s), and expects the reason.
 */
#define RULE_TEST(name, reason, ...)                                   \
	START_TEST(name)                                               \
	{                                                              \
		struct dacce_dict *d = build_full();                   \
		uint32_t n_in = N_IN_EDGES;                            \
		__VA_ARGS__;                                           \
		expect_rejected(d, n_in, reason);                      \
		dacce_dict_free(d);                                    \
	}                                                              \
	END_TEST

RULE_TEST(test_no_root_node, "no root node", d->n_nodes = 0; n_in = 0)
RULE_TEST(test_root_sites_missing, "root sites missing", d->n_sites = DACCE_NR_ROOT_SITES - 1)
RULE_TEST(test_id_limit_too_large, "id_limit above 2^62",
	  d->id_limit = DACCE_ID_LIMIT_DEFAULT + 1)
RULE_TEST(test_max_id_not_below_limit, "max_id not below id_limit", d->id_limit = d->max_id)
RULE_TEST(test_max_id_too_large, "max_id is not the largest num_cc - 1", d->max_id = 4)

/* ------------------------------------------------------------ rules: nodes */

RULE_TEST(test_dummy_not_bool, "dummy flag not 0, 1 or 2", d->dummy[SIG] = 3)
RULE_TEST(test_num_cc_above_max_id, "num_cc above max_id + 1", d->num_cc[ORPHAN] = 5)
RULE_TEST(test_dummy_without_ids, "dummy node without ids", d->dummy[ORPHAN] = 1)
RULE_TEST(test_root_num_cc, "root node does not have exactly one context", d->num_cc[R] = 2)
RULE_TEST(test_root_dummy, "root node does not have exactly one context", d->dummy[R] = 1)

/* main -> {A, B}, both calling malloc and A calling strlen: leaf calls (graph.h). */
static struct dacce_dict *build_with_leaves(void)
{
	struct testgraph tg;
	struct dacce_dict *d = NULL;
	uint32_t leaf[3];

	tg_init(&tg);
	tg_root(&tg, "main");
	tg_call(&tg, "main", "A", 10);
	tg_call(&tg, "main", "B", 5);
	tg_call(&tg, "A", "B", 5);
	leaf[0] = tg_call(&tg, "A", "malloc", 10);
	leaf[1] = tg_call(&tg, "B", "malloc", 20);
	leaf[2] = tg_call(&tg, "A", "strlen", 30);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(dacce_graph_leaf_edge(tg.graph, leaf[i]), 0);
	ck_assert_int_eq(dacce_encode(tg.graph, NULL, &d), 0);
	tg_fini(&tg);
	return d;
}

START_TEST(test_leaf_ranges_round_trip)
{
	struct dacce_dict *d = build_with_leaves();

	ck_assert_uint_eq(d->n_leaf_range, 3);
	assert_round_trip(d);
	dacce_dict_free(d);
}
END_TEST

/* A leaf range must stay above every other node's ids, or an ordinary context would read as a leaf call. */
START_TEST(test_leaf_range_below_other_ids)
{
	struct dacce_dict *d = build_with_leaves();
	uint32_t n_in = d->in_start[d->n_nodes];
	uint32_t lowest = d->leaf_range[0].edge;

	ck_assert_uint_ge(d->en[lowest], 2); /* B has two contexts */
	d->en[lowest] = 1;
	expect_rejected(d, n_in, "leaf ranges overlap or reach below another node's ids");
	dacce_dict_free(d);
}
END_TEST

START_TEST(test_leaf_ranges_overlap)
{
	struct dacce_dict *d = build_with_leaves();
	uint32_t n_in = d->in_start[d->n_nodes];

	/* Two leaf nodes' ranges: each node's own list stays valid, together they overlap. */
	ck_assert_uint_ne(d->edge_callee[d->leaf_range[0].edge], d->edge_callee[d->leaf_range[1].edge]);
	d->en[d->leaf_range[1].edge] = d->leaf_range[0].en;
	expect_rejected(d, n_in, "leaf ranges overlap or reach below another node's ids");
	dacce_dict_free(d);
}
END_TEST

START_TEST(test_node_without_path_accepted)
{
	struct dacce_dict *d = build_full();

	ck_assert_uint_eq(d->num_cc[ORPHAN], 0);
	assert_round_trip(d);
	dacce_dict_free(d);
}
END_TEST

/* ------------------------------------------------------------ rules: sites */

RULE_TEST(test_site_kind_unknown, "unknown site kind",
	  d->site_kind[S_MAIN_F] = DACCE_SITE_KIND_COUNT)
RULE_TEST(test_site_caller_out_of_range, "site caller out of range",
	  d->site_caller[S_MAIN_F] = N_NODES)
RULE_TEST(test_root_site_caller, "root site outside the root node",
	  d->site_caller[DACCE_ROOT_SITE_THREAD] = MAIN)
RULE_TEST(test_root_sites_out_of_order, "root sites out of order",
	  d->site_kind[DACCE_ROOT_SITE_MAIN] = DACCE_SITE_ROOT_THREAD;
	  d->site_kind[DACCE_ROOT_SITE_THREAD] = DACCE_SITE_ROOT_MAIN)
RULE_TEST(test_call_site_in_root, "call site in the root node", d->site_caller[S_MAIN_F] = R)
RULE_TEST(test_root_kind_on_call_site, "root kind on a call site",
	  d->site_kind[S_MAIN_F] = DACCE_SITE_ROOT_SIGNAL)

/* ------------------------------------------------------------ rules: edges */

RULE_TEST(test_edge_site_out_of_range, "edge site out of range", d->edge_site[E_IND_H] = N_SITES)
RULE_TEST(test_edge_caller_mismatch, "edge caller differs from its site's",
	  d->edge_caller[E_IND_H] = F)
RULE_TEST(test_edge_callee_out_of_range, "edge callee out of range",
	  d->edge_callee[E_IND_H] = N_NODES)
RULE_TEST(test_edge_calls_root, "edge calls the root node", d->edge_callee[E_IND_H] = R)
RULE_TEST(test_edge_class_unknown, "unknown edge class",
	  d->edge_class[E_IND_H] = DACCE_EDGE_BACK + 1)
RULE_TEST(test_edge_compress_not_bool, "compress flag not 0 or 1", d->edge_compress[E_IND_H] = 2)
RULE_TEST(test_nested_root_encoded, "nested root edge encoded",
	  d->edge_class[E_ROOT_SIG] = DACCE_EDGE_ENCODED)
RULE_TEST(test_encoded_range_past_callee, "encoded range outside the callee's ids",
	  d->en[E_G_H] = 3)
RULE_TEST(test_encoded_range_overflow, "encoded range outside the callee's ids",
	  d->en[E_G_H] = UINT64_MAX - 1)
/* h (4 ids) calling g (2 ids) cannot be encoded: the range cannot fit, whatever En is. */
RULE_TEST(test_encoded_caller_larger_than_callee, "encoded range outside the callee's ids",
	  d->edge_callee[E_H_F_BACK] = G; d->edge_class[E_H_F_BACK] = DACCE_EDGE_ENCODED;
	  d->en[E_H_F_BACK] = 0)
RULE_TEST(test_duplicate_edge, "two edges with the same site and callee",
	  d->edge_callee[E_IND_H] = F)

/* ------------------------------------------------------------ rules: in-edges */

RULE_TEST(test_in_start_not_zero, "in_start does not begin at 0", d->in_start[R] = 1)
RULE_TEST(test_in_start_not_monotonic, "in_start not monotonic", d->in_start[F] = 4)
RULE_TEST(test_in_start_wrong_end, "in_start does not end at n_in_edges",
	  d->in_start[N_NODES] = N_IN_EDGES + 1)
RULE_TEST(test_in_edge_out_of_range, "in_edges entry out of range", d->in_edges[0] = N_EDGES)
RULE_TEST(test_in_edge_not_encoded, "in_edges lists an edge that is not encoded",
	  d->in_edges[6] = E_IND_H)
RULE_TEST(test_in_edge_wrong_node, "in_edges entry under the wrong node",
	  d->in_edges[0] = E_MAIN_F)
RULE_TEST(test_in_edges_unsorted, "in_edges not sorted by en",
	  d->in_edges[1] = E_IND_F; d->in_edges[2] = E_MAIN_F)
RULE_TEST(test_in_edges_duplicate, "in_edges not sorted by en", d->in_edges[2] = E_MAIN_F)
RULE_TEST(test_encoded_ranges_overlap, "encoded ranges overlap", d->en[E_G_H] = 1)
RULE_TEST(test_encoded_range_covers_dummy, "encoded range covers the dummy id", d->dummy[H] = 1)
RULE_TEST(test_encoded_edge_not_listed, "encoded edge missing from in_edges",
	  d->edge_class[E_IND_H] = DACCE_EDGE_ENCODED; d->en[E_IND_H] = 0)

/* A self-call encoded with En 0 satisfies every range rule yet never ends a decode. */
RULE_TEST(test_encoded_cycle, "encoded edges form a cycle",
	  d->num_cc[ORPHAN] = 1; d->edge_class[E_ORPHAN_SELF] = DACCE_EDGE_ENCODED;
	  d->in_edges[N_IN_EDGES] = E_ORPHAN_SELF; d->in_start[N_NODES] = N_IN_EDGES + 1;
	  n_in = N_IN_EDGES + 1)

/* ------------------------------------------------------------ rules: dispatch tables */

static void swap_tables(struct dacce_dict *d)
{
	struct dacce_dispatch first = d->dispatch[0];

	d->dispatch[0] = d->dispatch[1];
	d->dispatch[1] = first;
}

/* Moves callee's entry to the slot just before its home, leaving its home empty. */
static void misplace(struct dacce_dispatch *t, uint32_t callee)
{
	uint32_t mask = (1u << t->bits) - 1;
	uint32_t home = dacce_dispatch_slot(callee, t->bits);
	uint32_t at = table_slot_of(t, callee), edge = t->edge[at];

	for (uint32_t i = 0; i <= mask; i++)
		t->callee[i] = t->edge[i] = DACCE_NONE;
	t->callee[(home - 1) & mask] = callee;
	t->edge[(home - 1) & mask] = edge;
}

/* Stores callee -> edge again in the first empty slot. */
static void store_again(struct dacce_dispatch *t, uint32_t callee, uint32_t edge)
{
	uint32_t empty = table_slot_of(t, DACCE_NONE);

	t->callee[empty] = callee;
	t->edge[empty] = edge;
}

RULE_TEST(test_dispatch_unsorted, "dispatch tables not sorted by site", swap_tables(d))
RULE_TEST(test_dispatch_duplicate_site, "dispatch tables not sorted by site",
	  d->dispatch[T_MAIN_IND].site = S_H_IND)
RULE_TEST(test_dispatch_site_out_of_range, "dispatch site out of range",
	  d->dispatch[T_MAIN_IND].site = N_SITES)
RULE_TEST(test_dispatch_callee_out_of_range, "dispatch callee out of range",
	  d->dispatch[T_H_IND].callee[table_slot_of(&d->dispatch[T_H_IND], F)] = N_NODES)
RULE_TEST(test_dispatch_edge_out_of_range, "dispatch edge out of range",
	  d->dispatch[T_H_IND].edge[table_slot_of(&d->dispatch[T_H_IND], F)] = N_EDGES)
RULE_TEST(test_dispatch_edge_of_other_site, "dispatch entry does not match its edge",
	  d->dispatch[T_H_IND].edge[table_slot_of(&d->dispatch[T_H_IND], F)] = E_IND_F)
RULE_TEST(test_dispatch_edge_of_other_callee, "dispatch entry does not match its edge",
	  d->dispatch[T_MAIN_IND].edge[table_slot_of(&d->dispatch[T_MAIN_IND], F)] = E_IND_G)
RULE_TEST(test_dispatch_stored_twice, "callee stored twice in a dispatch table",
	  store_again(&d->dispatch[T_MAIN_IND], F, E_IND_F))
RULE_TEST(test_dispatch_over_half_full, "dispatch table more than half full",
	  store_again(&d->dispatch[T_MAIN_IND], H, E_IND_H))
RULE_TEST(test_dispatch_unreachable, "dispatch entry unreachable by probing",
	  misplace(&d->dispatch[T_MAIN_IND], G))

/* ------------------------------------------------------------ suite */

static Suite *dict_io_suite(void)
{
	Suite *s;
	TCase *tc_round_trip;
	TCase *tc_framing;
	TCase *tc_payload;
	TCase *tc_rules;
	TCase *tc_dispatch;

	s = suite_create("DictIO");

	/* Round trips and the writer */
	tc_round_trip = tcase_create("RoundTrip");
	tcase_add_test(tc_round_trip, test_round_trip_full);
	tcase_add_test(tc_round_trip, test_round_trip_minimal);
	tcase_add_test(tc_round_trip, test_round_trip_extreme_values);
	tcase_add_test(tc_round_trip, test_round_trip_encoded);
	tcase_add_test(tc_round_trip, test_layout_matches_document);
	tcase_add_test(tc_round_trip, test_empty_slots_written_canonically);
	tcase_add_test(tc_round_trip, test_serialize_refuses_invalid);
	tcase_add_test(tc_round_trip, test_deserialize_arguments);
	suite_add_tcase(s, tc_round_trip);

	/* Header, length and checksum */
	tc_framing = tcase_create("Framing");
	tcase_add_test(tc_framing, test_bad_magic);
	tcase_add_test(tc_framing, test_wrong_version);
	tcase_add_test(tc_framing, test_bad_header_size);
	tcase_add_test(tc_framing, test_unknown_flags);
	tcase_add_test(tc_framing, test_truncated_at_every_length);
	tcase_add_test(tc_framing, test_trailing_bytes);
	tcase_add_test(tc_framing, test_payload_length_too_large);
	tcase_add_test(tc_framing, test_flipped_payload_byte);
	tcase_add_test(tc_framing, test_flipped_checksum);
	suite_add_tcase(s, tc_framing);

	/* Payload sizes, before anything is allocated */
	tc_payload = tcase_create("Payload");
	tcase_add_test(tc_payload, test_payload_too_short);
	tcase_add_test(tc_payload, test_counts_exceed_payload);
	tcase_add_test(tc_payload, test_trailing_bytes_in_payload);
	tcase_add_test(tc_payload, test_compress_new_not_bool);
	tcase_add_test(tc_payload, test_dispatch_bits_out_of_range);
	tcase_add_test(tc_payload, test_dispatch_exceeds_payload);
	tcase_add_test(tc_payload, test_empty_slot_with_edge);
	suite_add_tcase(s, tc_payload);

	/* Consistency of ids, nodes, sites, edges and in-edge lists */
	tc_rules = tcase_create("Rules");
	tcase_add_test(tc_rules, test_no_root_node);
	tcase_add_test(tc_rules, test_root_sites_missing);
	tcase_add_test(tc_rules, test_id_limit_too_large);
	tcase_add_test(tc_rules, test_max_id_not_below_limit);
	tcase_add_test(tc_rules, test_max_id_too_large);
	tcase_add_test(tc_rules, test_dummy_not_bool);
	tcase_add_test(tc_rules, test_num_cc_above_max_id);
	tcase_add_test(tc_rules, test_dummy_without_ids);
	tcase_add_test(tc_rules, test_root_num_cc);
	tcase_add_test(tc_rules, test_root_dummy);
	tcase_add_test(tc_rules, test_node_without_path_accepted);
	tcase_add_test(tc_rules, test_leaf_ranges_round_trip);
	tcase_add_test(tc_rules, test_leaf_range_below_other_ids);
	tcase_add_test(tc_rules, test_leaf_ranges_overlap);
	tcase_add_test(tc_rules, test_site_kind_unknown);
	tcase_add_test(tc_rules, test_site_caller_out_of_range);
	tcase_add_test(tc_rules, test_root_site_caller);
	tcase_add_test(tc_rules, test_root_sites_out_of_order);
	tcase_add_test(tc_rules, test_call_site_in_root);
	tcase_add_test(tc_rules, test_root_kind_on_call_site);
	tcase_add_test(tc_rules, test_edge_site_out_of_range);
	tcase_add_test(tc_rules, test_edge_caller_mismatch);
	tcase_add_test(tc_rules, test_edge_callee_out_of_range);
	tcase_add_test(tc_rules, test_edge_calls_root);
	tcase_add_test(tc_rules, test_edge_class_unknown);
	tcase_add_test(tc_rules, test_edge_compress_not_bool);
	tcase_add_test(tc_rules, test_nested_root_encoded);
	tcase_add_test(tc_rules, test_encoded_range_past_callee);
	tcase_add_test(tc_rules, test_encoded_range_overflow);
	tcase_add_test(tc_rules, test_encoded_caller_larger_than_callee);
	tcase_add_test(tc_rules, test_duplicate_edge);
	tcase_add_test(tc_rules, test_in_start_not_zero);
	tcase_add_test(tc_rules, test_in_start_not_monotonic);
	tcase_add_test(tc_rules, test_in_start_wrong_end);
	tcase_add_test(tc_rules, test_in_edge_out_of_range);
	tcase_add_test(tc_rules, test_in_edge_not_encoded);
	tcase_add_test(tc_rules, test_in_edge_wrong_node);
	tcase_add_test(tc_rules, test_in_edges_unsorted);
	tcase_add_test(tc_rules, test_in_edges_duplicate);
	tcase_add_test(tc_rules, test_encoded_ranges_overlap);
	tcase_add_test(tc_rules, test_encoded_range_covers_dummy);
	tcase_add_test(tc_rules, test_encoded_edge_not_listed);
	tcase_add_test(tc_rules, test_encoded_cycle);
	suite_add_tcase(s, tc_rules);

	/* Dispatch tables */
	tc_dispatch = tcase_create("Dispatch");
	tcase_add_test(tc_dispatch, test_dispatch_unsorted);
	tcase_add_test(tc_dispatch, test_dispatch_duplicate_site);
	tcase_add_test(tc_dispatch, test_dispatch_site_out_of_range);
	tcase_add_test(tc_dispatch, test_dispatch_callee_out_of_range);
	tcase_add_test(tc_dispatch, test_dispatch_edge_out_of_range);
	tcase_add_test(tc_dispatch, test_dispatch_edge_of_other_site);
	tcase_add_test(tc_dispatch, test_dispatch_edge_of_other_callee);
	tcase_add_test(tc_dispatch, test_dispatch_stored_twice);
	tcase_add_test(tc_dispatch, test_dispatch_over_half_full);
	tcase_add_test(tc_dispatch, test_dispatch_unreachable);
	suite_add_tcase(s, tc_dispatch);

	return s;
}

int main(void)
{
	int number_failed;
	Suite *s;
	SRunner *sr;

	s = dict_io_suite();
	sr = srunner_create(s);

	srunner_run_all(sr, CK_NORMAL);
	number_failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (number_failed == 0) ? EXIT_SUCCESS : EXIT_FAILURE;
}
