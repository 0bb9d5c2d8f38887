// SPDX-License-Identifier: MIT
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "decode.h"
#include "dict.h"
#include "machine.h"
#include "testgraph.h"
#include "translate.h"

static struct dacce_dict *encode_epoch(struct testgraph *tg, uint64_t epoch)
{
	struct dacce_encode_opts opts;
	struct dacce_dict *d = NULL;

	dacce_encode_opts_default(&opts);
	opts.epoch = epoch;
	ck_assert_int_eq(dacce_encode(tg->graph, &opts, &d), 0);
	return d;
}

static void assert_names(struct testgraph *tg, const struct dacce_dict *d,
			 const struct dacce_state *st, const char *fn, const char *want)
{
	struct dacce_frame frames[64];
	struct dacce_snapshot snap = dacce_snapshot_of(st, tg_fn(tg, fn));
	char got[256];
	int n = dacce_decode(d, tg->graph, &snap, frames, 64, NULL);

	ck_assert_int_gt(n, 0);
	tg_path_names(tg, frames, n, got, sizeof(got));
	ck_assert_str_eq(got, want);
}

/*
 * The slides' run, stopped at I with two ccStack entries, re-encoded with
 * the new edges known; every frame then returns under the new epoch.
 */
START_TEST(test_live_state_moves_to_the_next_epoch)
{
	struct testgraph tg;
	struct dacce_dict *e0, *e1;
	struct dacce_state st;
	uint32_t root, ab, bd, de, ei, ic, ce;

	tg_init(&tg);
	root = tg_root(&tg, "A");
	ab = tg_call(&tg, "A", "B", 100);
	tg_call(&tg, "A", "C", 50);
	bd = tg_call(&tg, "B", "D", 100);
	tg_call(&tg, "C", "D", 50);
	de = tg_call(&tg, "D", "E", 100);
	tg_call(&tg, "D", "F", 100);
	tg_call(&tg, "F", "I", 300);
	ei = tg_call(&tg, "E", "I", 200);
	tg_call(&tg, "C", "I", 100);
	e0 = encode_epoch(&tg, 0);
	ic = tg_call(&tg, "I", "C", 1);
	ce = tg_call(&tg, "C", "E", 1000);

	uint32_t path[] = { ab, bd, de, ei, ic, ce, ei };
	const char *inner[] = { "A", "B", "D", "E", "I", "C", "E", "I" };

	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, e0, tg.graph, root), 0);
	for (int i = 0; i < 7; i++)
		ck_assert_int_eq(dacce_op_call(&st, e0, tg.graph, path[i]), 0);
	ck_assert_uint_eq(st.cc_depth, 2);

	e1 = encode_epoch(&tg, 1);
	/* E -> I -> C -> E is a cycle: exactly one of its edges is a back edge. */
	ck_assert_uint_eq((e1->edge_class[ce] == DACCE_EDGE_BACK) +
				  (e1->edge_class[ic] == DACCE_EDGE_BACK) +
				  (e1->edge_class[ei] == DACCE_EDGE_BACK), 1);
	ck_assert_int_eq(dacce_translate(e0, e1, tg.graph, &st, tg_fn(&tg, "I"), NULL), 0);
	ck_assert_uint_eq(st.epoch, 1);
	ck_assert_uint_eq(st.cc_depth, 1); /* only the back edge is still pushed */
	assert_names(&tg, e1, &st, "I", "A B D E I C E I");

	/* Unwind under the new epoch, checking every intermediate context. */
	char want[64];

	for (int i = 6; i >= 0; i--) {
		ck_assert_int_eq(dacce_op_return(&st, e1, tg.graph, path[i]), 0);
		want[0] = '\0';
		for (int k = 0; k <= i; k++) {
			strcat(want, inner[k]);
			if (k < i)
				strcat(want, " ");
		}
		assert_names(&tg, e1, &st, inner[i], want);
	}
	ck_assert_uint_eq(st.id, 0);
	ck_assert_uint_eq(st.cc_depth, 0);

	dacce_state_fini(&st);
	dacce_dict_free(e0);
	dacce_dict_free(e1);
	tg_fini(&tg);
}
END_TEST

/* main -> A, then after epoch 0: A -tail-> B, B -> C, C -tail-> D (C's jump of cd_kind). */
struct tail_chain {
	struct dacce_dict *e0;
	uint32_t root, ma, ab_tail, bc, cd_tail;
};

static void tail_chain_init(struct testgraph *tg, struct tail_chain *c, uint64_t bc_freq,
			    enum dacce_site_kind cd_kind)
{
	tg_init(tg);
	c->root = tg_root(tg, "main");
	c->ma = tg_call(tg, "main", "A", 10);
	c->e0 = encode_epoch(tg, 0);
	/* Found after e0: pushed, so A's frame gets a record. */
	c->ab_tail = tg_edge_at(tg, tg_site(tg, "A", DACCE_SITE_TAIL_DIRECT), "B", 5);
	c->bc = tg_call(tg, "B", "C", bc_freq);
	c->cd_tail = tg_edge_at(tg, tg_site(tg, "C", cd_kind), "D", 5);
}

START_TEST(test_tail_records_keep_their_frames)
{
	struct testgraph tg;
	struct tail_chain c;
	struct dacce_dict *e1;
	struct dacce_state st, expect;

	tail_chain_init(&tg, &c, 5, DACCE_SITE_TAIL_INDIRECT);

	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, c.e0, tg.graph, c.root), 0);
	ck_assert_int_eq(dacce_op_call(&st, c.e0, tg.graph, c.ma), 0);
	ck_assert_int_eq(dacce_op_tail(&st, c.e0, tg.graph, c.ab_tail, 0x7ff0), 0);
	ck_assert_int_eq(dacce_op_call(&st, c.e0, tg.graph, c.bc), 0);
	ck_assert_int_eq(dacce_op_tail(&st, c.e0, tg.graph, c.cd_tail, 0x7fe0), 0);

	e1 = encode_epoch(&tg, 1);
	ck_assert_int_eq(dacce_translate(c.e0, e1, tg.graph, &st, tg_fn(&tg, "D"), NULL), 0);
	ck_assert_uint_eq(st.tc_depth, 2);
	ck_assert_uint_eq(st.tc[0].frame, 0x7ff0);
	ck_assert_uint_eq(st.tc[1].frame, 0x7fe0);
	ck_assert_uint_eq(st.cc_depth, 0); /* everything is encoded now */
	assert_names(&tg, e1, &st, "D", "main A B C D");

	/*
	 * D returns to B's caller frame: the state is exactly "in B" of epoch 1,
	 * where A -> B costs nothing, plus A's frame's record, which its return
	 * still goes through.
	 */
	dacce_state_init(&expect, 1);
	ck_assert_int_eq(dacce_op_thread_start(&expect, e1, tg.graph, c.root), 0);
	ck_assert_int_eq(dacce_op_call(&expect, e1, tg.graph, c.ma), 0);
	ck_assert_int_eq(dacce_op_tail(&expect, e1, tg.graph, c.ab_tail, 0x7ff0), 0);
	ck_assert_uint_eq(expect.tc_depth, 0);
	ck_assert_int_eq(dacce_op_frame_exit(&st, 0x7fe0), 0);
	ck_assert_int_eq(dacce_op_return(&st, e1, tg.graph, c.bc), 0);
	ck_assert_uint_eq(st.id, expect.id);
	ck_assert_uint_eq(st.cc_depth, expect.cc_depth);
	ck_assert_uint_eq(st.tc_depth, 1);
	ck_assert_uint_eq(st.tc[0].frame, 0x7ff0);
	ck_assert_int_eq(dacce_op_frame_exit(&st, 0x7ff0), 0);
	ck_assert_int_eq(dacce_op_return(&st, e1, tg.graph, c.ma), 0);
	ck_assert_uint_eq(st.id, 0);
	ck_assert_uint_eq(st.cc_depth, 0);
	ck_assert_uint_eq(st.tc_depth, 0);

	dacce_state_fini(&expect);
	dacce_state_fini(&st);
	dacce_dict_free(c.e0);
	dacce_dict_free(e1);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_failed_translation_leaves_the_state_alone)
{
	struct testgraph tg;
	struct dacce_dict *e0, *e1;
	struct dacce_state st;
	struct dacce_decode_error err = { 0 };
	uint32_t root, ma;

	tg_init(&tg);
	root = tg_root(&tg, "main");
	ma = tg_call(&tg, "main", "A", 10);
	e0 = encode_epoch(&tg, 0);
	e1 = encode_epoch(&tg, 1);
	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, e0, tg.graph, root), 0);
	ck_assert_int_eq(dacce_op_call(&st, e0, tg.graph, ma), 0);
	/* Claiming the thread is in B: not a context of this state. */
	ck_assert_int_eq(dacce_translate(e0, e1, tg.graph, &st, tg_fn(&tg, "B"), &err), -EILSEQ);
	ck_assert_ptr_nonnull(err.message);
	ck_assert_uint_eq(st.epoch, 0);
	ck_assert_int_eq(dacce_translate(e1, e0, tg.graph, &st, tg_fn(&tg, "A"), &err), -EINVAL);
	ck_assert_int_eq(dacce_translate(e0, e1, tg.graph, &st, tg_fn(&tg, "A"), &err), 0);
	ck_assert_uint_eq(st.epoch, 1);
	dacce_state_fini(&st);
	dacce_dict_free(e0);
	dacce_dict_free(e1);
	tg_fini(&tg);
}
END_TEST

/*
 * A frame entered by a tail call that cost nothing holds no record; when the
 * next epoch makes that tail call cost something, the frame would need one,
 * and its return-address slot is not known: not now.
 */
START_TEST(test_frame_without_record_that_would_need_one_waits)
{
	struct testgraph tg;
	struct dacce_dict *e0, *e1;
	struct dacce_state st;
	struct dacce_decode_error err = { 0 };
	uint32_t root, ma, ab_tail, cb;

	tg_init(&tg);
	root = tg_root(&tg, "main");
	ma = tg_call(&tg, "main", "A", 10);
	ab_tail = tg_edge_at(&tg, tg_site(&tg, "A", DACCE_SITE_TAIL_DIRECT), "B", 5);
	e0 = encode_epoch(&tg, 0);
	ck_assert_uint_eq(e0->edge_class[ab_tail], DACCE_EDGE_ENCODED);
	ck_assert_uint_eq(e0->en[ab_tail], 0);

	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, e0, tg.graph, root), 0);
	ck_assert_int_eq(dacce_op_call(&st, e0, tg.graph, ma), 0);
	ck_assert_int_eq(dacce_op_tail(&st, e0, tg.graph, ab_tail, 0x7ff0), 0);
	ck_assert_uint_eq(st.tc_depth, 0);

	/* A hotter way into B: A -> B gets En > 0. */
	tg_call(&tg, "main", "C", 10);
	cb = tg_call(&tg, "C", "B", 1000);
	e1 = encode_epoch(&tg, 1);
	ck_assert_uint_eq(e1->edge_class[ab_tail], DACCE_EDGE_ENCODED);
	ck_assert_uint_gt(e1->en[ab_tail], 0);
	ck_assert_int_eq(dacce_translate(e0, e1, tg.graph, &st, tg_fn(&tg, "B"), &err), -EAGAIN);
	ck_assert_ptr_nonnull(err.message);
	ck_assert_uint_eq(err.keep_free, ab_tail); /* the edge to leave free */
	ck_assert_uint_eq(st.epoch, 0);
	ck_assert_uint_eq(st.tc_depth, 0);

	/* Hotter than C -> B (what the runtime does with keep_free): free again, and the frame goes on. */
	tg.graph->edges[ab_tail].freq = tg.graph->edges[cb].freq + 1;
	dacce_dict_free(e1);
	e1 = encode_epoch(&tg, 1);
	ck_assert_uint_eq(e1->en[ab_tail], 0);
	ck_assert_int_eq(dacce_translate(e0, e1, tg.graph, &st, tg_fn(&tg, "B"), &err), 0);
	ck_assert_uint_eq(st.epoch, 1);
	ck_assert_uint_eq(st.tc_depth, 0);

	dacce_state_fini(&st);
	dacce_dict_free(e0);
	dacce_dict_free(e1);
	tg_fini(&tg);
}
END_TEST

/*
 * A record kept from an earlier epoch names no frame by itself: it is found
 * by the state it saved.  Two frames of the path with the same saved state,
 * either of which could hold it, make the translation wait; different states
 * place it.
 */
static void run_kept_record(uint64_t bc_freq, int want)
{
	struct testgraph tg;
	struct tail_chain c;
	struct dacce_dict *e1, *e2;
	struct dacce_state st;

	tail_chain_init(&tg, &c, bc_freq, DACCE_SITE_TAIL_DIRECT);
	/* Another way into C, hotter than B -> C unless bc_freq is higher. */
	tg_call(&tg, "main", "X", 10);
	tg_call(&tg, "X", "C", 100);

	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, c.e0, tg.graph, c.root), 0);
	ck_assert_int_eq(dacce_op_call(&st, c.e0, tg.graph, c.ma), 0);
	ck_assert_int_eq(dacce_op_tail(&st, c.e0, tg.graph, c.ab_tail, 0x7ff0), 0);
	ck_assert_uint_eq(st.tc_depth, 1);

	/* In e1 A -> B costs nothing: the record stays, and C's tail call makes none. */
	e1 = encode_epoch(&tg, 1);
	ck_assert(dacce_edge_costs_nothing(&(struct dacce_edge_view){
		.class = e1->edge_class[c.ab_tail], .en = e1->en[c.ab_tail] }));
	ck_assert_int_eq(dacce_translate(c.e0, e1, tg.graph, &st, tg_fn(&tg, "B"), NULL), 0);
	ck_assert_uint_eq(st.tc_depth, 1);
	ck_assert_int_eq(dacce_op_call(&st, e1, tg.graph, c.bc), 0);
	ck_assert_int_eq(dacce_op_tail(&st, e1, tg.graph, c.cd_tail, 0x7fe0), 0);
	ck_assert_uint_eq(st.tc_depth, 1);

	e2 = encode_epoch(&tg, 2);
	ck_assert_int_eq(dacce_translate(e1, e2, tg.graph, &st, tg_fn(&tg, "D"), NULL), want);
	if (want == 0) {
		ck_assert_uint_eq(st.tc_depth, 1);
		ck_assert_uint_eq(st.tc[0].frame, 0x7ff0);
		assert_names(&tg, e2, &st, "D", "main A B C D");
	}
	dacce_state_fini(&st);
	dacce_dict_free(c.e0);
	dacce_dict_free(e1);
	dacce_dict_free(e2);
	tg_fini(&tg);
}

START_TEST(test_kept_record_is_placed_by_its_state)
{
	run_kept_record(5, 0); /* B -> C costs something: the two frames differ */
	run_kept_record(1000, -EAGAIN); /* B -> C costs nothing: either frame could hold it */
}
END_TEST

static Suite *translate_suite(void)
{
	Suite *s = suite_create("translate");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_live_state_moves_to_the_next_epoch);
	tcase_add_test(tc, test_tail_records_keep_their_frames);
	tcase_add_test(tc, test_failed_translation_leaves_the_state_alone);
	tcase_add_test(tc, test_frame_without_record_that_would_need_one_waits);
	tcase_add_test(tc, test_kept_record_is_placed_by_its_state);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(translate_suite());
}
