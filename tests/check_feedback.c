// SPDX-License-Identifier: MIT
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "feedback.h"
#include "scc.h"

#define MAX_NODES 64
#define MAX_EDGES 512

/* A graph in the shape dacce_feedback_order reads, built edge by edge. */
struct fb {
	uint32_t n_nodes, n_edges;
	uint32_t caller[MAX_EDGES], callee[MAX_EDGES];
	uint64_t weight[MAX_EDGES];
	uint32_t out_start[MAX_NODES + 1], out_edges[MAX_EDGES];
	uint32_t in_start[MAX_NODES + 1], in_edges[MAX_EDGES];
	uint32_t component[MAX_NODES], tie[MAX_NODES], after[MAX_NODES], rank[MAX_NODES];
};

static uint32_t fb_edge(struct fb *f, uint32_t a, uint32_t b, uint64_t w)
{
	f->caller[f->n_edges] = a;
	f->callee[f->n_edges] = b;
	f->weight[f->n_edges] = w;
	return f->n_edges++;
}

/* CSR lists and components, then the order. */
static int fb_order(struct fb *f)
{
	struct dacce_feedback_graph g = {
		.n_nodes = f->n_nodes, .out_start = f->out_start, .out_edges = f->out_edges,
		.in_start = f->in_start, .in_edges = f->in_edges, .caller_of = f->caller,
		.callee_of = f->callee, .weight = f->weight, .component = f->component,
		.tie = f->tie, .after = f->after,
	};
	uint32_t fill_out[MAX_NODES], fill_in[MAX_NODES];

	memset(f->out_start, 0, sizeof(f->out_start));
	memset(f->in_start, 0, sizeof(f->in_start));
	for (uint32_t e = 0; e < f->n_edges; e++) {
		f->out_start[f->caller[e] + 1]++;
		f->in_start[f->callee[e] + 1]++;
	}
	for (uint32_t n = 0; n < f->n_nodes; n++) {
		f->out_start[n + 1] += f->out_start[n];
		f->in_start[n + 1] += f->in_start[n];
		fill_out[n] = f->out_start[n];
		fill_in[n] = f->in_start[n];
	}
	for (uint32_t e = 0; e < f->n_edges; e++) {
		f->out_edges[fill_out[f->caller[e]]++] = e;
		f->in_edges[fill_in[f->callee[e]]++] = e;
	}
	ck_assert_int_eq(dacce_scc(f->n_nodes, f->out_start, f->out_edges, f->callee,
				   f->component), 0);
	return dacce_feedback_order(&g, f->n_edges, f->rank);
}

static void fb_init(struct fb *f, uint32_t n_nodes)
{
	memset(f, 0, sizeof(*f));
	f->n_nodes = n_nodes;
	for (uint32_t n = 0; n < n_nodes; n++)
		f->after[n] = DACCE_FEEDBACK_NONE;
}

static bool is_back(const struct fb *f, uint32_t e)
{
	uint32_t a = f->caller[e], b = f->callee[e];

	return f->component[a] == f->component[b] && f->rank[a] >= f->rank[b];
}

/* Every node gets its own rank. */
static void assert_permutation(const struct fb *f)
{
	bool seen[MAX_NODES] = { 0 };

	for (uint32_t n = 0; n < f->n_nodes; n++) {
		ck_assert_uint_lt(f->rank[n], f->n_nodes);
		ck_assert(!seen[f->rank[n]]);
		seen[f->rank[n]] = true;
	}
}

START_TEST(test_two_node_cycle_keeps_its_heavy_edge)
{
	struct fb f;
	uint32_t ab, ba;

	fb_init(&f, 2);
	ab = fb_edge(&f, 0, 1, 100);
	ba = fb_edge(&f, 1, 0, 1);
	ck_assert_int_eq(fb_order(&f), 0);
	ck_assert(!is_back(&f, ab));
	ck_assert(is_back(&f, ba));

	f.weight[ab] = 1;
	f.weight[ba] = 100;
	ck_assert_int_eq(fb_order(&f), 0);
	ck_assert(is_back(&f, ab));
	ck_assert(!is_back(&f, ba));
}
END_TEST

START_TEST(test_node_to_follow_comes_first)
{
	struct fb f;
	uint32_t uv, vu, vw, wv;

	/* v's heavy out-edges would put it first; after[v] = u says otherwise. */
	fb_init(&f, 3);
	uv = fb_edge(&f, 0, 1, 1);
	vu = fb_edge(&f, 1, 0, 1000);
	vw = fb_edge(&f, 1, 2, 1000);
	wv = fb_edge(&f, 2, 1, 1);
	ck_assert_int_eq(fb_order(&f), 0);
	ck_assert(is_back(&f, uv));
	f.after[1] = 0;
	f.tie[0] = 2; /* u before w, of the two equal choices left */
	f.tie[2] = 1;
	ck_assert_int_eq(fb_order(&f), 0);
	assert_permutation(&f);
	ck_assert(!is_back(&f, uv));
	ck_assert(is_back(&f, vu));
	ck_assert(!is_back(&f, vw));
	ck_assert(is_back(&f, wv));
}
END_TEST

START_TEST(test_constraints_in_a_cycle_are_refused)
{
	struct fb f;

	fb_init(&f, 2);
	fb_edge(&f, 0, 1, 1);
	fb_edge(&f, 1, 0, 1);
	f.after[0] = 1;
	f.after[1] = 0;
	ck_assert_int_eq(fb_order(&f), -EDEADLK);
}
END_TEST

/* Random graphs: the ranks are a permutation, and every constraint holds. */
START_TEST(test_random_graphs)
{
	srand(12345);
	for (int round = 0; round < 400; round++) {
		struct fb f;
		uint32_t n = 2 + (uint32_t)rand() % (MAX_NODES - 2);
		uint32_t m = (uint32_t)rand() % (4 * n);

		fb_init(&f, n);
		for (uint32_t i = 0; i < m && f.n_edges < MAX_EDGES; i++)
			fb_edge(&f, (uint32_t)rand() % n, (uint32_t)rand() % n,
				(uint64_t)(rand() % 4 == 0 ? rand() : rand() % 100));
		for (uint32_t v = 0; v < n; v++)
			f.tie[v] = (uint32_t)rand();
		/* Constraints along edges, one per node, from lower to higher numbers: no cycle. */
		for (uint32_t e = 0; e < f.n_edges; e++)
			if (f.caller[e] < f.callee[e] && f.after[f.callee[e]] == DACCE_FEEDBACK_NONE &&
			    rand() % 3 == 0)
				f.after[f.callee[e]] = f.caller[e];
		ck_assert_int_eq(fb_order(&f), 0);
		assert_permutation(&f);
		for (uint32_t e = 0; e < f.n_edges; e++)
			if (f.after[f.callee[e]] == f.caller[e] &&
			    f.component[f.caller[e]] == f.component[f.callee[e]])
				ck_assert(!is_back(&f, e));
		/* Non-back edges inside components form no cycle: ranks increase along them. */
		for (uint32_t e = 0; e < f.n_edges; e++)
			if (!is_back(&f, e) && f.component[f.caller[e]] == f.component[f.callee[e]])
				ck_assert_uint_lt(f.rank[f.caller[e]], f.rank[f.callee[e]]);
	}
}
END_TEST

START_TEST(test_too_many_edges)
{
	struct fb f;

	fb_init(&f, 2);
	fb_edge(&f, 0, 1, 1);
	ck_assert_int_eq(fb_order(&f), 0);
	f.out_start[f.n_nodes] = DACCE_FEEDBACK_MAX_EDGES;
	{
		struct dacce_feedback_graph g = {
			.n_nodes = f.n_nodes, .out_start = f.out_start, .out_edges = f.out_edges,
			.in_start = f.in_start, .in_edges = f.in_edges, .caller_of = f.caller,
			.callee_of = f.callee, .weight = f.weight, .component = f.component,
			.tie = f.tie, .after = f.after,
		};

		ck_assert_int_eq(dacce_feedback_order(&g, f.n_edges, f.rank), -E2BIG);
	}
}
END_TEST

static Suite *feedback_suite(void)
{
	Suite *s = suite_create("feedback");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_two_node_cycle_keeps_its_heavy_edge);
	tcase_add_test(tc, test_node_to_follow_comes_first);
	tcase_add_test(tc, test_constraints_in_a_cycle_are_refused);
	tcase_add_test(tc, test_random_graphs);
	tcase_add_test(tc, test_too_many_edges);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(feedback_suite());
}
