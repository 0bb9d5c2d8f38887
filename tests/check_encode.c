// SPDX-License-Identifier: MIT
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "decode.h"
#include "dict.h"
#include "machine.h"
#include "testgraph.h"

/* The invariants decoding relies on, checked from scratch. */
static void assert_dict_invariants(const struct dacce_dict *d)
{
	uint64_t max_cc = 0;
	uint32_t listed = 0, encoded = 0;

	for (uint32_t n = 0; n < d->n_nodes; n++) {
		uint64_t next = n == DACCE_ROOT_NODE ? 1 : d->dummy[n];

		ck_assert_uint_ge(d->num_cc[n], 1);
		ck_assert_uint_le(d->num_cc[n], d->id_limit);
		for (uint32_t k = d->in_start[n]; k < d->in_start[n + 1]; k++) {
			uint32_t e = d->in_edges[k];

			ck_assert_uint_eq(d->edge_class[e], DACCE_EDGE_ENCODED);
			ck_assert_uint_eq(d->edge_callee[e], n);
			/* Ranges tile [dummy, numCC) in order. */
			ck_assert_uint_eq(d->en[e], next);
			next += d->num_cc[d->edge_caller[e]];
			listed++;
		}
		ck_assert_uint_eq(next, d->num_cc[n]);
		if (d->num_cc[n] > max_cc)
			max_cc = d->num_cc[n];
	}
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
	tcase_add_test(tc, test_dispatch_table_for_many_targets);
	tcase_add_test(tc, test_bad_options);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(encode_suite());
}
