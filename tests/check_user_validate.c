// SPDX-License-Identifier: MIT
/*
 * Cross-validation's comparison (user/validate.c): decoded contexts of a
 * made-up program reduced to validation frames, against stack walks written
 * by hand as the unwinder would give them.  Right paths must match; a path
 * with a frame too many, too few, at another call site, or in another
 * function must not, and the first difference must be named.
 *
 * The program: main -0x10-> a -0x20-> b, a -0x28 (tail)-> t -0x30-> b,
 * b -0x40-> libc (a function outside the program), worker -0x60-> a,
 * and the roots: main, worker (a thread), handler (a signal).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "check_main.h"
#include "graph.h"
#include "model.h"
#include "validate.h"

enum { MAIN, A, B, T, LIBC, WORKER, HANDLER, N_FUNCS };
enum { E_ROOT, E_MAIN_A, E_A_B, E_A_T, E_T_B, E_B_LIBC, E_W_A, E_THREAD, E_SIGNAL, N_EDGES };

static struct {
	struct dacce_graph *g;
	uint32_t node[N_FUNCS];
	uint32_t edge[N_EDGES];
	uint64_t *size;
	struct dacce_resolved r;
	struct dacce_vframes logical, physical;
} fx;

static void add_edge(int which, int caller, uint64_t site, enum dacce_site_kind kind, int callee)
{
	uint32_t s;

	ck_assert_int_eq(dacce_graph_add_site(fx.g, fx.node[caller], 0, site, kind, &s), 0);
	ck_assert_int_eq(dacce_graph_add_edge(fx.g, s, fx.node[callee], &fx.edge[which]), 0);
}

static void setup(void)
{
	uint32_t module;

	fx.g = dacce_graph_new();
	ck_assert_ptr_nonnull(fx.g);
	ck_assert_int_eq(dacce_graph_add_module(fx.g, (const uint8_t *)"\1\2", 2, &module), 0);
	for (int f = 0; f < N_FUNCS; f++)
		ck_assert_int_eq(dacce_graph_add_node(fx.g, module, 0x1000 + 0x100 * (uint64_t)f,
						      &fx.node[f]), 0);
	fx.size = calloc(fx.g->n_nodes, sizeof(*fx.size));
	ck_assert_ptr_nonnull(fx.size);
	for (int f = 0; f < N_FUNCS; f++)
		fx.size[fx.node[f]] = f == LIBC ? 0 : 0x100;
	ck_assert_int_eq(dacce_graph_add_root_edge(fx.g, DACCE_ROOT_SITE_MAIN, fx.node[MAIN],
						   &fx.edge[E_ROOT]), 0);
	add_edge(E_MAIN_A, MAIN, 0x10, DACCE_SITE_DIRECT, A);
	add_edge(E_A_B, A, 0x20, DACCE_SITE_INDIRECT, B);
	add_edge(E_A_T, A, 0x28, DACCE_SITE_TAIL_DIRECT, T);
	add_edge(E_T_B, T, 0x30, DACCE_SITE_DIRECT, B);
	add_edge(E_B_LIBC, B, 0x40, DACCE_SITE_PLT, LIBC);
	add_edge(E_W_A, WORKER, 0x60, DACCE_SITE_DIRECT, A);
	ck_assert_int_eq(dacce_graph_add_root_edge(fx.g, DACCE_ROOT_SITE_THREAD, fx.node[WORKER],
						   &fx.edge[E_THREAD]), 0);
	ck_assert_int_eq(dacce_graph_add_root_edge(fx.g, DACCE_ROOT_SITE_SIGNAL, fx.node[HANDLER],
						   &fx.edge[E_SIGNAL]), 0);
	dacce_resolved_init(&fx.r);
	fx.r.status = DACCE_RESOLVED;
}

static void teardown(void)
{
	dacce_resolved_fini(&fx.r);
	dacce_vframes_fini(&fx.logical);
	dacce_vframes_fini(&fx.physical);
	dacce_graph_free(fx.g);
	free(fx.size);
	fx.g = NULL;
	fx.size = NULL;
}

/* The decoded path, innermost first: pairs of (function, entering edge), -1 ends. */
static void decoded(bool leaf_outside, const int *pairs)
{
	fx.r.path.len = 0;
	fx.r.leaf_outside = leaf_outside;
	for (int i = 0; pairs[i] >= 0; i += 2)
		ck_assert_int_eq(dacce_path_push(&fx.r.path, (struct dacce_frame){
							       .node = fx.node[pairs[i]],
							       .edge = fx.edge[pairs[i + 1]] }),
				 0);
	ck_assert_int_eq(dacce_validate_logical(fx.g, fx.size, &fx.r, &fx.logical), 0);
}

#define OUT (-1)
#define RET (-2) /* the next value is a function the return address lands in itself */
#define IN (-3)	 /* the next two: a function and the site whose code a signal interrupted */

/* A stack walk: AT f, then (function, site) of each return, OUT for outside frames; -9 ends. */
static void walked(const int64_t *v)
{
	fx.physical.len = 0;
	for (int i = 0; v[i] != -9;) {
		struct dacce_vframe f = { 0 };

		if (v[i] == OUT) {
			f.kind = DACCE_VF_OUTSIDE;
			i++;
		} else if (v[i] == IN) {
			f.kind = DACCE_VF_IN_SITE;
			f.node = fx.node[v[i + 1]];
			f.site = (uint64_t)v[i + 2];
			i += 3;
		} else if (v[i] == RET) {
			f.kind = DACCE_VF_RETURN_INTO;
			f.node = fx.node[v[i + 1]];
			i += 2;
		} else if (i == 0 || v[i + 1] < 0x10) {
			f.kind = DACCE_VF_AT;
			f.node = fx.node[v[i]];
			i++;
		} else {
			f.kind = DACCE_VF_CALL;
			f.node = fx.node[v[i]];
			f.site = (uint64_t)v[i + 1];
			i += 2;
		}
		ck_assert_int_eq(dacce_vframes_push(&fx.physical, f), 0);
	}
	dacce_vframes_trim(&fx.physical);
}

static bool matches(uint32_t *diff)
{
	return dacce_vframes_match(&fx.physical, &fx.logical, diff);
}

START_TEST(test_a_right_walk_matches_and_a_wrong_one_does_not)
{
	uint32_t diff;

	decoded(false, (const int[]){ B, E_A_B, A, E_MAIN_A, MAIN, E_ROOT, -1 });
	ck_assert_uint_eq(fx.logical.len, 3); /* b, a at 0x20, main at 0x10 */
	walked((const int64_t[]){ B, A, 0x20, MAIN, 0x10, OUT, -9 });
	ck_assert(matches(&diff));
	/* Another call site of the same caller. */
	walked((const int64_t[]){ B, A, 0x28, MAIN, 0x10, OUT, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 1);
	/* Another innermost function. */
	walked((const int64_t[]){ T, A, 0x20, MAIN, 0x10, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 0);
	/* A frame too many and one too few. */
	walked((const int64_t[]){ B, A, 0x20, A, 0x20, MAIN, 0x10, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 2);
	walked((const int64_t[]){ B, A, 0x20, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 2);
	/* A library frame between two program frames. */
	walked((const int64_t[]){ B, OUT, A, 0x20, MAIN, 0x10, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 1);
}
END_TEST

START_TEST(test_a_tail_call_leaves_no_frame_of_its_caller)
{
	uint32_t diff;

	/* main -> a -tail-> t -> b: physically b returns into t, t into main. */
	decoded(false, (const int[]){ B, E_T_B, T, E_A_T, A, E_MAIN_A, MAIN, E_ROOT, -1 });
	walked((const int64_t[]){ B, T, 0x30, MAIN, 0x10, OUT, -9 });
	ck_assert(matches(&diff));
	/* A walk that still shows a's frame is not this context. */
	walked((const int64_t[]){ B, T, 0x30, A, 0x28, MAIN, 0x10, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 2);
}
END_TEST

START_TEST(test_library_frames_and_returns_into_functions)
{
	uint32_t diff;

	/* The pc in libc, called from b: outside frames, then b at its call. */
	decoded(true, (const int[]){ LIBC, E_B_LIBC, B, E_A_B, A, E_MAIN_A, MAIN, E_ROOT, -1 });
	ck_assert_int_eq(fx.logical.frames[0].kind, DACCE_VF_OUTSIDE);
	walked((const int64_t[]){ OUT, OUT, B, 0x40, A, 0x20, MAIN, 0x10, OUT, -9 });
	ck_assert_uint_eq(fx.physical.len, 4); /* outside frames merge; trailing ones go */
	ck_assert(matches(&diff));
	/* A return address into a itself (a site without generated code) is a's frame... */
	walked((const int64_t[]){ OUT, B, 0x40, RET, A, MAIN, 0x10, -9 });
	ck_assert(matches(&diff));
	/* ...and never another function's. */
	walked((const int64_t[]){ OUT, B, 0x40, RET, T, MAIN, 0x10, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 2);
}
END_TEST

START_TEST(test_signals_and_threads)
{
	uint32_t diff;

	/* handler, on top of a interrupted at its pc, called from main. */
	decoded(false, (const int[]){ HANDLER, E_SIGNAL, A, E_MAIN_A, MAIN, E_ROOT, -1 });
	walked((const int64_t[]){ HANDLER, OUT, A, MAIN, 0x10, OUT, -9 });
	ck_assert(matches(&diff));
	/* Interrupted inside the code of a's call at 0x20: the call is under way. */
	walked((const int64_t[]){ HANDLER, OUT, IN, A, 0x20, MAIN, 0x10, -9 });
	ck_assert(matches(&diff));
	decoded(false, (const int[]){ HANDLER, E_SIGNAL, B, E_A_B, A, E_MAIN_A, MAIN, E_ROOT, -1 });
	walked((const int64_t[]){ HANDLER, OUT, IN, A, 0x20, MAIN, 0x10, -9 });
	ck_assert(!matches(&diff)); /* b entered: a walk in a's site code has no b frame */
	decoded(false, (const int[]){ HANDLER, E_SIGNAL, LIBC, E_B_LIBC, B, E_A_B, A, E_MAIN_A,
				      MAIN, E_ROOT, -1 });
	walked((const int64_t[]){ HANDLER, OUT, IN, B, 0x40, A, 0x20, MAIN, 0x10, -9 });
	ck_assert(matches(&diff)); /* the call out pushed, not yet made */
	walked((const int64_t[]){ HANDLER, OUT, IN, B, 0x48, A, 0x20, MAIN, 0x10, -9 });
	ck_assert(!matches(&diff)); /* another site's code */
	ck_assert_uint_eq(diff, 2);
	decoded(false, (const int[]){ HANDLER, E_SIGNAL, A, E_MAIN_A, MAIN, E_ROOT, -1 });
	/* Interrupted in b instead: not this context. */
	walked((const int64_t[]){ HANDLER, OUT, B, MAIN, 0x10, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 2);
	/* A thread's context ends at its root: its creator's frames are not on its stack. */
	decoded(false, (const int[]){ A, E_W_A, WORKER, E_THREAD, B, E_A_B, A, E_MAIN_A, MAIN,
				      E_ROOT, -1 });
	ck_assert_uint_eq(fx.logical.len, 2);
	walked((const int64_t[]){ A, WORKER, 0x60, OUT, -9 });
	ck_assert(matches(&diff));
	walked((const int64_t[]){ A, OUT, -9 });
	ck_assert(!matches(&diff));
	ck_assert_uint_eq(diff, 1);
}
END_TEST

START_TEST(test_a_context_without_a_root_is_refused)
{
	fx.r.path.len = 0;
	ck_assert_int_eq(dacce_path_push(&fx.r.path, (struct dacce_frame){ .node = fx.node[B],
									  .edge = fx.edge[E_A_B] }),
			 0);
	ck_assert_int_eq(dacce_validate_logical(fx.g, fx.size, &fx.r, &fx.logical), -EINVAL);
	ck_assert_int_eq(dacce_path_push(&fx.r.path, (struct dacce_frame){ .node = fx.node[A],
									  .edge = UINT32_MAX - 1 }),
			 0);
	ck_assert_int_eq(dacce_validate_logical(fx.g, fx.size, &fx.r, &fx.logical), -EINVAL);
	fx.r.path.len = 0;
	ck_assert_int_eq(dacce_validate_logical(fx.g, fx.size, &fx.r, &fx.logical), -EINVAL);
}
END_TEST

static Suite *validate_suite(void)
{
	Suite *s = suite_create("user_validate");
	TCase *tc = tcase_create("compare");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_a_right_walk_matches_and_a_wrong_one_does_not);
	tcase_add_test(tc, test_a_tail_call_leaves_no_frame_of_its_caller);
	tcase_add_test(tc, test_library_frames_and_returns_into_functions);
	tcase_add_test(tc, test_signals_and_threads);
	tcase_add_test(tc, test_a_context_without_a_root_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(validate_suite());
}
