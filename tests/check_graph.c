// SPDX-License-Identifier: MIT
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "check_main.h"
#include "graph.h"

static const uint8_t build_id[] = { 1, 2, 3, 4, 5, 6, 7, 8 };

START_TEST(test_new_graph_has_root_and_root_sites)
{
	struct dacce_graph *g = dacce_graph_new();

	ck_assert_ptr_nonnull(g);
	ck_assert_uint_eq(g->n_nodes, 1);
	ck_assert_uint_eq(g->n_sites, DACCE_NR_ROOT_SITES);
	ck_assert_uint_eq(g->sites[DACCE_ROOT_SITE_MAIN].kind, DACCE_SITE_ROOT_MAIN);
	ck_assert_uint_eq(g->sites[DACCE_ROOT_SITE_THREAD].kind, DACCE_SITE_ROOT_THREAD);
	ck_assert_uint_eq(g->sites[DACCE_ROOT_SITE_SIGNAL].kind, DACCE_SITE_ROOT_SIGNAL);
	ck_assert_uint_eq(g->sites[DACCE_ROOT_SITE_CALLBACK].kind, DACCE_SITE_ROOT_CALLBACK);
	for (int i = 0; i < DACCE_NR_ROOT_SITES; i++)
		ck_assert_uint_eq(g->sites[i].caller, DACCE_ROOT_NODE);
	dacce_graph_free(g);
	dacce_graph_free(NULL);
}
END_TEST

START_TEST(test_insertion_is_idempotent)
{
	struct dacce_graph *g = dacce_graph_new();
	uint32_t m, m2, a, a2, b, site, site2, e, e2;

	ck_assert_int_eq(dacce_graph_add_module(g, build_id, sizeof(build_id), &m), 0);
	ck_assert_int_eq(dacce_graph_add_module(g, build_id, sizeof(build_id), &m2), 0);
	ck_assert_uint_eq(m, m2);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x1000, &a), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x1000, &a2), 0);
	ck_assert_uint_eq(a, a2);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x2000, &b), 0);
	ck_assert_uint_ne(a, b);
	ck_assert_int_eq(dacce_graph_add_site(g, a, m, 0x1010, DACCE_SITE_INDIRECT, &site), 0);
	ck_assert_int_eq(dacce_graph_add_site(g, a, m, 0x1010, DACCE_SITE_INDIRECT, &site2), 0);
	ck_assert_uint_eq(site, site2);
	ck_assert_int_eq(dacce_graph_add_edge(g, site, b, &e), 0);
	ck_assert_int_eq(dacce_graph_add_edge(g, site, b, &e2), 0);
	ck_assert_uint_eq(e, e2);
	ck_assert_uint_eq(g->edges[e].caller, a);
	ck_assert_uint_eq(g->edges[e].callee, b);
	ck_assert_uint_eq(g->edges[e].kind, DACCE_SITE_INDIRECT);
	ck_assert_uint_eq(dacce_graph_find_node(g, m, 0x2000), b);
	ck_assert_uint_eq(dacce_graph_find_site(g, m, 0x1010), site);
	ck_assert_uint_eq(dacce_graph_find_edge(g, site, b), e);
	ck_assert_uint_eq(dacce_graph_find_edge(g, site, a), DACCE_NONE);
	ck_assert_uint_eq(dacce_graph_find_node(g, m, 0x3000), DACCE_NONE);
	dacce_graph_free(g);
}
END_TEST

START_TEST(test_bad_arguments_are_refused)
{
	struct dacce_graph *g = dacce_graph_new();
	uint32_t m, a, site, out;
	uint8_t long_id[DACCE_BUILD_ID_MAX + 1] = { 0 };

	ck_assert_int_eq(dacce_graph_add_module(g, long_id, sizeof(long_id), &out), -EINVAL);
	ck_assert_int_eq(dacce_graph_add_module(g, build_id, sizeof(build_id), &m), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m + 1, 0, &out), -EINVAL);
	ck_assert_int_eq(dacce_graph_add_node(g, m, DACCE_OFFSET_MAX + 1, &out), -EINVAL);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x10, &a), 0);
	/* Sites belong to real functions and are never root kinds. */
	ck_assert_int_eq(dacce_graph_add_site(g, DACCE_ROOT_NODE, m, 1, DACCE_SITE_DIRECT, &out),
			 -EINVAL);
	ck_assert_int_eq(dacce_graph_add_site(g, a, m, 1, DACCE_SITE_ROOT_SIGNAL, &out), -EINVAL);
	ck_assert_int_eq(dacce_graph_add_site(g, a, m, 1, DACCE_SITE_KIND_COUNT, &out), -EINVAL);
	ck_assert_int_eq(dacce_graph_add_site(g, a, m, 1, DACCE_SITE_DIRECT, &site), 0);
	/* Same place, other kind: a conflict, not a new site. */
	ck_assert_int_eq(dacce_graph_add_site(g, a, m, 1, DACCE_SITE_INDIRECT, &out), -EEXIST);
	ck_assert_int_eq(dacce_graph_add_edge(g, site, DACCE_ROOT_NODE, &out), -EINVAL);
	ck_assert_int_eq(dacce_graph_add_edge(g, site + 100, a, &out), -EINVAL);
	ck_assert_int_eq(dacce_graph_add_edge(g, site, a + 100, &out), -EINVAL);
	ck_assert_int_eq(dacce_graph_add_root_edge(g, DACCE_NR_ROOT_SITES, a, &out), -EINVAL);
	dacce_graph_free(g);
}
END_TEST

/* An edge kept free for good can be taken back (a call the runtime takes back), and kept again. */
START_TEST(test_kept_edge_taken_back)
{
	struct dacce_graph *g = dacce_graph_new();
	uint32_t m, a, b, site, edge;

	ck_assert_int_eq(dacce_graph_add_module(g, build_id, sizeof(build_id), &m), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x10, &a), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0x20, &b), 0);
	ck_assert_int_eq(dacce_graph_add_site(g, a, m, 0x14, DACCE_SITE_DIRECT, &site), 0);
	ck_assert_int_eq(dacce_graph_add_edge(g, site, b, &edge), 0);
	ck_assert_int_eq(dacce_graph_leaf_edge(g, edge), 0);
	ck_assert_int_eq(dacce_graph_keep_free_edge(g, edge), 0);
	ck_assert(g->edges[edge].flags & DACCE_EDGE_KEEP_FREE);
	ck_assert_int_eq(dacce_graph_unkeep_free_edge(g, edge), 0);
	ck_assert(!(g->edges[edge].flags & DACCE_EDGE_KEEP_FREE));
	/* Only that mark goes. */
	ck_assert(g->edges[edge].flags & DACCE_EDGE_LEAF);
	ck_assert_int_eq(dacce_graph_keep_free_edge(g, edge), 0);
	ck_assert(g->edges[edge].flags & DACCE_EDGE_KEEP_FREE);
	ck_assert_int_eq(dacce_graph_unkeep_free_edge(g, edge + 1), -EINVAL);
	ck_assert_int_eq(dacce_graph_unkeep_free_edge(NULL, edge), -EINVAL);
	dacce_graph_free(g);
}
END_TEST

START_TEST(test_many_insertions)
{
	struct dacce_graph *g = dacce_graph_new();
	uint32_t m, prev, node, site, edge;

	ck_assert_int_eq(dacce_graph_add_module(g, build_id, sizeof(build_id), &m), 0);
	ck_assert_int_eq(dacce_graph_add_node(g, m, 0, &prev), 0);
	for (uint32_t i = 1; i < 100000; i++) {
		ck_assert_int_eq(dacce_graph_add_node(g, m, (uint64_t)i * 16, &node), 0);
		ck_assert_int_eq(dacce_graph_add_site(g, prev, m, 0x10000000 + i, DACCE_SITE_DIRECT,
						      &site), 0);
		ck_assert_int_eq(dacce_graph_add_edge(g, site, node, &edge), 0);
		prev = node;
	}
	ck_assert_uint_eq(g->n_nodes, 100001);
	ck_assert_uint_eq(g->n_edges, 99999);
	for (uint32_t i = 1; i < 100000; i += 997)
		ck_assert_uint_eq(dacce_graph_find_node(g, m, (uint64_t)i * 16), i + 1);
	dacce_graph_free(g);
}
END_TEST

START_TEST(test_site_kind_predicates)
{
	ck_assert(dacce_site_kind_is_tail(DACCE_SITE_TAIL_DIRECT));
	ck_assert(dacce_site_kind_is_tail(DACCE_SITE_TAIL_INDIRECT));
	ck_assert(!dacce_site_kind_is_tail(DACCE_SITE_PLT));
	ck_assert(dacce_site_kind_is_nested_root(DACCE_SITE_ROOT_SIGNAL));
	ck_assert(!dacce_site_kind_is_nested_root(DACCE_SITE_ROOT_THREAD));
	ck_assert(dacce_site_kind_is_encodable(DACCE_SITE_ROOT_THREAD));
	ck_assert(!dacce_site_kind_is_encodable(DACCE_SITE_ROOT_CALLBACK));
	ck_assert_str_eq(dacce_site_kind_name(DACCE_SITE_PLT), "plt");
	ck_assert_str_eq(dacce_site_kind_name(DACCE_SITE_KIND_COUNT), "unknown");
}
END_TEST

static Suite *graph_suite(void)
{
	Suite *s = suite_create("graph");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_new_graph_has_root_and_root_sites);
	tcase_add_test(tc, test_insertion_is_idempotent);
	tcase_add_test(tc, test_bad_arguments_are_refused);
	tcase_add_test(tc, test_kept_edge_taken_back);
	tcase_add_test(tc, test_many_insertions);
	tcase_add_test(tc, test_site_kind_predicates);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(graph_suite());
}
