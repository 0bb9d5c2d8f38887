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

/* main -> A -> B (encoded), B -> B (back edge), a signal handler H -> A. */
struct fixture {
	struct testgraph tg;
	struct dacce_dict *dict;
	uint32_t root, ma, ab, bb, ha, sig;
};

static void fixture_init(struct fixture *f)
{
	tg_init(&f->tg);
	f->root = tg_root(&f->tg, "main");
	f->ma = tg_call(&f->tg, "main", "A", 10);
	f->ab = tg_call(&f->tg, "A", "B", 10);
	f->bb = tg_call(&f->tg, "B", "B", 10);
	f->ha = tg_call(&f->tg, "H", "A", 1);
	ck_assert_int_eq(dacce_graph_add_root_edge(f->tg.graph, DACCE_ROOT_SITE_SIGNAL,
						   tg_fn(&f->tg, "H"), &f->sig), 0);
	ck_assert_int_eq(dacce_encode(f->tg.graph, NULL, &f->dict), 0);
}

static void fixture_fini(struct fixture *f)
{
	dacce_dict_free(f->dict);
	tg_fini(&f->tg);
}

static int decode_names(struct fixture *f, const struct dacce_state *st, const char *fn,
			char *names, size_t len, struct dacce_decode_error *err)
{
	struct dacce_frame frames[256];
	struct dacce_snapshot snap = dacce_snapshot_of(st, tg_fn(&f->tg, fn));
	int n = dacce_decode(f->dict, f->tg.graph, &snap, frames, 256, err);

	if (n > 0)
		tg_path_names(&f->tg, frames, n, names, len);
	return n;
}

START_TEST(test_nested_signals_decode_on_top_of_interrupted_context)
{
	struct fixture f;
	struct dacce_state st;
	char names[256];

	fixture_init(&f);
	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ma), 0);
	ck_assert_int_eq(dacce_op_nested_enter(&st, f.dict, f.sig, tg_fn(&f.tg, "A")), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ha), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ab), 0);
	/* A second signal while the handler runs. */
	ck_assert_int_eq(dacce_op_nested_enter(&st, f.dict, f.sig, tg_fn(&f.tg, "B")), 0);
	ck_assert_int_gt(decode_names(&f, &st, "H", names, sizeof(names), NULL), 0);
	ck_assert_str_eq(names, "main A H A B H");
	ck_assert_int_eq(dacce_op_nested_leave(&st, f.sig), 0);
	ck_assert_int_gt(decode_names(&f, &st, "B", names, sizeof(names), NULL), 0);
	ck_assert_str_eq(names, "main A H A B");
	dacce_state_fini(&st);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_unknown_interrupted_function_is_a_partial_context)
{
	struct fixture f;
	struct dacce_state st;
	struct dacce_decode_error err = { 0 };
	char names[256];

	fixture_init(&f);
	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	ck_assert_int_eq(dacce_op_nested_enter(&st, f.dict, f.sig, DACCE_NONE), 0);
	ck_assert_int_eq(decode_names(&f, &st, "H", names, sizeof(names), &err), -ENOLINK);
	ck_assert_ptr_nonnull(err.message);
	ck_assert_uint_eq(err.frames_done, 1);
	dacce_state_fini(&st);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_small_buffer_keeps_innermost_frames)
{
	struct fixture f;
	struct dacce_state st;
	struct dacce_frame frames[3];
	struct dacce_snapshot snap;

	fixture_init(&f);
	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ma), 0);
	ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.ab), 0);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.bb), 0);
	/* Back-edge recursion compresses to one entry with a count. */
	ck_assert_uint_le(st.cc_depth, 2);
	snap = dacce_snapshot_of(&st, tg_fn(&f.tg, "B"));
	ck_assert_int_eq(dacce_decode(f.dict, f.tg.graph, &snap, frames, 3, NULL), -E2BIG);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(frames[i].node, tg_fn(&f.tg, "B"));
		ck_assert_uint_eq(frames[i].edge, f.bb);
	}
	struct dacce_path path;

	dacce_path_init(&path);
	ck_assert_int_eq(dacce_decode_append(f.dict, f.tg.graph, &snap, &path, NULL), 0);
	ck_assert_uint_eq(path.len, 1003);
	dacce_path_fini(&path);
	dacce_state_fini(&st);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_invalid_contexts_are_errors)
{
	struct fixture f;
	struct dacce_state st;
	struct dacce_decode_error err = { 0 };
	struct dacce_frame frames[16];
	struct dacce_snapshot snap;
	struct dacce_cc_entry bad_edge = { .id = 0, .edge = 999999, .aux = 0 };

	fixture_init(&f);
	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, f.dict, f.tg.graph, f.root), 0);
	snap = dacce_snapshot_of(&st, tg_fn(&f.tg, "main"));

	snap.epoch = 5;
	ck_assert_int_eq(dacce_decode(f.dict, f.tg.graph, &snap, frames, 16, &err), -EINVAL);
	snap.epoch = 0;
	snap.id = 2 * f.dict->max_id + 2;
	ck_assert_int_eq(dacce_decode(f.dict, f.tg.graph, &snap, frames, 16, &err), -EILSEQ);
	snap.id = 0;
	snap.node = 12345;
	ck_assert_int_eq(dacce_decode(f.dict, f.tg.graph, &snap, frames, 16, &err), -EILSEQ);
	/* A leftover entry under a context that reaches the root. */
	snap.node = tg_fn(&f.tg, "main");
	snap.cc = &bad_edge;
	snap.cc_depth = 1;
	ck_assert_int_eq(dacce_decode(f.dict, f.tg.graph, &snap, frames, 16, &err), -EILSEQ);
	/* An entry naming an edge nobody knows. */
	snap.id = f.dict->max_id + 1;
	ck_assert_int_eq(dacce_decode(f.dict, f.tg.graph, &snap, frames, 16, &err), -EILSEQ);
	ck_assert_str_eq(err.message, "ccStack names an unknown edge");
	/* Without the later graph, a new edge cannot be resolved. */
	uint32_t late = tg_call(&f.tg, "B", "main", 1);
	struct dacce_cc_entry late_entry = { .id = 0, .edge = late, .aux = 0 };

	snap.cc = &late_entry;
	ck_assert_int_eq(dacce_decode(f.dict, NULL, &snap, frames, 16, &err), -EILSEQ);
	ck_assert_int_eq(dacce_decode(f.dict, NULL, NULL, frames, 16, &err), -EINVAL);
	dacce_state_fini(&st);
	fixture_fini(&f);
}
END_TEST

/* Random garbage must give errors or valid paths, never a crash or a hang. */
START_TEST(test_garbage_contexts_never_crash)
{
	struct fixture f;
	struct dacce_frame frames[64];
	struct dacce_cc_entry cc[8];
	uint64_t x = 88172645463325252ULL;

	fixture_init(&f);
	for (int i = 0; i < 200000; i++) {
		struct dacce_snapshot snap = { .epoch = 0 };

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		snap.node = (uint32_t)(x % (f.tg.graph->n_nodes + 2));
		snap.id = (x >> 8) % (2 * f.dict->max_id + 4);
		snap.cc_depth = (uint32_t)((x >> 20) % 9);
		snap.cc = cc;
		for (uint32_t k = 0; k < snap.cc_depth; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			cc[k].id = x % (2 * f.dict->max_id + 3);
			cc[k].edge = (uint32_t)((x >> 16) % (f.tg.graph->n_edges + 2));
			cc[k].aux = (uint32_t)((x >> 40) % 4);
		}
		int n = dacce_decode(f.dict, f.tg.graph, &snap, frames, 64, NULL);

		ck_assert_msg(n > 0 || n == -EILSEQ || n == -E2BIG || n == -ENOLINK, "got %d", n);
	}
	fixture_fini(&f);
}
END_TEST

struct epochs {
	struct dacce_dict *dicts[2];
};

static const struct dacce_dict *lookup_epoch(void *ctx, uint64_t epoch)
{
	struct epochs *e = ctx;

	return epoch < 2 ? e->dicts[epoch] : NULL;
}

START_TEST(test_thread_context_continues_in_its_creator)
{
	struct fixture f;
	struct dacce_state parent, child;
	struct dacce_encode_opts opts;
	struct epochs epochs;
	struct dacce_snapshot chain[2];
	struct dacce_path path;
	char names[256];
	uint32_t start;

	fixture_init(&f);
	ck_assert_int_eq(dacce_graph_add_root_edge(f.tg.graph, DACCE_ROOT_SITE_THREAD,
						   tg_fn(&f.tg, "B"), &start), 0);
	/* The parent's snapshot is from epoch 0, the child runs in epoch 1. */
	dacce_state_init(&parent, 0);
	ck_assert_int_eq(dacce_op_thread_start(&parent, f.dict, f.tg.graph, f.root), 0);
	ck_assert_int_eq(dacce_op_call(&parent, f.dict, f.tg.graph, f.ma), 0);
	epochs.dicts[0] = f.dict;
	dacce_encode_opts_default(&opts);
	opts.epoch = 1;
	ck_assert_int_eq(dacce_encode(f.tg.graph, &opts, &epochs.dicts[1]), 0);
	dacce_state_init(&child, 1);
	ck_assert_int_eq(dacce_op_thread_start(&child, epochs.dicts[1], f.tg.graph, start), 0);
	ck_assert_int_eq(dacce_op_call(&child, epochs.dicts[1], f.tg.graph, f.bb), 0);

	chain[0] = dacce_snapshot_of(&child, tg_fn(&f.tg, "B"));
	chain[1] = dacce_snapshot_of(&parent, tg_fn(&f.tg, "A"));
	dacce_path_init(&path);
	ck_assert_int_eq(dacce_decode_chain(lookup_epoch, &epochs, f.tg.graph, chain, 2, &path,
					    NULL), 0);
	tg_path_names(&f.tg, path.frames, (int)path.len, names, sizeof(names));
	ck_assert_str_eq(names, "main A B B");
	ck_assert_uint_eq(path.frames[1].edge, start);
	dacce_path_fini(&path);

	/* The main thread's context has no creator to continue in. */
	dacce_path_init(&path);
	chain[0] = chain[1];
	ck_assert_int_eq(dacce_decode_chain(lookup_epoch, &epochs, f.tg.graph, chain, 2, &path,
					    NULL), -EILSEQ);
	dacce_path_fini(&path);
	chain[0].epoch = 9;
	dacce_path_init(&path);
	ck_assert_int_eq(dacce_decode_chain(lookup_epoch, &epochs, f.tg.graph, chain, 1, &path,
					    NULL), -ENOENT);
	dacce_path_fini(&path);

	dacce_dict_free(epochs.dicts[1]);
	dacce_state_fini(&child);
	dacce_state_fini(&parent);
	fixture_fini(&f);
}
END_TEST

static Suite *decode_suite(void)
{
	Suite *s = suite_create("decode");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_nested_signals_decode_on_top_of_interrupted_context);
	tcase_add_test(tc, test_unknown_interrupted_function_is_a_partial_context);
	tcase_add_test(tc, test_small_buffer_keeps_innermost_frames);
	tcase_add_test(tc, test_invalid_contexts_are_errors);
	tcase_add_test(tc, test_garbage_contexts_never_crash);
	tcase_add_test(tc, test_thread_context_continues_in_its_creator);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(decode_suite());
}
