// SPDX-License-Identifier: MIT
/* The worked examples of the DACCE slides, PCCE's Fig. 4 and DACCE section 3.3. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "decode.h"
#include "dict.h"
#include "machine.h"
#include "testgraph.h"

static struct dacce_dict *encode_default(struct testgraph *tg, uint64_t epoch)
{
	struct dacce_encode_opts opts;
	struct dacce_dict *dict = NULL;

	dacce_encode_opts_default(&opts);
	opts.epoch = epoch;
	ck_assert_int_eq(dacce_encode(tg->graph, &opts, &dict), 0);
	return dict;
}

static void assert_decodes_to(struct testgraph *tg, const struct dacce_dict *dict,
			      const struct dacce_state *st, const char *fn, const char *want)
{
	struct dacce_frame frames[64];
	struct dacce_decode_error err = { 0 };
	struct dacce_snapshot snap = dacce_snapshot_of(st, tg_fn(tg, fn));
	char got[256];
	int n = dacce_decode(dict, tg->graph, &snap, frames, 64, &err);

	ck_assert_msg(n > 0, "decode failed: %d %s", n, err.message ? err.message : "");
	tg_path_names(tg, frames, n, got, sizeof(got));
	ck_assert_str_eq(got, want);
}

/*
 * Slides 17-25: maxID = 4; the run A B D E I, then the new edges I->C and
 * C->E, then E->I, ends at I with id 7 and ccStack <2,I->C> <5,C->E>.
 */
START_TEST(test_dacce_slides)
{
	struct testgraph tg;
	struct dacce_dict *dict;
	struct dacce_state st;
	uint32_t root, ab, bd, de, ei, ic, ce, ei_again;

	tg_init(&tg);
	root = tg_root(&tg, "A");
	ab = tg_call(&tg, "A", "B", 100);
	tg_call(&tg, "A", "C", 50);
	bd = tg_call(&tg, "B", "D", 100);
	uint32_t cd = tg_call(&tg, "C", "D", 50);
	de = tg_call(&tg, "D", "E", 100);
	tg_call(&tg, "D", "F", 100);
	tg_call(&tg, "F", "I", 300);
	ei = tg_call(&tg, "E", "I", 200);
	uint32_t ci = tg_call(&tg, "C", "I", 100);
	dict = encode_default(&tg, 0);

	ck_assert_uint_eq(dict->max_id, 4);
	ck_assert_uint_eq(dict->en[cd], 1);
	ck_assert_uint_eq(dict->en[ei], 2);
	ck_assert_uint_eq(dict->en[ci], 4);
	ck_assert_uint_eq(dict->en[ab], 0);
	ck_assert_uint_eq(dict->en[de], 0);

	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, dict, tg.graph, root), 0);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, ab), 0);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, bd), 0);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, de), 0);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, ei), 0);
	ck_assert_uint_eq(st.id, 2);

	/* New edges, seen after the epoch was encoded. */
	ic = tg_call(&tg, "I", "C", 1);
	ce = tg_call(&tg, "C", "E", 1);
	ei_again = ei;
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, ic), 0);
	ck_assert_uint_eq(st.id, 5);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, ce), 0);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, ei_again), 0);

	ck_assert_uint_eq(st.id, 7);
	ck_assert_uint_eq(st.cc_depth, 2);
	ck_assert_uint_eq(st.cc[0].id, 2);
	ck_assert_uint_eq(st.cc[0].edge, ic);
	ck_assert_uint_eq(st.cc[1].id, 5);
	ck_assert_uint_eq(st.cc[1].edge, ce);
	assert_decodes_to(&tg, dict, &st, "I", "A B D E I C E I");

	/* Returning undoes everything, step by step. */
	ck_assert_int_eq(dacce_op_return(&st, dict, tg.graph, ei_again), 0);
	assert_decodes_to(&tg, dict, &st, "E", "A B D E I C E");
	ck_assert_int_eq(dacce_op_return(&st, dict, tg.graph, ce), 0);
	ck_assert_int_eq(dacce_op_return(&st, dict, tg.graph, ic), 0);
	ck_assert_uint_eq(st.id, 2);
	ck_assert_uint_eq(st.cc_depth, 0);

	dacce_state_fini(&st);
	dacce_dict_free(dict);
	tg_fini(&tg);
}
END_TEST

/* PCCE Fig. 4: id 6 at I decodes to A J G I; every id of I is one context. */
START_TEST(test_pcce_fig4)
{
	struct testgraph tg;
	struct dacce_dict *dict;
	struct dacce_state st;
	uint32_t d_site_2;

	tg_init(&tg);
	tg_root(&tg, "A");
	tg_call(&tg, "A", "B", 10);
	tg_call(&tg, "A", "J", 10);
	tg_call(&tg, "B", "D", 10);
	uint32_t jd = tg_call(&tg, "J", "D", 5);
	tg_call(&tg, "D", "F", 10);
	d_site_2 = tg_site(&tg, "D", DACCE_SITE_DIRECT);
	uint32_t df2 = tg_edge_at(&tg, d_site_2, "F", 5);
	tg_call(&tg, "D", "G", 10);
	uint32_t jg = tg_call(&tg, "J", "G", 5);
	tg_call(&tg, "F", "I", 30);
	uint32_t gi = tg_call(&tg, "G", "I", 20);
	uint32_t ji = tg_call(&tg, "J", "I", 10);
	dict = encode_default(&tg, 3);

	ck_assert_uint_eq(dict->en[jd], 1);
	ck_assert_uint_eq(dict->en[df2], 2);
	ck_assert_uint_eq(dict->en[jg], 2);
	ck_assert_uint_eq(dict->en[gi], 4);
	ck_assert_uint_eq(dict->en[ji], 7);
	ck_assert_uint_eq(dict->max_id, 7);
	ck_assert_uint_eq(dict->num_cc[tg_fn(&tg, "I")], 8);

	dacce_state_init(&st, 3);
	st.id = 6;
	assert_decodes_to(&tg, dict, &st, "I", "A J G I");

	/* The 8 contexts of I, by id. */
	static const char *const all[8] = {
		"A B D F I", "A J D F I", "A B D F I", "A J D F I",
		"A B D G I", "A J D G I", "A J G I", "A J I",
	};
	for (uint64_t id = 0; id < 8; id++) {
		st.id = id;
		assert_decodes_to(&tg, dict, &st, "I", all[id]);
	}
	dacce_state_fini(&st);
	dacce_dict_free(dict);
	tg_fini(&tg);
}
END_TEST

/*
 * DACCE section 3.3: A->C and C->D encoded, D->A a back edge, A->D new.
 * Context A D A C D A D is id 1 with <0,A,D> <1,D,A> <1,D,A> <1,A,D>, or,
 * compressed, <0,A,D> <1,D,A> x2 <1,A,D>.
 */
static void run_recursion_example(bool compress)
{
	struct testgraph tg;
	struct dacce_encode_opts opts;
	struct dacce_dict *dict = NULL;
	struct dacce_state st;
	uint32_t root, ac, cd, da, ad;

	tg_init(&tg);
	root = tg_root(&tg, "A");
	ac = tg_call(&tg, "A", "C", 10);
	cd = tg_call(&tg, "C", "D", 10);
	da = tg_call(&tg, "D", "A", 5);
	dacce_encode_opts_default(&opts);
	opts.compress_back_edges = compress;
	opts.compress_unencoded = compress;
	ck_assert_int_eq(dacce_encode(tg.graph, &opts, &dict), 0);
	ck_assert_uint_eq(dict->max_id, 0);
	ck_assert_uint_eq(dict->edge_class[da], DACCE_EDGE_BACK);
	ad = tg_call(&tg, "A", "D", 1);

	dacce_state_init(&st, 0);
	uint32_t path[] = { ad, da, ac, cd, da, ad };
	ck_assert_int_eq(dacce_op_thread_start(&st, dict, tg.graph, root), 0);
	for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++)
		ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, path[i]), 0);

	ck_assert_uint_eq(st.id, 1);
	if (compress) {
		ck_assert_uint_eq(st.cc_depth, 3);
		ck_assert_uint_eq(st.cc[1].edge, da);
		ck_assert_uint_eq(st.cc[1].aux, 1);
	} else {
		uint64_t ids[] = { 0, 1, 1, 1 };
		uint32_t edges[] = { ad, da, da, ad };

		ck_assert_uint_eq(st.cc_depth, 4);
		for (int i = 0; i < 4; i++) {
			ck_assert_uint_eq(st.cc[i].id, ids[i]);
			ck_assert_uint_eq(st.cc[i].edge, edges[i]);
			ck_assert_uint_eq(st.cc[i].aux, 0);
		}
	}
	assert_decodes_to(&tg, dict, &st, "D", "A D A C D A D");

	for (size_t i = sizeof(path) / sizeof(path[0]); i-- > 0;)
		ck_assert_int_eq(dacce_op_return(&st, dict, tg.graph, path[i]), 0);
	ck_assert_uint_eq(st.id, 0);
	ck_assert_uint_eq(st.cc_depth, 0);
	dacce_state_fini(&st);
	dacce_dict_free(dict);
	tg_fini(&tg);
}

START_TEST(test_recursion_uncompressed)
{
	run_recursion_example(false);
}
END_TEST

START_TEST(test_recursion_compressed)
{
	run_recursion_example(true);
}
END_TEST

static Suite *examples_suite(void)
{
	Suite *s = suite_create("examples");
	TCase *tc = tcase_create("papers");

	tcase_add_test(tc, test_dacce_slides);
	tcase_add_test(tc, test_pcce_fig4);
	tcase_add_test(tc, test_recursion_uncompressed);
	tcase_add_test(tc, test_recursion_compressed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(examples_suite());
}
