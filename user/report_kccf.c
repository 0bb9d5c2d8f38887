// SPDX-License-Identifier: MIT
/*
 * `dacce report --format kccf`: the k-calling context forest of D'Elia,
 * Demetrescu and Finocchi (OOPSLA 2012).  Its trees hold, for each routine,
 * the reversed paths of at most k calls that led to it (Definition 5), and it
 * equals inv_k(CCT) (Property 1), which is how it is built here (Lemma 1):
 * for every CCT node, the path of up to k ancestors is joined, reversed, into
 * the tree of the node's routine.
 */
#include "report_internal.h"

#include <errno.h>
#include <stdlib.h>

struct kccf_builder {
	const struct rpt_forest *cct;
	struct rpt_forest forest;
	unsigned int k;
	uint32_t *deepest; /* per CCT node: the forest node its reversed k-context ends at */
	uint32_t *active;  /* per forest node: CCT ancestors on the DFS path matching it */
	uint32_t *pending; /* DFS stack over the CCT; the top bit marks a node's exit */
};

#define EXIT_BIT 0x80000000u

/*
 * Joins the k-context of CCT node v, reversed, into the forest: v, its caller,
 * ... at most k calls out, each node counting v's self samples.  The path
 * stops after a truncated frame (what called it is unknown) and before the
 * virtual root.
 */
static int join_context(struct kccf_builder *b, uint32_t v)
{
	const struct rpt_forest_node *cct = b->cct->nodes;
	uint32_t at = 0, calls = 0;

	for (uint32_t w = v; w != 0; w = cct[w].parent) {
		int err = rpt_forest_child(&b->forest, at, cct[w].frame, &at);

		if (err)
			return err;
		b->forest.nodes[at].self = rpt_add_sat(b->forest.nodes[at].self, cct[v].self);
		if (calls++ == b->k || rpt_frame_is_truncated(cct[w].frame))
			break;
	}
	b->deepest[v] = at;
	return 0;
}

/* inv_k(CCT): every routine's reversed k-contexts joined. */
static int join_contexts(struct kccf_builder *b)
{
	for (uint32_t v = 1; v < b->cct->n_nodes; v++) {
		int err;

		if (rpt_frame_is_truncated(b->cct->nodes[v].frame))
			continue; /* a gap, not a routine: no tree of its own */
		err = join_context(b, v);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Totals: samples whose stack holds a node's path.  A CCT node w adds its
 * inclusive count to the forest nodes of its reversed context (the deepest
 * one and its ancestors) unless an ancestor of w already did: recursion
 * repeats a path on one stack.  The active counts track that along a
 * depth-first walk of the CCT.
 */
static void enter(struct kccf_builder *b, uint32_t w)
{
	for (uint32_t at = b->deepest[w]; at != 0; at = b->forest.nodes[at].parent) {
		struct rpt_forest_node *node = &b->forest.nodes[at];

		if (b->active[at]++ == 0)
			node->total = rpt_add_sat(node->total, b->cct->nodes[w].total);
	}
}

static void leave(struct kccf_builder *b, uint32_t w)
{
	for (uint32_t at = b->deepest[w]; at != 0; at = b->forest.nodes[at].parent)
		b->active[at]--;
}

static void push_children(struct kccf_builder *b, size_t *n_pending, uint32_t node)
{
	const struct rpt_forest_node *cct = b->cct->nodes;

	for (uint32_t c = cct[node].first_child; c != RPT_NONE; c = cct[c].next_sibling)
		b->pending[(*n_pending)++] = c;
}

static void count_totals(struct kccf_builder *b)
{
	size_t n_pending = 0;

	push_children(b, &n_pending, 0);
	while (n_pending) {
		uint32_t item = b->pending[--n_pending];

		if (item & EXIT_BIT) {
			leave(b, item & ~EXIT_BIT);
			continue;
		}
		enter(b, item);
		b->pending[n_pending++] = item | EXIT_BIT;
		push_children(b, &n_pending, item);
	}
}

static int build(struct kccf_builder *b)
{
	int err;

	b->pending = calloc(2 * b->cct->n_nodes, sizeof(*b->pending));
	b->deepest = calloc(b->cct->n_nodes, sizeof(*b->deepest)); /* 0: no context */
	if (!b->pending || !b->deepest || b->cct->n_nodes >= EXIT_BIT)
		return -ENOMEM;
	err = rpt_forest_init(&b->forest);
	if (!err)
		err = join_contexts(b);
	if (err)
		return err;
	b->active = calloc(b->forest.n_nodes, sizeof(*b->active));
	if (!b->active)
		return -ENOMEM;
	count_totals(b);
	return 0;
}

static void print_header(FILE *out, const struct dacce_rprofile *profile,
			 const struct dacce_report_options *opts)
{
	fprintf(out,
		"# k-calling context forest, k=%u: a tree per routine, below it its callers up to "
		"%u call%s out\n",
		opts->k, opts->k, opts->k == 1 ? "" : "s");
	fputs("# self: samples whose innermost routine and callers are this path (highest first); "
	      "total: samples with the path on the stack\n",
	      out);
	rpt_print_summary(out, profile);
	if (opts->min_percent > 0)
		fprintf(out, "# nodes below %.2f%% of all samples hidden\n", opts->min_percent);
}

int dacce_report_kccf(FILE *out, const struct dacce_rprofile *profile,
		      const struct dacce_report_options *opts)
{
	struct dacce_report_options defaults;
	struct rpt_forest cct = { 0 };
	struct kccf_builder b = { 0 };
	int err = rpt_check_args(out, profile);

	if (err)
		return err;
	opts = rpt_options(opts, &defaults);
	if (opts->k < 1 || !(opts->min_percent >= 0))
		return -EINVAL;
	err = rpt_cct_build(profile, &cct);
	if (err)
		goto cleanup;
	b.cct = &cct;
	b.k = opts->k;
	err = build(&b);
	if (err)
		goto cleanup;

	print_header(out, profile, opts);
	err = rpt_forest_print(out, &b.forest,
			       &(struct rpt_forest_style){
				       .percent_base = rpt_percent_base(profile),
				       .min_percent = opts->min_percent,
				       .child_prefix = "<- ",
				       .by_self = true,
			       });
	if (!err)
		err = rpt_flush(out);
cleanup:
	free(b.deepest);
	free(b.active);
	free(b.pending);
	rpt_forest_free(&b.forest);
	rpt_forest_free(&cct);
	return err;
}
