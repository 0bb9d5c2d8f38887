// SPDX-License-Identifier: MIT
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "decode.h"
#include "dict.h"
#include "dict_io.h"
#include "machine.h"
#include "translate.h"
#include "testgraph.h"

/* The invariants decoding relies on, checked from scratch. */
static void assert_dict_invariants(const struct dacce_dict *d)
{
	uint64_t max_cc = 0, floor = 0, leaf_next;
	uint32_t listed = 0, encoded = 0;

	for (uint32_t n = 0; n < d->n_nodes; n++)
		if (d->dummy[n] != DACCE_DUMMY_LEAF && d->num_cc[n] > floor)
			floor = d->num_cc[n];
	for (uint32_t n = 0; n < d->n_nodes; n++) {
		uint64_t next = n == DACCE_ROOT_NODE ? 1 : d->dummy[n];

		ck_assert_uint_ge(d->num_cc[n], 1);
		ck_assert_uint_le(d->num_cc[n], d->id_limit);
		for (uint32_t k = d->in_start[n]; k < d->in_start[n + 1]; k++) {
			uint32_t e = d->in_edges[k];

			ck_assert_uint_eq(d->edge_class[e], DACCE_EDGE_ENCODED);
			ck_assert_uint_eq(d->edge_callee[e], n);
			listed++;
			if (d->dummy[n] == DACCE_DUMMY_LEAF)
				continue; /* checked below, all leaf nodes together */
			/* Ranges tile [dummy, numCC) in order. */
			ck_assert_uint_eq(d->en[e], next);
			next += d->num_cc[d->edge_caller[e]];
		}
		if (d->dummy[n] != DACCE_DUMMY_LEAF)
			ck_assert_uint_eq(next, d->num_cc[n]);
		if (d->num_cc[n] > max_cc)
			max_cc = d->num_cc[n];
	}
	/* Leaf ranges tile [floor, numCC of every leaf node), above every other node's ids. */
	leaf_next = floor;
	for (uint32_t k = 0; k < d->n_leaf_range; k++) {
		ck_assert_uint_eq(d->leaf_range[k].en, leaf_next);
		leaf_next = d->leaf_range[k].end;
	}
	for (uint32_t n = 0; n < d->n_nodes; n++)
		if (d->dummy[n] == DACCE_DUMMY_LEAF)
			ck_assert_uint_eq(d->num_cc[n], leaf_next);
	for (uint32_t e = 0; e < d->n_edges; e++)
		encoded += d->edge_class[e] == DACCE_EDGE_ENCODED;
	ck_assert_uint_eq(listed, encoded);
	ck_assert_uint_eq(d->max_id, max_cc - 1);
}

static struct dacce_dict *encode_with(struct testgraph *tg, uint64_t limit, uint32_t dispatch_min)
{
	struct dacce_encode_opts opts;
	struct dacce_dict *d = NULL;

	dacce_encode_opts_default(&opts);
	if (limit)
		opts.id_limit = limit;
	opts.dispatch_min_targets = dispatch_min;
	ck_assert_int_eq(dacce_encode(tg->graph, &opts, &d), 0);
	assert_dict_invariants(d);
	return d;
}

START_TEST(test_recursion_makes_back_edges)
{
	struct testgraph tg;
	struct dacce_dict *d;

	tg_init(&tg);
	tg_root(&tg, "main");
	uint32_t ma = tg_call(&tg, "main", "A", 10);
	uint32_t aa = tg_call(&tg, "A", "A", 1000);
	uint32_t ab = tg_call(&tg, "A", "B", 10);
	uint32_t ba = tg_call(&tg, "B", "A", 10);
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->edge_class[aa], DACCE_EDGE_BACK);
	ck_assert_uint_eq(d->edge_class[ba], DACCE_EDGE_BACK);
	ck_assert_uint_eq(d->edge_class[ma], DACCE_EDGE_ENCODED);
	ck_assert_uint_eq(d->edge_class[ab], DACCE_EDGE_ENCODED);
	ck_assert(d->edge_compress[aa]);
	ck_assert_uint_eq(d->max_id, 0);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_hottest_incoming_edge_costs_nothing)
{
	struct testgraph tg;
	struct dacce_dict *d;

	tg_init(&tg);
	tg_root(&tg, "main");
	tg_call(&tg, "main", "B", 1);
	tg_call(&tg, "main", "C", 1);
	uint32_t bd = tg_call(&tg, "B", "D", 1);
	uint32_t cd = tg_call(&tg, "C", "D", 100);
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->en[cd], 0);
	ck_assert_uint_eq(d->en[bd], 1);
	dacce_dict_free(d);

	/* The hot path moves; the next epoch follows it. */
	tg.graph->edges[bd].freq = 1000;
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->en[bd], 0);
	ck_assert_uint_eq(d->en[cd], 1);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_node_only_reached_by_signal_gets_dummy_range)
{
	struct testgraph tg;
	struct dacce_dict *d;
	uint32_t sig, hx, h, ah;

	tg_init(&tg);
	tg_root(&tg, "main");
	ck_assert_int_eq(dacce_graph_add_root_edge(tg.graph, DACCE_ROOT_SITE_SIGNAL,
						   tg_fn(&tg, "H"), &sig), 0);
	hx = tg_call(&tg, "H", "X", 5);
	h = tg_fn(&tg, "H");
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->edge_class[sig], DACCE_EDGE_UNENCODED);
	ck_assert_uint_eq(d->dummy[h], 1);
	ck_assert_uint_eq(d->num_cc[h], 1);
	ck_assert_uint_eq(d->en[hx], 0);
	dacce_dict_free(d);

	/* Once main calls H too, H is reachable: no dummy. */
	ah = tg_call(&tg, "main", "H", 50);
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->dummy[h], 0);
	ck_assert_uint_eq(d->en[ah], 0);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

/* A chain of n diamonds has 2^n paths to its end. */
static void build_diamonds(struct testgraph *tg, int n)
{
	char from[16], left[16], right[16], to[16];

	tg_root(tg, "d0");
	for (int i = 0; i < n; i++) {
		snprintf(from, sizeof(from), "d%d", i);
		snprintf(left, sizeof(left), "l%d", i);
		snprintf(right, sizeof(right), "r%d", i);
		snprintf(to, sizeof(to), "d%d", i + 1);
		tg_call(tg, from, left, 10 + (uint64_t)i);
		tg_call(tg, from, right, 5);
		tg_call(tg, left, to, 10);
		tg_call(tg, right, to, 1);
	}
}

START_TEST(test_demotion_keeps_ids_within_limit)
{
	struct testgraph tg;
	struct dacce_dict *d;
	uint32_t demoted = 0;

	tg_init(&tg);
	build_diamonds(&tg, 20); /* 2^20 contexts at the end, 84 nodes */
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->max_id, (1u << 20) - 1);
	dacce_dict_free(d);

	d = encode_with(&tg, 1000, 8);
	ck_assert_uint_lt(d->max_id, 1000);
	for (uint32_t e = 0; e < d->n_edges; e++)
		demoted += d->edge_class[e] == DACCE_EDGE_UNENCODED;
	ck_assert_uint_gt(demoted, 0);
	/* Demotion drops the coldest edges: the hot left path stays encoded. */
	for (uint32_t e = 0; e < d->n_edges; e++)
		if (d->edge_class[e] == DACCE_EDGE_UNENCODED)
			ck_assert_uint_le(tg.graph->edges[e].freq, 5);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_default_limit_holds_for_huge_context_counts)
{
	struct testgraph tg;
	struct dacce_dict *d;
	uint32_t demoted = 0;

	tg_init(&tg);
	build_diamonds(&tg, 70); /* 2^70 contexts: past any 64-bit id */
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_lt(d->max_id, DACCE_ID_LIMIT_DEFAULT);
	ck_assert_uint_ge(d->max_id, DACCE_ID_LIMIT_DEFAULT / 2);
	for (uint32_t e = 0; e < d->n_edges; e++)
		demoted += d->edge_class[e] == DACCE_EDGE_UNENCODED;
	ck_assert_uint_gt(demoted, 0);
	ck_assert_uint_lt(demoted, 20);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_demoted_contexts_still_decode)
{
	struct testgraph tg;
	struct dacce_dict *d;
	struct dacce_state st;
	struct dacce_frame frames[128];
	uint32_t root;

	tg_init(&tg);
	build_diamonds(&tg, 12);
	root = tg_root(&tg, "d0");
	d = encode_with(&tg, 7, 8);
	/* Walk every one of the 2^12 paths to the end and decode it. */
	for (uint32_t path = 0; path < (1u << 12); path++) {
		uint32_t walked[64], n = 0;

		dacce_state_init(&st, d->epoch);
		ck_assert_int_eq(dacce_op_thread_start(&st, d, tg.graph, root), 0);
		for (int i = 0; i < 12; i++) {
			/* Edges of diamond i: 4 per diamond, in tg_call order. */
			uint32_t base = 1 + 4 * (uint32_t)i; /* edge 0 is the root edge */
			uint32_t first = (path >> i) & 1 ? base + 1 : base;
			uint32_t second = (path >> i) & 1 ? base + 3 : base + 2;

			walked[n++] = first;
			walked[n++] = second;
			ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, first), 0);
			ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, second), 0);
		}
		struct dacce_snapshot snap = dacce_snapshot_of(&st, tg_fn(&tg, "d12"));
		int got = dacce_decode(d, tg.graph, &snap, frames, 128, NULL);

		ck_assert_int_eq(got, 25);
		for (uint32_t i = 0; i < n; i++)
			ck_assert_uint_eq(frames[i].edge, walked[n - 1 - i]);
		ck_assert_uint_eq(frames[24].edge, root);
		dacce_state_fini(&st);
	}
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

/*
 * main calls qsort (a library: pinned), qsort calls back cmp, cmp calls D;
 * main also calls cmp directly.  However hot the pinned edge, it stays on the
 * ccStack, and the callback's context decodes as partial, never as main->cmp.
 */
START_TEST(test_pinned_edge_is_never_encoded)
{
	struct testgraph tg;
	struct dacce_dict *d;
	struct dacce_state st;
	struct dacce_frame frames[16];
	uint32_t root;

	tg_init(&tg);
	root = tg_root(&tg, "main");
	uint32_t mq = tg_call(&tg, "main", "qsort", 1000);
	uint32_t mc = tg_call(&tg, "main", "cmp", 10);
	uint32_t cd = tg_call(&tg, "cmp", "D", 10);
	ck_assert_int_eq(dacce_graph_pin_edge(tg.graph, mq), 0);
	ck_assert_int_eq(dacce_graph_pin_edge(tg.graph, 12345), -EINVAL);
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->edge_class[mq], DACCE_EDGE_UNENCODED);
	ck_assert_uint_eq(d->edge_class[mc], DACCE_EDGE_ENCODED);
	ck_assert_uint_eq(d->edge_class[cd], DACCE_EDGE_ENCODED);

	/* main -> qsort (pushed) -> [library calls cmp: no edge] -> cmp -> D */
	dacce_state_init(&st, d->epoch);
	ck_assert_int_eq(dacce_op_thread_start(&st, d, tg.graph, root), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, mq), 0);
	ck_assert_uint_eq(st.cc_depth, 1);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, cd), 0);
	struct dacce_snapshot snap = dacce_snapshot_of(&st, tg_fn(&tg, "D"));
	/* No encoded path leads from qsort to D: an error, not main -> cmp -> D. */
	ck_assert_int_lt(dacce_decode(d, tg.graph, &snap, frames, 16, NULL), 0);
	dacce_state_fini(&st);
	dacce_dict_free(d);

	/* Only ever called back: E gets a dummy range, and still no sub-path may start there. */
	uint32_t ef = tg_call(&tg, "E", "F", 10);
	d = encode_with(&tg, 0, 8);
	ck_assert(d->dummy[tg_fn(&tg, "E")]);
	dacce_state_init(&st, d->epoch);
	ck_assert_int_eq(dacce_op_thread_start(&st, d, tg.graph, root), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, mq), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, ef), 0);
	snap = dacce_snapshot_of(&st, tg_fn(&tg, "F"));
	ck_assert_int_lt(dacce_decode(d, tg.graph, &snap, frames, 16, NULL), 0);
	dacce_state_fini(&st);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

/* Decodes st ending in node, outermost first, into buf. */
static int decode_names(struct testgraph *tg, const struct dacce_dict *d,
			const struct dacce_state *st, uint32_t node, char *buf, size_t len)
{
	struct dacce_frame frames[32];
	struct dacce_snapshot snap = dacce_snapshot_of(st, node);
	int n = dacce_decode(d, tg->graph, &snap, frames, 32, NULL);

	buf[0] = '\0';
	if (n > 0)
		tg_path_names(tg, frames, n, buf, len);
	return n;
}

/*
 * An interpreter's shape (lua5.4's table.sort): main -> D (call) -> V
 * (execute) -> P (precall) -> S (the C function sort, entered once) -> K
 * (lua_callk, the comparator call) -> D again.  The cycle's cold edge, P ->
 * S, is the one to push; K -> D, taken for every comparison, is encoded.  A
 * search from main met K -> D last, reaching its ancestor D, and pushed it.
 */
START_TEST(test_cycle_pushes_its_coldest_edge)
{
	struct testgraph tg;
	struct dacce_dict *d;
	struct dacce_state st;
	uint32_t e[7];
	char names[256];

	tg_init(&tg);
	e[0] = tg_root(&tg, "main");
	e[1] = tg_call(&tg, "main", "D", 10);
	e[2] = tg_call(&tg, "D", "V", 5000);
	e[3] = tg_call(&tg, "V", "P", 5000);
	e[4] = tg_call(&tg, "P", "S", 1);
	e[5] = tg_call(&tg, "S", "K", 4000);
	e[6] = tg_call(&tg, "K", "D", 4000);
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->edge_class[e[4]], DACCE_EDGE_BACK);
	for (int i = 1; i < 7; i++)
		if (i != 4)
			ck_assert_uint_eq(d->edge_class[e[i]], DACCE_EDGE_ENCODED);

	/* main D V P S K D V: decodes whole, the pushed P -> S included. */
	dacce_state_init(&st, d->epoch);
	ck_assert_int_eq(dacce_op_thread_start(&st, d, tg.graph, e[0]), 0);
	for (int i = 1; i <= 6; i++)
		ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, e[i]), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, e[2]), 0);
	ck_assert_int_eq(decode_names(&tg, d, &st, tg_fn(&tg, "V"), names, sizeof(names)), 8);
	ck_assert_str_eq(names, "main D V P S K D V");
	ck_assert_uint_eq(st.cc_depth, 1); /* the push of P -> S */
	dacce_state_fini(&st);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

/*
 * An edge free for good stays encoded at 0 even where calls alone would
 * make it the back edge of its cycle: main -> U -> V (kept, rarely taken),
 * V -> U (hot).  The hot edge is pushed instead.
 */
START_TEST(test_kept_edge_is_never_the_back_edge)
{
	struct testgraph tg;
	struct dacce_dict *d;
	uint32_t mu, uv, vu;

	tg_init(&tg);
	tg_root(&tg, "main");
	mu = tg_call(&tg, "main", "U", 1);
	uv = tg_call(&tg, "U", "V", 1);
	vu = tg_call(&tg, "V", "U", 100000);
	ck_assert_int_eq(dacce_graph_keep_free_edge(tg.graph, uv), 0);
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->edge_class[uv], DACCE_EDGE_ENCODED);
	ck_assert_uint_eq(d->en[uv], 0);
	ck_assert_uint_eq(d->edge_class[vu], DACCE_EDGE_BACK);
	ck_assert_uint_eq(d->edge_class[mu], DACCE_EDGE_ENCODED);
	dacce_dict_free(d);

	/* Without the promise, the calls decide. */
	tg.graph->edges[uv].flags &= (uint8_t)~DACCE_EDGE_KEEP_FREE;
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->edge_class[uv], DACCE_EDGE_BACK);
	ck_assert_uint_eq(d->edge_class[vu], DACCE_EDGE_ENCODED);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

/*
 * T's callers: main (hottest: En 0), X32 (2^32 contexts, through 32
 * diamonds) and Y (one context, coldest).  Heat order alone gives Y an En
 * past 2^32, which the runtime adds with a 64-bit immediate; Y goes before
 * X32 instead, since no order demotes anything.  Both decode.
 */
START_TEST(test_small_ranges_come_before_large_ones)
{
	struct testgraph tg;
	struct dacce_dict *d;
	struct dacce_state st;
	uint32_t mt, xt, yt, my, chain[1 + 4 * 32];
	char names[2048], x[16], a[16], b[16], next[16];
	int n = 0;

	tg_init(&tg);
	chain[n++] = tg_root(&tg, "main");
	chain[n++] = tg_call(&tg, "main", "X0", 5);
	for (int i = 0; i < 32; i++) {
		snprintf(x, sizeof(x), "X%d", i);
		snprintf(a, sizeof(a), "A%d", i);
		snprintf(b, sizeof(b), "B%d", i);
		snprintf(next, sizeof(next), "X%d", i + 1);
		chain[n++] = tg_call(&tg, x, a, 5);
		tg_call(&tg, x, b, 5);
		chain[n++] = tg_call(&tg, a, next, 5);
		tg_call(&tg, b, next, 5);
	}
	mt = tg_call(&tg, "main", "T", 100);
	xt = tg_call(&tg, "X32", "T", 50);
	my = tg_call(&tg, "main", "Y", 10);
	yt = tg_call(&tg, "Y", "T", 10);
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->num_cc[tg_fn(&tg, "X32")], (uint64_t)1 << 32);
	ck_assert_uint_eq(d->en[mt], 0);
	ck_assert_uint_eq(d->en[yt], 1);
	ck_assert_uint_eq(d->en[xt], 2);
	ck_assert_uint_eq(d->edge_class[xt], DACCE_EDGE_ENCODED);

	dacce_state_init(&st, d->epoch);
	ck_assert_int_eq(dacce_op_thread_start(&st, d, tg.graph, chain[0]), 0);
	for (int i = 1; i < n; i++)
		ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, chain[i]), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, xt), 0);
	{
		struct dacce_frame frames[80];
		struct dacce_snapshot snap = dacce_snapshot_of(&st, tg_fn(&tg, "T"));

		ck_assert_int_eq(dacce_decode(d, tg.graph, &snap, frames, 80, NULL), n + 1);
		tg_path_names(&tg, frames, n + 1, names, sizeof(names));
	}
	ck_assert(strncmp(names, "main X0 A0 X1", 13) == 0);
	ck_assert_ptr_nonnull(strstr(names, "A31 X32 T"));
	dacce_state_fini(&st);

	dacce_state_init(&st, d->epoch);
	ck_assert_int_eq(dacce_op_thread_start(&st, d, tg.graph, chain[0]), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, my), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, yt), 0);
	ck_assert_int_eq(decode_names(&tg, d, &st, tg_fn(&tg, "T"), names, sizeof(names)), 3);
	ck_assert_str_eq(names, "main Y T");
	dacce_state_fini(&st);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

/*
 * main -> {A, B} -> C; A -> A recursion; leaf calls: A -> malloc, B -> malloc,
 * C -> strlen (hottest), main -> free.
 */
static void leaf_graph(struct testgraph *tg, uint32_t e[8])
{
	tg_init(tg);
	e[0] = tg_root(tg, "main");
	e[1] = tg_call(tg, "main", "A", 10);
	e[2] = tg_call(tg, "main", "B", 5);
	e[3] = tg_call(tg, "A", "C", 10);
	e[4] = tg_call(tg, "B", "C", 5);
	e[5] = tg_call(tg, "A", "malloc", 100);
	e[6] = tg_call(tg, "B", "malloc", 50);
	e[7] = tg_call(tg, "C", "strlen", 1000);
	for (int i = 5; i < 8; i++)
		ck_assert_int_eq(dacce_graph_leaf_edge(tg->graph, e[i]), 0);
	ck_assert_int_eq(dacce_graph_leaf_edge(tg->graph, 12345), -EINVAL);
}

START_TEST(test_leaf_calls_share_an_id_space_above_all_others)
{
	struct testgraph tg;
	struct dacce_dict *d;
	struct dacce_state st;
	uint32_t e[8], mf;
	char names[256];

	leaf_graph(&tg, e);
	mf = tg_call(&tg, "main", "free", 3);
	ck_assert_int_eq(dacce_graph_leaf_edge(tg.graph, mf), 0);
	d = encode_with(&tg, 0, 8);
	/* C has the most contexts (2): leaf ids start there, the hottest leaf edge first. */
	ck_assert_uint_eq(d->num_cc[tg_fn(&tg, "C")], 2);
	ck_assert_uint_eq(d->en[e[7]], 2);
	ck_assert_uint_eq(d->en[e[5]], 4);
	ck_assert_uint_eq(d->en[e[6]], 5);
	ck_assert_uint_eq(d->en[mf], 6);
	ck_assert_uint_eq(d->n_leaf_range, 4);
	ck_assert_uint_eq(d->max_id, 6);
	ck_assert_uint_eq(d->dummy[tg_fn(&tg, "strlen")], DACCE_DUMMY_LEAF);
	ck_assert_uint_eq(d->dummy[tg_fn(&tg, "C")], 0);

	/* main -> B -> C -> strlen: inside the leaf call, the id alone says where. */
	dacce_state_init(&st, d->epoch);
	ck_assert_int_eq(dacce_op_thread_start(&st, d, tg.graph, e[0]), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, e[2]), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, e[4]), 0);
	/* Not in a leaf call yet: no leaf range holds C's id. */
	ck_assert_int_lt(decode_names(&tg, d, &st, DACCE_IN_LEAF, names, sizeof(names)), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, e[7]), 0);
	ck_assert_int_eq(st.cc_depth, 0);
	ck_assert_int_eq(decode_names(&tg, d, &st, DACCE_IN_LEAF, names, sizeof(names)), 4);
	ck_assert_str_eq(names, "main B C strlen");
	ck_assert_int_eq(decode_names(&tg, d, &st, tg_fn(&tg, "strlen"), names, sizeof(names)), 4);
	ck_assert_str_eq(names, "main B C strlen");
	ck_assert_int_eq(dacce_op_return(&st, d, tg.graph, e[7]), 0);
	ck_assert_int_lt(decode_names(&tg, d, &st, DACCE_IN_LEAF, names, sizeof(names)), 0);
	dacce_state_fini(&st);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_leaf_call_above_pushed_entries_and_under_a_signal)
{
	struct testgraph tg;
	struct dacce_dict *d;
	struct dacce_state st;
	uint32_t e[8], aa, sig;
	char names[256];

	leaf_graph(&tg, e);
	aa = tg_call(&tg, "A", "A", 10);
	ck_assert_int_eq(dacce_graph_add_root_edge(tg.graph, DACCE_ROOT_SITE_SIGNAL,
						    tg_fn(&tg, "H"), &sig), 0);
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->edge_class[aa], DACCE_EDGE_BACK);

	/* main -> A -> A (pushed) -> malloc: a sub-path above the entry, offset by maxID + 1. */
	dacce_state_init(&st, d->epoch);
	ck_assert_int_eq(dacce_op_thread_start(&st, d, tg.graph, e[0]), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, e[1]), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, aa), 0);
	ck_assert_int_eq(dacce_op_call(&st, d, tg.graph, e[5]), 0);
	ck_assert_uint_gt(st.id, d->max_id);
	ck_assert_int_eq(decode_names(&tg, d, &st, DACCE_IN_LEAF, names, sizeof(names)), 4);
	ck_assert_str_eq(names, "main A A malloc");

	/* A signal inside malloc: the handler's root continues in the leaf call. */
	ck_assert_int_eq(dacce_op_nested_enter(&st, d, sig, DACCE_IN_LEAF), 0);
	ck_assert_int_eq(decode_names(&tg, d, &st, tg_fn(&tg, "H"), names, sizeof(names)), 5);
	ck_assert_str_eq(names, "main A A malloc H");
	ck_assert_int_eq(dacce_op_nested_leave(&st, sig), 0);
	dacce_state_fini(&st);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_leaf_state_translates_to_the_next_epoch)
{
	struct testgraph tg;
	struct dacce_dict *from, *to;
	struct dacce_state st;
	uint32_t e[8];
	char names[256];

	leaf_graph(&tg, e);
	from = encode_with(&tg, 0, 8);
	dacce_state_init(&st, from->epoch);
	ck_assert_int_eq(dacce_op_thread_start(&st, from, tg.graph, e[0]), 0);
	ck_assert_int_eq(dacce_op_call(&st, from, tg.graph, e[2]), 0);
	ck_assert_int_eq(dacce_op_call(&st, from, tg.graph, e[6]), 0);
	/* The hot leaf edge moves: B -> malloc comes first in the next epoch. */
	tg.graph->edges[e[6]].freq = 100000;
	struct dacce_encode_opts opts;

	dacce_encode_opts_default(&opts);
	opts.epoch = 1;
	ck_assert_int_eq(dacce_encode(tg.graph, &opts, &to), 0);
	assert_dict_invariants(to);
	ck_assert_uint_ne(to->en[e[6]], from->en[e[6]]);
	ck_assert_int_eq(dacce_translate(from, to, tg.graph, &st, DACCE_IN_LEAF, NULL), 0);
	ck_assert_int_eq(decode_names(&tg, to, &st, DACCE_IN_LEAF, names, sizeof(names)), 3);
	ck_assert_str_eq(names, "main B malloc");
	/* What the new epoch's code undoes on return leaves B's own context. */
	ck_assert_int_eq(dacce_op_return(&st, to, tg.graph, e[6]), 0);
	ck_assert_int_eq(decode_names(&tg, to, &st, tg_fn(&tg, "B"), names, sizeof(names)), 2);
	ck_assert_str_eq(names, "main B");
	dacce_state_fini(&st);
	dacce_dict_free(from);
	dacce_dict_free(to);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_dispatch_table_for_many_targets)
{
	struct testgraph tg;
	struct dacce_dict *d;
	const struct dacce_dispatch *table;
	uint32_t wide, narrow, edges[20];
	char name[16];

	tg_init(&tg);
	tg_root(&tg, "main");
	wide = tg_site(&tg, "main", DACCE_SITE_INDIRECT);
	narrow = tg_site(&tg, "main", DACCE_SITE_INDIRECT);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		edges[i] = tg_edge_at(&tg, wide, name, (uint64_t)i);
		if (i < 5)
			tg_edge_at(&tg, narrow, name, 1);
	}
	d = encode_with(&tg, 0, 8);
	ck_assert_uint_eq(d->n_dispatch, 1);
	table = dacce_dict_dispatch(d, wide);
	ck_assert_ptr_nonnull(table);
	ck_assert_ptr_null(dacce_dict_dispatch(d, narrow));
	ck_assert_uint_ge(1u << table->bits, 40);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_uint_eq(dacce_dispatch_lookup(table, tg_fn(&tg, name)), edges[i]);
	}
	ck_assert_uint_eq(dacce_dispatch_lookup(table, tg_fn(&tg, "main")), DACCE_NONE);
	dacce_dict_free(d);

	d = encode_with(&tg, 0, 0);
	ck_assert_uint_eq(d->n_dispatch, 0);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_bad_options)
{
	struct testgraph tg;
	struct dacce_encode_opts opts;
	struct dacce_dict *d = NULL;

	tg_init(&tg);
	dacce_encode_opts_default(&opts);
	opts.id_limit = DACCE_ID_LIMIT_DEFAULT + 1;
	ck_assert_int_eq(dacce_encode(tg.graph, &opts, &d), -EINVAL);
	ck_assert_int_eq(dacce_encode(NULL, &opts, &d), -EINVAL);
	ck_assert_int_eq(dacce_encode(tg.graph, &opts, NULL), -EINVAL);
	ck_assert_int_eq(dacce_encode(tg.graph, NULL, &d), 0);
	dacce_dict_free(d);
	tg_fini(&tg);
}
END_TEST

/* The encoding's bytes, for comparing two dictionaries. */
static void serialize(const struct dacce_dict *d, uint8_t **buf, size_t *len)
{
	ck_assert_int_eq(dacce_dict_serialize(d, buf, len), 0);
}

/*
 * The runtime encodes a copy made under its lock while the graph grows
 * (runtime/epoch.c): the copy's encoding is the graph's at the time of the
 * copy, whatever the graph gains after it, and a copy reused for a larger
 * graph encodes that one.
 */
START_TEST(test_copy_encodes_as_the_graph_did)
{
	struct testgraph tg;
	struct dacce_graph *copy = dacce_graph_new_copy();
	struct dacce_dict *before = NULL, *from_copy = NULL, *after = NULL, *again = NULL;
	uint8_t *a = NULL, *b = NULL, *c = NULL, *e = NULL;
	size_t la, lb, lc, le;
	uint32_t site;

	ck_assert_ptr_nonnull(copy);
	tg_init(&tg);
	tg_root(&tg, "main");
	tg_call(&tg, "main", "a", 10);
	tg_call(&tg, "main", "b", 3);
	tg_call(&tg, "a", "c", 7);
	tg_call(&tg, "b", "c", 9);
	tg_call(&tg, "c", "a", 2); /* a cycle */
	site = tg_site(&tg, "b", DACCE_SITE_INDIRECT);
	tg_edge_at(&tg, site, "a", 4);
	tg_edge_at(&tg, site, "d", 1);
	ck_assert_int_eq(dacce_encode(tg.graph, NULL, &before), 0);
	ck_assert_int_eq(dacce_graph_copy_for_encoding(tg.graph, copy), 0);
	/* The graph grows after the copy. */
	tg_call(&tg, "d", "e", 50);
	tg_call(&tg, "main", "e", 1);
	tg.graph->edges[0].freq = 1000;
	ck_assert_int_eq(dacce_encode(copy, NULL, &from_copy), 0);
	assert_dict_invariants(from_copy);
	serialize(before, &a, &la);
	serialize(from_copy, &b, &lb);
	ck_assert_uint_eq(la, lb);
	ck_assert_mem_eq(a, b, la);
	/* Reused for the grown graph: its encoding, not the old one's. */
	ck_assert_int_eq(dacce_encode(tg.graph, NULL, &after), 0);
	ck_assert_int_eq(dacce_graph_copy_for_encoding(tg.graph, copy), 0);
	ck_assert_int_eq(dacce_encode(copy, NULL, &again), 0);
	ck_assert_uint_eq(again->n_edges, tg.graph->n_edges);
	serialize(after, &c, &lc);
	serialize(again, &e, &le);
	ck_assert_uint_eq(lc, le);
	ck_assert_mem_eq(c, e, lc);
	/* Not into a graph of its own: it has nodes and indexes the copy would leave stale. */
	ck_assert_int_eq(dacce_graph_copy_for_encoding(copy, tg.graph), -EINVAL);
	ck_assert_int_eq(dacce_graph_copy_for_encoding(NULL, copy), -EINVAL);
	free(a);
	free(b);
	free(c);
	free(e);
	dacce_dict_free(before);
	dacce_dict_free(from_copy);
	dacce_dict_free(after);
	dacce_dict_free(again);
	dacce_graph_free(copy);
	tg_fini(&tg);
}
END_TEST

static Suite *encode_suite(void)
{
	Suite *s = suite_create("encode");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_recursion_makes_back_edges);
	tcase_add_test(tc, test_hottest_incoming_edge_costs_nothing);
	tcase_add_test(tc, test_node_only_reached_by_signal_gets_dummy_range);
	tcase_add_test(tc, test_demotion_keeps_ids_within_limit);
	tcase_add_test(tc, test_default_limit_holds_for_huge_context_counts);
	tcase_add_test(tc, test_demoted_contexts_still_decode);
	tcase_add_test(tc, test_pinned_edge_is_never_encoded);
	tcase_add_test(tc, test_leaf_calls_share_an_id_space_above_all_others);
	tcase_add_test(tc, test_leaf_call_above_pushed_entries_and_under_a_signal);
	tcase_add_test(tc, test_leaf_state_translates_to_the_next_epoch);
	tcase_add_test(tc, test_dispatch_table_for_many_targets);
	tcase_add_test(tc, test_cycle_pushes_its_coldest_edge);
	tcase_add_test(tc, test_kept_edge_is_never_the_back_edge);
	tcase_add_test(tc, test_small_ranges_come_before_large_ones);
	tcase_add_test(tc, test_bad_options);
	tcase_add_test(tc, test_copy_encodes_as_the_graph_did);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(encode_suite());
}
