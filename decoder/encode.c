// SPDX-License-Identifier: MIT
/*
 * Encoding one epoch (DACCE section 3 and 4, PCCE sections 4 and 7).
 *
 * 1. Back edges: inside each strongly connected component, the edges against
 *    an order of its nodes that leaves the fewest calls on back edges that a
 *    greedy choice finds (feedback.h); the paper's depth-first search from R
 *    made whichever edge reached an ancestor a back edge, and interpreters,
 *    whose calls all lie on one cycle through the dispatch loop, then pushed
 *    some of their hottest calls (lua5.4's sort comparator, CPython's
 *    deallocations).  The search from R, following the hottest edges first,
 *    still runs: nodes R cannot reach through encodable edges (signal
 *    handlers, say) become extra search roots with a reserved "dummy"
 *    context, and so does a node every edge enters back, so every node has
 *    numCC >= 1 and a sub-path may start anywhere.
 * 2. In topological order (reverse DFS postorder), each node's encodable
 *    incoming edges, hottest first, receive consecutive ranges
 *    [En, En + numCC(caller)).  An edge whose range would push numCC past the
 *    id limit is demoted to unencoded (selective reduction); the first edge of
 *    a node always fits because numCC(caller) is itself within the limit.
 * 3. Leaf nodes (library functions that cannot call back, graph.h) come
 *    last: their incoming edges, hottest first across all of them, share one
 *    run of ranges that starts above every other node's numCC, so an id in
 *    it can only belong to a leaf call (decoding from DACCE_IN_LEAF).
 * 4. Indirect sites with many targets get a dispatch table.
 *
 * Edges free for good (DACCE_EDGE_KEEP_FREE, graph.h) come first among their
 * callee's incoming edges, and the order of a component puts their callee
 * after their caller, so a kept edge never closes a cycle, however the graph
 * grew since it was made free.  Where the weighted order cannot (never seen),
 * the component falls back to the search's finished order, which the search
 * makes safe the same way: it enters a kept edge's callee only through it,
 * and an edge inside a component is a back edge when its callee finishes
 * after its caller.  An edge between components is on no cycle and never
 * one.  Ranges are then given in a topological order of what is left
 * (Kahn's).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "feedback.h"
#include "scc.h"

struct encoder {
	const struct dacce_graph *graph;
	const struct dacce_encode_opts *opts;
	struct dacce_dict *dict;
	uint32_t *by_heat;     /* encodable edges, hottest first */
	uint32_t n_by_heat;
	uint32_t *out_start;   /* CSR of by_heat by caller */
	uint32_t *out_edges;
	uint32_t *in_start;    /* CSR of by_heat by callee */
	uint32_t *in_all;
	uint8_t *color;	       /* 0 white, 1 on the DFS stack, 2 done */
	uint32_t *postorder;
	uint32_t *post_index;  /* per node: its place in postorder */
	uint32_t *component;   /* per node: its strongly connected component */
	uint32_t *kept_in;     /* per node: its incoming edge free for good, or DACCE_NONE */
	uint32_t n_post;
	uint8_t *is_back;
	uint8_t *is_leaf;      /* per node: entered by a leaf edge */
};

enum { WHITE = 0, GRAY = 1, BLACK = 2 };

static bool kept_free(const struct dacce_edge *edge)
{
	return (edge->flags & DACCE_EDGE_KEEP_FREE) != 0;
}

/* Edges free for good first, then by frequency. */
static int hotter_first(const void *a, const void *b, void *ctx)
{
	const struct dacce_edge *edges = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (kept_free(&edges[x]) != kept_free(&edges[y]))
		return kept_free(&edges[x]) ? -1 : 1;
	if (edges[x].freq != edges[y].freq)
		return edges[x].freq > edges[y].freq ? -1 : 1;
	return x < y ? -1 : (x > y);
}

/* Buckets by_heat by key (caller or callee) keeping heat order inside a bucket. */
static int bucket_edges(struct encoder *enc, int by_callee, uint32_t **start_out,
			uint32_t **list_out)
{
	const struct dacce_graph *g = enc->graph;
	uint32_t *start = calloc((size_t)g->n_nodes + 1, sizeof(*start));
	uint32_t *list = malloc(sizeof(*list) * (enc->n_by_heat ? enc->n_by_heat : 1));
	uint32_t *fill = NULL;
	int err = -ENOMEM;

	if (!start || !list)
		goto cleanup;
	for (uint32_t i = 0; i < enc->n_by_heat; i++) {
		const struct dacce_edge *e = &g->edges[enc->by_heat[i]];

		start[(by_callee ? e->callee : e->caller) + 1]++;
	}
	for (uint32_t n = 0; n < g->n_nodes; n++)
		start[n + 1] += start[n];
	fill = malloc(sizeof(*fill) * (g->n_nodes ? g->n_nodes : 1));
	if (!fill)
		goto cleanup;
	memcpy(fill, start, sizeof(*fill) * g->n_nodes);
	for (uint32_t i = 0; i < enc->n_by_heat; i++) {
		const struct dacce_edge *e = &g->edges[enc->by_heat[i]];

		list[fill[by_callee ? e->callee : e->caller]++] = enc->by_heat[i];
	}
	*start_out = start;
	*list_out = list;
	start = NULL;
	list = NULL;
	err = 0;
cleanup:
	free(fill);
	free(start);
	free(list);
	return err;
}

static int sort_by_heat(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;

	enc->by_heat = malloc(sizeof(*enc->by_heat) * (g->n_edges ? g->n_edges : 1));
	if (!enc->by_heat)
		return -ENOMEM;
	for (uint32_t e = 0; e < g->n_edges; e++)
		if (dacce_site_kind_is_encodable(g->edges[e].kind) &&
		    !(g->edges[e].flags & DACCE_EDGE_PINNED))
			enc->by_heat[enc->n_by_heat++] = e;
	qsort_r(enc->by_heat, enc->n_by_heat, sizeof(*enc->by_heat), hotter_first,
		g->edges);
	return 0;
}

/* Whether the search may enter m through e: not when m is kept for another edge. */
static bool enters_through(const struct encoder *enc, uint32_t m, uint32_t e)
{
	return enc->kept_in[m] == DACCE_NONE || enc->kept_in[m] == e;
}

/* Iterative DFS from root; fills postorder (back edges come from it, mark_back_edges). */
static int dfs_from(struct encoder *enc, uint32_t root, uint32_t *stack_node,
		    uint32_t *stack_pos)
{
	uint32_t top = 0;

	enc->color[root] = GRAY;
	stack_node[0] = root;
	stack_pos[0] = enc->out_start[root];
	while (1) {
		uint32_t n = stack_node[top];

		if (stack_pos[top] < enc->out_start[n + 1]) {
			uint32_t e = enc->out_edges[stack_pos[top]++];
			uint32_t m = enc->graph->edges[e].callee;

			if (enc->color[m] == WHITE && enters_through(enc, m, e)) {
				enc->color[m] = GRAY;
				top++;
				stack_node[top] = m;
				stack_pos[top] = enc->out_start[m];
			}
			continue;
		}
		enc->color[n] = BLACK;
		enc->post_index[n] = enc->n_post;
		enc->postorder[enc->n_post++] = n;
		if (top == 0)
			return 0;
		top--;
	}
}

/*
 * Each node's incoming edge free for good.  Two for one callee, or one that
 * cannot be encoded, are the caller's mistake: -EINVAL.
 */
static int find_kept_edges(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;

	for (uint32_t n = 0; n < g->n_nodes; n++)
		enc->kept_in[n] = DACCE_NONE;
	for (uint32_t e = 0; e < g->n_edges; e++) {
		const struct dacce_edge *edge = &g->edges[e];

		if (!kept_free(edge))
			continue;
		if (!dacce_site_kind_is_encodable(edge->kind) ||
		    (edge->flags & (DACCE_EDGE_PINNED | DACCE_EDGE_LEAF)) ||
		    edge->callee == DACCE_ROOT_NODE || enc->kept_in[edge->callee] != DACCE_NONE)
			return -EINVAL;
		enc->kept_in[edge->callee] = e;
	}
	return 0;
}

/* The order of each component that leaves its lightest edges back (feedback.h), in rank. */
static int rank_by_weight(struct encoder *enc, uint32_t *rank)
{
	const struct dacce_graph *g = enc->graph;
	uint64_t *weight = malloc(sizeof(*weight) * (g->n_edges ? g->n_edges : 1));
	uint32_t *after = malloc(sizeof(*after) * g->n_nodes);
	struct dacce_feedback_graph fg = {
		.n_nodes = g->n_nodes,
		.out_start = enc->out_start, .out_edges = enc->out_edges,
		.in_start = enc->in_start, .in_edges = enc->in_all,
		.caller_of = enc->dict->edge_caller, .callee_of = enc->dict->edge_callee,
		.weight = weight, .component = enc->component, .tie = enc->post_index,
		.after = after,
	};
	int err;

	if (!weight || !after) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (uint32_t e = 0; e < g->n_edges; e++)
		weight[e] = g->edges[e].freq < DACCE_FEEDBACK_MAX_WEIGHT ? g->edges[e].freq + 1
									 : DACCE_FEEDBACK_MAX_WEIGHT;
	/* A kept edge is never a back edge: its callee follows its caller. */
	for (uint32_t n = 0; n < g->n_nodes; n++)
		after[n] = enc->kept_in[n] == DACCE_NONE ? DACCE_FEEDBACK_NONE
							 : g->edges[enc->kept_in[n]].caller;
	err = dacce_feedback_order(&fg, g->n_edges, rank);
cleanup:
	free(weight);
	free(after);
	return err;
}

/*
 * Inside a component, an edge is a back edge when it goes against the
 * component's order: the weighted one, or, in a component where that order
 * would make a kept edge a back edge (or for a graph too large for it), the
 * search's (its callee finished after its caller).  Between components none
 * is.  A node every encodable edge enters back (the first of its component
 * in the order, entered from no other) starts contexts of its own: dummy.
 */
static int mark_back_edges(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;
	uint32_t *rank = calloc(g->n_nodes, sizeof(*rank));
	uint8_t *by_search = calloc(g->n_nodes, 1), *entered = calloc(g->n_nodes, 1);
	int err = -ENOMEM;

	if (!rank || !by_search || !entered)
		goto cleanup;
	err = dacce_scc(g->n_nodes, enc->out_start, enc->out_edges, enc->dict->edge_callee,
			enc->component);
	if (!err)
		err = rank_by_weight(enc, rank);
	if (err == -E2BIG || err == -EDEADLK) {
		memset(by_search, 1, g->n_nodes);
		err = 0;
	}
	if (err)
		goto cleanup;
	for (uint32_t n = 0; n < g->n_nodes; n++) {
		uint32_t e = enc->kept_in[n];

		if (e != DACCE_NONE && enc->component[g->edges[e].caller] == enc->component[n] &&
		    rank[g->edges[e].caller] >= rank[n])
			by_search[enc->component[n]] = 1;
	}
	for (uint32_t i = 0; i < enc->n_by_heat; i++) {
		uint32_t e = enc->by_heat[i];
		const struct dacce_edge *edge = &g->edges[e];
		uint32_t c = enc->component[edge->caller];

		if (c != enc->component[edge->callee])
			enc->is_back[e] = 0;
		else if (by_search[c])
			enc->is_back[e] = enc->post_index[edge->caller] <= enc->post_index[edge->callee];
		else
			enc->is_back[e] = rank[edge->caller] >= rank[edge->callee];
		if (!enc->is_back[e])
			entered[edge->callee] = 1;
	}
	for (uint32_t n = 0; n < g->n_nodes; n++)
		if (n != DACCE_ROOT_NODE && !entered[n])
			enc->dict->dummy[n] = 1;
cleanup:
	free(rank);
	free(by_search);
	free(entered);
	return err;
}

/*
 * postorder becomes a reversed topological order of the edges that are not
 * back edges (assign_encodings walks it from the end), callers before
 * callees however the search finished them.
 */
static int order_topologically(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;
	uint32_t *waiting = calloc(g->n_nodes, sizeof(*waiting)), head = 0, tail = 0;
	uint32_t *queue = malloc(sizeof(*queue) * g->n_nodes);
	int err = -ENOMEM;

	if (!waiting || !queue)
		goto cleanup;
	for (uint32_t i = 0; i < enc->n_by_heat; i++)
		if (!enc->is_back[enc->by_heat[i]])
			waiting[g->edges[enc->by_heat[i]].callee]++;
	for (uint32_t i = g->n_nodes; i-- > 0;) {
		uint32_t n = enc->postorder[i]; /* ties in the search's order */

		if (waiting[n] == 0)
			queue[tail++] = n;
	}
	while (head < tail) {
		uint32_t n = queue[head++];

		for (uint32_t k = enc->out_start[n]; k < enc->out_start[n + 1]; k++) {
			uint32_t e = enc->out_edges[k];

			if (!enc->is_back[e] && --waiting[g->edges[e].callee] == 0)
				queue[tail++] = g->edges[e].callee;
		}
	}
	err = tail == g->n_nodes ? 0 : -EDEADLK; /* a cycle left: never, by mark_back_edges */
	for (uint32_t i = 0; !err && i < g->n_nodes; i++)
		enc->postorder[g->n_nodes - 1 - i] = queue[i];
cleanup:
	free(waiting);
	free(queue);
	return err;
}

static int find_back_edges(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;
	uint32_t *stack_node = malloc(sizeof(*stack_node) * g->n_nodes);
	uint32_t *stack_pos = malloc(sizeof(*stack_pos) * g->n_nodes);
	int err = -ENOMEM;

	if (!stack_node || !stack_pos)
		goto cleanup;
	err = dfs_from(enc, DACCE_ROOT_NODE, stack_node, stack_pos);
	/*
	 * Extra roots: first nodes no kept edge enters (a kept callee is then
	 * reached through its edge, from wherever its caller was), then any left.
	 */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t n = 1; !err && n < g->n_nodes; n++) {
			if (enc->color[n] != WHITE || (pass == 0 && enc->kept_in[n] != DACCE_NONE))
				continue;
			enc->dict->dummy[n] = 1;
			err = dfs_from(enc, n, stack_node, stack_pos);
		}
	if (!err)
		err = mark_back_edges(enc);
	if (!err)
		err = order_topologically(enc);
cleanup:
	free(stack_node);
	free(stack_pos);
	return err;
}

/* Gives edge e the range starting at *s, or demotes it; true when encoded. */
static bool take_range(struct encoder *enc, uint32_t e, uint64_t *s, uint64_t limit)
{
	struct dacce_dict *d = enc->dict;
	uint64_t cc = d->num_cc[enc->graph->edges[e].caller];

	if (enc->is_back[e]) {
		d->edge_class[e] = DACCE_EDGE_BACK;
		return false;
	}
	/* cc >= 1 here: callers come first in topological order. */
	if (*s + cc > limit) {
		d->edge_class[e] = DACCE_EDGE_UNENCODED;
		return false;
	}
	d->edge_class[e] = DACCE_EDGE_ENCODED;
	d->en[e] = *s;
	*s += cc;
	return true;
}

static void mark_leaf_nodes(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;

	for (uint32_t e = 0; e < g->n_edges; e++)
		if ((g->edges[e].flags & DACCE_EDGE_LEAF) && g->edges[e].callee != DACCE_ROOT_NODE)
			enc->is_leaf[g->edges[e].callee] = 1;
}

/*
 * The leaf id space: [floor, end), floor above every other node's numCC,
 * shared by the incoming edges of all leaf nodes, hottest first.  A leaf
 * node calls nothing we instrument, so no numCC depends on it.
 */
static uint64_t assign_leaf_ranges(struct encoder *enc, uint64_t floor, uint64_t limit)
{
	const struct dacce_graph *g = enc->graph;
	struct dacce_dict *d = enc->dict;
	uint64_t s = floor;

	for (uint32_t i = 0; i < enc->n_by_heat; i++) {
		uint32_t e = enc->by_heat[i];
		uint32_t n = g->edges[e].callee;

		if (enc->is_leaf[n] && take_range(enc, e, &s, limit))
			d->in_start[n]++;
	}
	for (uint32_t n = 0; n < g->n_nodes; n++) {
		if (!enc->is_leaf[n])
			continue;
		d->num_cc[n] = s;
		d->dummy[n] = DACCE_DUMMY_LEAF;
	}
	return s;
}

/*
 * An En past 2^31 costs the runtime a 64-bit immediate: a register spilled
 * and reloaded around the add and the sub (runtime/ops.c).  When no order of
 * node n's in-edges would demote one (their callers' contexts fit under the
 * limit together), those whose callers have fewer than 2^31 contexts go
 * right after the free one, hottest first, and the others after them: more
 * calls get an En that fits 32 bits.  gcc's cc1 (maxID about 10^15) spent
 * 1.4 % of its samples in the adds and subs of large ones.  in_all of n is
 * reordered in place: it stays the order of increasing En.
 */
#define SMALL_EN_MAX ((uint64_t)INT32_MAX)
static void small_ranges_first(struct encoder *enc, uint32_t n, uint64_t s, uint64_t limit,
			       uint32_t *scratch)
{
	uint32_t *in = enc->in_all + enc->in_start[n];
	uint32_t count = enc->in_start[n + 1] - enc->in_start[n], first = count, w = 0;
	const uint64_t *num_cc = enc->dict->num_cc;

	for (uint32_t k = 0; k < count; k++) {
		uint64_t cc = num_cc[enc->graph->edges[in[k]].caller];

		if (enc->is_back[in[k]])
			continue;
		if (first == count)
			first = k;
		if (s > limit - cc)
			return;
		s += cc;
	}
	if (first >= count)
		return;
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t k = first + 1; k < count; k++) {
			uint32_t e = in[k];
			bool small = !enc->is_back[e] &&
				     num_cc[enc->graph->edges[e].caller] <= SMALL_EN_MAX;

			if (small == (pass == 0))
				scratch[w++] = e;
		}
	for (uint32_t k = 0; k < w; k++)
		in[first + 1 + k] = scratch[k];
}

/* numCC and En in topological order, demoting what does not fit. */
static int assign_encodings(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;
	struct dacce_dict *d = enc->dict;
	uint64_t limit = enc->opts->id_limit ? enc->opts->id_limit : DACCE_ID_LIMIT_DEFAULT;
	uint64_t max_cc = 0, leaf_end;
	uint32_t n_in = 0, *scratch;

	if (limit > DACCE_ID_LIMIT_DEFAULT)
		return -EINVAL;
	scratch = malloc(sizeof(*scratch) * (enc->n_by_heat ? enc->n_by_heat : 1));
	if (!scratch)
		return -ENOMEM;
	d->id_limit = limit;
	mark_leaf_nodes(enc);
	for (uint32_t i = g->n_nodes; i-- > 0;) {
		uint32_t n = enc->postorder[i];
		uint64_t s = n == DACCE_ROOT_NODE ? 1 : d->dummy[n];

		d->in_start[n] = 0;
		if (enc->is_leaf[n])
			continue;
		small_ranges_first(enc, n, s, limit, scratch);
		for (uint32_t k = enc->in_start[n]; k < enc->in_start[n + 1]; k++)
			if (take_range(enc, enc->in_all[k], &s, limit))
				d->in_start[n]++; /* count for now; prefix sums below */
		d->num_cc[n] = s;
		if (s > max_cc)
			max_cc = s;
	}
	free(scratch);
	leaf_end = assign_leaf_ranges(enc, max_cc, limit);
	if (leaf_end > max_cc)
		max_cc = leaf_end;
	d->max_id = max_cc - 1;

	/* Prefix sums, then the encoded in-edges of each node in En order. */
	for (uint32_t n = 0; n < g->n_nodes; n++) {
		uint32_t count = d->in_start[n];

		d->in_start[n] = n_in;
		n_in += count;
	}
	d->in_start[g->n_nodes] = n_in;
	for (uint32_t n = 0; n < g->n_nodes; n++) {
		uint32_t at = d->in_start[n];

		/* in_all is in increasing En (hottest first but for small_ranges_first). */
		for (uint32_t k = enc->in_start[n]; k < enc->in_start[n + 1]; k++) {
			uint32_t e = enc->in_all[k];

			if (d->edge_class[e] == DACCE_EDGE_ENCODED)
				d->in_edges[at++] = e;
		}
	}
	return 0;
}

static void copy_structure(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;
	struct dacce_dict *d = enc->dict;

	for (uint32_t s = 0; s < g->n_sites; s++) {
		d->site_caller[s] = g->sites[s].caller;
		d->site_kind[s] = g->sites[s].kind;
	}
	for (uint32_t e = 0; e < g->n_edges; e++) {
		d->edge_site[e] = g->edges[e].site;
		d->edge_caller[e] = g->edges[e].caller;
		d->edge_callee[e] = g->edges[e].callee;
		/* Nested roots and pinned edges keep the default: unencoded. */
		d->edge_class[e] = DACCE_EDGE_UNENCODED;
	}
}

static void assign_compression(struct encoder *enc)
{
	struct dacce_dict *d = enc->dict;

	for (uint32_t e = 0; e < d->n_edges; e++) {
		if (dacce_site_kind_is_nested_root(d->site_kind[d->edge_site[e]]))
			d->edge_compress[e] = 0;
		else if (d->edge_class[e] == DACCE_EDGE_BACK)
			d->edge_compress[e] = enc->opts->compress_back_edges;
		else if (d->edge_class[e] == DACCE_EDGE_UNENCODED)
			d->edge_compress[e] = enc->opts->compress_unencoded;
	}
	d->compress_new = enc->opts->compress_unencoded;
}

static int build_one_table(struct dacce_dispatch *t, uint32_t site, const uint32_t *edges,
			   uint32_t count, const struct dacce_graph *g)
{
	uint32_t bits = 1;

	while ((1u << bits) < 2 * count)
		bits++;
	t->site = site;
	t->bits = bits;
	t->callee = malloc(sizeof(*t->callee) << bits);
	t->edge = malloc(sizeof(*t->edge) << bits);
	if (!t->callee || !t->edge)
		return -ENOMEM;
	memset(t->callee, 0xff, sizeof(*t->callee) << bits);
	memset(t->edge, 0xff, sizeof(*t->edge) << bits);
	for (uint32_t i = 0; i < count; i++) {
		uint32_t callee = g->edges[edges[i]].callee;
		uint32_t slot = dacce_dispatch_slot(callee, bits);

		while (t->callee[slot] != DACCE_NONE)
			slot = (slot + 1) & ((1u << bits) - 1);
		t->callee[slot] = callee;
		t->edge[slot] = edges[i];
	}
	return 0;
}

/* Edges of every site, grouped by site (CSR). */
static int group_by_site(const struct dacce_graph *g, uint32_t **start_out, uint32_t **list_out)
{
	uint32_t *start = calloc((size_t)g->n_sites + 1, sizeof(*start));
	uint32_t *list = malloc(sizeof(*list) * (g->n_edges ? g->n_edges : 1));
	uint32_t *fill = malloc(sizeof(*fill) * g->n_sites);

	if (!start || !list || !fill) {
		free(start);
		free(list);
		free(fill);
		return -ENOMEM;
	}
	for (uint32_t e = 0; e < g->n_edges; e++)
		start[g->edges[e].site + 1]++;
	for (uint32_t s = 0; s < g->n_sites; s++)
		start[s + 1] += start[s];
	memcpy(fill, start, sizeof(*fill) * g->n_sites);
	for (uint32_t e = 0; e < g->n_edges; e++)
		list[fill[g->edges[e].site]++] = e;
	free(fill);
	*start_out = start;
	*list_out = list;
	return 0;
}

static int build_dispatch_tables(struct encoder *enc)
{
	const struct dacce_graph *g = enc->graph;
	struct dacce_dict *d = enc->dict;
	uint32_t min = enc->opts->dispatch_min_targets;
	uint32_t *site_start = NULL, *site_edges = NULL;
	int err;

	if (min == 0)
		return 0;
	err = group_by_site(g, &site_start, &site_edges);
	if (err)
		return err;
	/* Sites are visited in increasing order, so tables come out sorted. */
	for (uint32_t s = 0; s < g->n_sites; s++) {
		uint32_t count = site_start[s + 1] - site_start[s];
		uint8_t kind = g->sites[s].kind;
		struct dacce_dispatch *grown;

		/* Past DACCE_DISPATCH_MAX_TARGETS the runtime's slow path is as good. */
		if ((kind != DACCE_SITE_INDIRECT && kind != DACCE_SITE_TAIL_INDIRECT) ||
		    count < min || count > DACCE_DISPATCH_MAX_TARGETS)
			continue;
		grown = realloc(d->dispatch, sizeof(*grown) * (d->n_dispatch + 1));
		if (!grown) {
			err = -ENOMEM;
			goto cleanup;
		}
		d->dispatch = grown;
		memset(&d->dispatch[d->n_dispatch], 0, sizeof(*grown));
		d->n_dispatch++;
		err = build_one_table(&d->dispatch[d->n_dispatch - 1], s,
				      site_edges + site_start[s], count, g);
		if (err)
			goto cleanup;
	}
cleanup:
	free(site_start);
	free(site_edges);
	return err;
}

/* Every kept edge encoded at 0, or the encoding breaks the runtime's promise. */
static int check_kept_edges(const struct encoder *enc)
{
	const struct dacce_dict *d = enc->dict;

	for (uint32_t n = 0; n < enc->graph->n_nodes; n++) {
		uint32_t e = enc->kept_in[n];

		if (e != DACCE_NONE && (d->edge_class[e] != DACCE_EDGE_ENCODED || d->en[e] != 0))
			return -EDEADLK;
	}
	return 0;
}

static void encoder_fini(struct encoder *enc)
{
	free(enc->by_heat);
	free(enc->out_start);
	free(enc->out_edges);
	free(enc->in_start);
	free(enc->in_all);
	free(enc->color);
	free(enc->postorder);
	free(enc->post_index);
	free(enc->component);
	free(enc->kept_in);
	free(enc->is_back);
	free(enc->is_leaf);
}

int dacce_encode(const struct dacce_graph *graph, const struct dacce_encode_opts *opts,
		 struct dacce_dict **out)
{
	struct encoder enc = { .graph = graph, .opts = opts };
	struct dacce_encode_opts defaults;
	int err = -ENOMEM;

	if (!graph || !out || graph->n_nodes == 0)
		return -EINVAL;
	if (!opts) {
		dacce_encode_opts_default(&defaults);
		enc.opts = opts = &defaults;
	}
	/* in_edges is sized for every edge: at most all of them are encoded. */
	enc.dict = dacce_dict_alloc(graph->n_nodes, graph->n_sites, graph->n_edges,
				    graph->n_edges, 0);
	if (!enc.dict)
		goto cleanup;
	enc.dict->epoch = opts->epoch;
	enc.color = calloc(graph->n_nodes, 1);
	enc.postorder = malloc(sizeof(*enc.postorder) * graph->n_nodes);
	enc.post_index = malloc(sizeof(*enc.post_index) * graph->n_nodes);
	enc.component = malloc(sizeof(*enc.component) * graph->n_nodes);
	enc.kept_in = malloc(sizeof(*enc.kept_in) * graph->n_nodes);
	enc.is_back = calloc(graph->n_edges ? graph->n_edges : 1, 1);
	enc.is_leaf = calloc(graph->n_nodes, 1);
	if (!enc.color || !enc.postorder || !enc.post_index || !enc.component || !enc.kept_in ||
	    !enc.is_back || !enc.is_leaf)
		goto cleanup;

	copy_structure(&enc);
	err = find_kept_edges(&enc);
	if (!err)
		err = sort_by_heat(&enc);
	if (!err)
		err = bucket_edges(&enc, 0, &enc.out_start, &enc.out_edges);
	if (!err)
		err = bucket_edges(&enc, 1, &enc.in_start, &enc.in_all);
	if (!err)
		err = find_back_edges(&enc);
	if (!err)
		err = assign_encodings(&enc);
	if (!err)
		err = check_kept_edges(&enc);
	if (err)
		goto cleanup;
	assign_compression(&enc);
	err = build_dispatch_tables(&enc);
	if (!err)
		err = dacce_dict_index(enc.dict);
	if (err)
		goto cleanup;
	*out = enc.dict;
	enc.dict = NULL;
cleanup:
	dacce_dict_free(enc.dict);
	encoder_fini(&enc);
	return err;
}
