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

static bool states_equal(const struct dacce_state *a, const struct dacce_state *b)
{
	if (a->epoch != b->epoch || a->id != b->id || a->cc_depth != b->cc_depth ||
	    a->tc_depth != b->tc_depth)
		return false;
	if (a->cc_depth && memcmp(a->cc, b->cc, sizeof(*a->cc) * a->cc_depth) != 0)
		return false;
	return a->tc_depth == 0 || memcmp(a->tc, b->tc, sizeof(*a->tc) * a->tc_depth) == 0;
}

/* main -> A (encoded, En 1 via a colder second caller), A -tail-> B, B -> C. */
struct fixture {
	struct testgraph tg;
	struct dacce_dict *dict;
	uint32_t root, ma, xa, ab_tail, bc, cc_back;
};

static void fixture_init(struct fixture *f)
{
	tg_init(&f->tg);
	f->root = tg_root(&f->tg, "main");
	tg_call(&f->tg, "main", "X", 100);
	f->xa = tg_call(&f->tg, "X", "A", 100);
	f->ma = tg_call(&f->tg, "main", "A", 1);
	f->bc = tg_call(&f->tg, "B", "C", 1);
	f->cc_back = tg_call(&f->tg, "C", "C", 1);
	ck_assert_int_eq(dacce_encode(f->tg.graph, NULL, &f->dict), 0);
	/* The tail call is found after the epoch: unencoded, pushed. */
	f->ab_tail = tg_edge_at(&f->tg, tg_site(&f->tg, "A", DACCE_SITE_TAIL_DIRECT), "B", 1);
}

static void fixture_fini(struct fixture *f)
{
	dacce_dict_free(f->dict);
	tg_fini(&f->tg);
}

START_TEST(test_tail_call_is_undone_by_the_frame_return)
{
	struct fixture f;
	struct dacce_state st, before_call, in_a;
	struct dacce_frame frames[16];
	struct dacce_snapshot snap;
	char names[128];

	fixture_init(&f);
	dacce_state_init(&st, 0);
	dacce_state_init(&before_call, 0);
	dacce_state_init(&in_a, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	ck_assert_int_eq(dacce_state_copy(&before_call, &st), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ma), 0); /* frame 1 */
	ck_assert_uint_eq(st.id, 1);
	ck_assert_int_eq(dacce_state_copy(&in_a, &st), 0);
	ck_assert_int_eq(dacce_op_tail(&st, f.dict, f.tg.graph, f.ab_tail, 1), 0);
	ck_assert_uint_eq(st.tc_depth, 1);
	ck_assert_uint_eq(st.cc_depth, 1);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.bc), 0); /* frame 2 */

	snap = dacce_snapshot_of(&st, tg_fn(&f.tg, "C"));
	int n = dacce_decode(f.dict, f.tg.graph, &snap, frames, 16, NULL);

	ck_assert_int_eq(n, 4);
	tg_path_names(&f.tg, frames, n, names, sizeof(names));
	ck_assert_str_eq(names, "main A B C");

	/* C returns normally: frame 2 holds no tail record. */
	ck_assert_int_eq(dacce_op_frame_exit(&st, 2), 0);
	ck_assert_int_eq(dacce_op_return(&st, f.dict, f.tg.graph, f.bc), 0);
	/* B returns straight to main: the record puts back A's state first. */
	ck_assert_int_eq(dacce_op_frame_exit(&st, 1), 0);
	ck_assert(states_equal(&st, &in_a));
	ck_assert_int_eq(dacce_op_return(&st, f.dict, f.tg.graph, f.ma), 0);
	ck_assert(states_equal(&st, &before_call));

	dacce_state_fini(&st);
	dacce_state_fini(&before_call);
	dacce_state_fini(&in_a);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_tail_record_restores_a_bumped_repeat_count)
{
	struct fixture f;
	struct dacce_state st, saved;

	fixture_init(&f);
	dacce_state_init(&st, 0);
	dacce_state_init(&saved, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ma), 0);
	ck_assert_int_eq(dacce_op_tail(&st, f.dict, f.tg.graph, f.ab_tail, 1), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.bc), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.cc_back), 0); /* frame 3 */
	ck_assert_int_eq(dacce_state_copy(&saved, &st), 0);
	/* C recurses, then tail-calls itself through the same edge kind. */
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.cc_back), 0); /* frame 4 */
	ck_assert_uint_eq(st.cc[st.cc_depth - 1].aux, 1);
	uint32_t c_tail = tg_edge_at(&f.tg, tg_site(&f.tg, "C", DACCE_SITE_TAIL_DIRECT), "C", 1);

	ck_assert_int_eq(dacce_op_tail(&st, f.dict, f.tg.graph, c_tail, 4), 0);
	ck_assert_int_eq(dacce_op_tail(&st, f.dict, f.tg.graph, c_tail, 4), 0);
	ck_assert_uint_eq(st.tc_depth, 2); /* one record per frame, not per tail call */
	ck_assert_int_eq(dacce_op_frame_exit(&st, 4), 0);
	ck_assert_int_eq(dacce_op_return(&st, f.dict, f.tg.graph, f.cc_back), 0);
	ck_assert(states_equal(&st, &saved));
	dacce_state_fini(&st);
	dacce_state_fini(&saved);
	fixture_fini(&f);
}
END_TEST

/*
 * A tail call through an edge that costs nothing (encoded, En = 0) makes no
 * record: the frame's return has nothing to undo.  A later tail call out of
 * the same frame that costs something records the frame's state then, which
 * is the state the frame had before either.
 */
START_TEST(test_free_tail_call_makes_no_record)
{
	struct testgraph tg;
	struct dacce_dict *dict;
	struct dacce_state st, in_a;
	uint32_t root, ma, ab_tail, bc_tail;

	tg_init(&tg);
	root = tg_root(&tg, "main");
	ma = tg_call(&tg, "main", "A", 10);
	ab_tail = tg_edge_at(&tg, tg_site(&tg, "A", DACCE_SITE_TAIL_DIRECT), "B", 10);
	ck_assert_int_eq(dacce_encode(tg.graph, NULL, &dict), 0);
	bc_tail = tg_edge_at(&tg, tg_site(&tg, "B", DACCE_SITE_TAIL_DIRECT), "C", 1); /* pushed */

	dacce_state_init(&st, 0);
	dacce_state_init(&in_a, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, dict, tg.graph, root), 0);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, ma), 0);
	ck_assert_int_eq(dacce_state_copy(&in_a, &st), 0);
	ck_assert_int_eq(dacce_op_tail(&st, dict, tg.graph, ab_tail, 1), 0);
	ck_assert(states_equal(&st, &in_a));
	ck_assert_int_eq(dacce_op_tail(&st, dict, tg.graph, bc_tail, 1), 0);
	ck_assert_uint_eq(st.tc_depth, 1);
	ck_assert_uint_eq(st.tc[0].id, in_a.id);
	ck_assert_uint_eq(st.tc[0].cc_depth, in_a.cc_depth);
	ck_assert_uint_eq(st.cc_depth, 1);
	/* C returns through A's slot: A's state, then main's after the call. */
	ck_assert_int_eq(dacce_op_frame_exit(&st, 1), 0);
	ck_assert(states_equal(&st, &in_a));
	ck_assert_int_eq(dacce_op_return(&st, dict, tg.graph, ma), 0);
	ck_assert_uint_eq(st.id, 0);
	dacce_state_fini(&st);
	dacce_state_fini(&in_a);
	dacce_dict_free(dict);
	tg_fini(&tg);
}
END_TEST

START_TEST(test_rewind_restores_a_mark)
{
	struct fixture f;
	struct dacce_state st, saved;
	struct dacce_mark mark;

	fixture_init(&f);
	dacce_state_init(&st, 0);
	dacce_state_init(&saved, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ma), 0);
	ck_assert_int_eq(dacce_op_tail(&st, f.dict, f.tg.graph, f.ab_tail, 1), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.bc), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.cc_back), 0);
	dacce_state_mark(&st, &mark); /* setjmp */
	ck_assert_int_eq(dacce_state_copy(&saved, &st), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.cc_back), 0);
	ck_assert_int_eq(dacce_op_tail(&st, f.dict, f.tg.graph, f.ab_tail, 9), 0);
	ck_assert_int_eq(dacce_state_rewind(&st, &mark), 0); /* longjmp */
	ck_assert(states_equal(&st, &saved));
	dacce_state_fini(&st);
	dacce_state_fini(&saved);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_mismatched_operations_are_refused)
{
	struct fixture f;
	struct dacce_state st;
	struct dacce_mark deeper = { .cc_depth = 5 };

	fixture_init(&f);
	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	/* id 0 cannot have come through main->A, whose En is 1. */
	ck_assert_int_eq(dacce_op_return(&st, f.dict, f.tg.graph, f.ma), -EPROTO);
	ck_assert_int_eq(dacce_op_return(&st, f.dict, f.tg.graph, f.ab_tail), -EPROTO);
	ck_assert_int_eq(dacce_op_nested_leave(&st, f.ab_tail), -EPROTO);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, 123456), -ENOENT);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.ma), -EINVAL);
	ck_assert_int_eq(dacce_state_rewind(&st, &deeper), -EPROTO);
	st.epoch = 3;
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ma), -EINVAL);
	dacce_state_fini(&st);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_repeat_count_saturates_into_a_new_entry)
{
	struct fixture f;
	struct dacce_state st;

	fixture_init(&f);
	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.cc_back), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.cc_back), 0);
	ck_assert_uint_eq(st.cc_depth, 2);
	st.cc[1].aux = DACCE_AUX_MAX;
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.cc_back), 0);
	ck_assert_uint_eq(st.cc_depth, 3);
	ck_assert_uint_eq(st.cc[2].aux, 0);
	ck_assert_int_eq(dacce_op_return(&st, f.dict, f.tg.graph, f.cc_back), 0);
	ck_assert_uint_eq(st.cc_depth, 2);
	ck_assert_uint_eq(st.cc[1].aux, DACCE_AUX_MAX);
	dacce_state_fini(&st);
	fixture_fini(&f);
}
END_TEST

static Suite *machine_suite(void)
{
	Suite *s = suite_create("machine");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_tail_call_is_undone_by_the_frame_return);
	tcase_add_test(tc, test_tail_record_restores_a_bumped_repeat_count);
	tcase_add_test(tc, test_free_tail_call_makes_no_record);
	tcase_add_test(tc, test_rewind_restores_a_mark);
	tcase_add_test(tc, test_mismatched_operations_are_refused);
	tcase_add_test(tc, test_repeat_count_saturates_into_a_new_entry);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(machine_suite());
}
