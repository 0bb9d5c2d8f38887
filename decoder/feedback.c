// SPDX-License-Identifier: MIT
/*
 * Eades, Lin and Smyth (1993), weighted: nodes leave the graph one at a
 * time.  A sink goes to the back of the order (all its edges point to nodes
 * already placed after it), a source to the front; with neither, the node
 * whose remaining out-weight most exceeds its in-weight goes to the front,
 * which turns its heavy out-edges forward and leaves its light in-edges
 * back.  Each choice is local, so the result is good rather than minimal
 * (the minimum is NP-hard); it runs in O(E log E).
 *
 * Nodes joined by after[] (a tree of them inside one component: each node
 * follows at most one) must keep their edges forward.  Two ways, each better
 * on some graphs, and the order that leaves less weight back wins:
 * - grouped: each tree moves as one node, parent before child, weighed by
 *   its edges to and from the rest.  Weighed one by one, a function whose
 *   free call to its callee is hot looked like a good first node, and the
 *   cycle's hottest way back into it became the back edge (lua's sort
 *   comparator, tests/programs/hotback.c);
 * - one by one, a node not chosen for the front before its parent (as a
 *   source or a sink it cannot come before it anyway: the edge between
 *   them still counts).  On random graphs it leaves about 8 % less weight
 *   back than grouping (tests/simulate.c).
 */
#include "feedback.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

struct candidate {
	int64_t balance; /* out-weight minus in-weight when it was pushed */
	uint32_t tie, group;
};

struct placer {
	const struct dacce_feedback_graph *g;
	bool grouped;
	uint32_t *group;		  /* per node: the root of its after[] tree */
	uint32_t *member_start, *members; /* per group, parents before children */
	uint32_t *tie;			  /* per group: the largest of its members' */
	uint32_t *in_deg, *out_deg;	  /* per group, edges from and to other groups */
	uint64_t *w_in, *w_out;
	bool *placed;
	uint32_t *sinks, n_sinks, *sources, n_sources;
	struct candidate *heap;
	size_t n_heap;
	uint32_t front, back;
};

static uint64_t weight_of(const struct dacce_feedback_graph *g, uint32_t e)
{
	return g->weight[e] < DACCE_FEEDBACK_MAX_WEIGHT ? g->weight[e] : DACCE_FEEDBACK_MAX_WEIGHT;
}

static bool follows(const struct dacce_feedback_graph *g, uint32_t n)
{
	uint32_t a = g->after ? g->after[n] : DACCE_FEEDBACK_NONE;

	return a != DACCE_FEEDBACK_NONE && a != n && a < g->n_nodes &&
	       g->component[a] == g->component[n];
}

/* An edge between two groups of one component: the only kind weighed. */
static bool counts(const struct placer *p, uint32_t e)
{
	uint32_t a = p->g->caller_of[e], b = p->g->callee_of[e];

	return p->g->component[a] == p->g->component[b] && p->group[a] != p->group[b];
}

/*
 * group[n] (the root of n's after[] tree) and the members of each group,
 * parents before children (in increasing depth).  Each node's walk up stops
 * at the first node already resolved, so every node is walked once.
 * -EDEADLK when after[] goes round in a circle.
 */
static int find_groups(struct placer *p)
{
	const struct dacce_feedback_graph *g = p->g;
	uint32_t *depth = malloc(sizeof(*depth) * (g->n_nodes + 1));
	uint32_t *path = malloc(sizeof(*path) * (g->n_nodes + 1));
	uint32_t *by_depth = calloc((size_t)g->n_nodes + 2, sizeof(*by_depth));
	uint32_t *order = malloc(sizeof(*order) * (g->n_nodes + 1));
	uint32_t *fill = NULL;
	int err = -ENOMEM;

	if (!depth || !path || !by_depth || !order)
		goto cleanup;
	if (!p->grouped) {
		for (uint32_t n = 0; n < g->n_nodes; n++) {
			p->group[n] = p->members[n] = n;
			p->member_start[n + 1] = n + 1;
			p->tie[n] = g->tie[n];
		}
		err = 0;
		goto cleanup;
	}
	for (uint32_t n = 0; n < g->n_nodes; n++)
		depth[n] = UINT32_MAX; /* not resolved */
	for (uint32_t n = 0; n < g->n_nodes; n++) {
		uint32_t at = n, len = 0, root, d;

		while (depth[at] == UINT32_MAX) {
			if (len == g->n_nodes) {
				err = -EDEADLK;
				goto cleanup;
			}
			path[len++] = at;
			depth[at] = UINT32_MAX - 1; /* on this walk: meeting it again is a circle */
			if (!follows(g, at))
				break;
			at = g->after[at];
		}
		if (depth[at] == UINT32_MAX - 1 && at != path[len - 1]) {
			err = -EDEADLK;
			goto cleanup;
		}
		/* path[len - 1] is a root, or its parent at is resolved. */
		if (depth[at] == UINT32_MAX - 1) {
			root = at;
			d = 0;
		} else {
			root = p->group[at];
			d = depth[at] + 1;
		}
		while (len > 0) {
			uint32_t m = path[--len];

			p->group[m] = root;
			depth[m] = d++;
		}
	}
	/* A counting sort by depth, then each group's members in that order. */
	for (uint32_t n = 0; n < g->n_nodes; n++)
		by_depth[depth[n] + 1]++;
	for (uint32_t d = 0; d < g->n_nodes; d++)
		by_depth[d + 1] += by_depth[d];
	for (uint32_t n = 0; n < g->n_nodes; n++)
		order[by_depth[depth[n]]++] = n;
	for (uint32_t n = 0; n < g->n_nodes; n++)
		p->member_start[p->group[n] + 1]++;
	for (uint32_t n = 0; n < g->n_nodes; n++)
		p->member_start[n + 1] += p->member_start[n];
	fill = malloc(sizeof(*fill) * (g->n_nodes + 1));
	if (!fill)
		goto cleanup;
	for (uint32_t n = 0; n < g->n_nodes; n++)
		fill[n] = p->member_start[n];
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		uint32_t n = order[i];

		p->members[fill[p->group[n]]++] = n;
		if (g->tie[n] > p->tie[p->group[n]])
			p->tie[p->group[n]] = g->tie[n];
	}
	err = 0;
cleanup:
	free(depth);
	free(path);
	free(by_depth);
	free(order);
	free(fill);
	return err;
}

static int64_t balance_of(const struct placer *p, uint32_t grp)
{
	return (int64_t)p->w_out[grp] - (int64_t)p->w_in[grp];
}

static bool before(const struct candidate *a, const struct candidate *b)
{
	return a->balance != b->balance ? a->balance > b->balance : a->tie > b->tie;
}

static void heap_push(struct placer *p, uint32_t grp)
{
	struct candidate c = { balance_of(p, grp), p->tie[grp], grp };
	size_t i = p->n_heap++;

	while (i > 0 && before(&c, &p->heap[(i - 1) / 2])) {
		p->heap[i] = p->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	p->heap[i] = c;
}

static struct candidate heap_pop(struct placer *p)
{
	struct candidate top = p->heap[0], last = p->heap[--p->n_heap];
	size_t i = 0;

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= p->n_heap)
			break;
		if (child + 1 < p->n_heap && before(&p->heap[child + 1], &p->heap[child]))
			child++;
		if (!before(&p->heap[child], &last))
			break;
		p->heap[i] = p->heap[child];
		i = child;
	}
	if (p->n_heap)
		p->heap[i] = last;
	return top;
}

/*
 * Group grp leaves the graph with its members ranked from first on: the
 * groups it shares edges with lose them, and may become sinks or sources.
 */
static void place(struct placer *p, uint32_t grp, uint32_t first, uint32_t *rank)
{
	const struct dacce_feedback_graph *g = p->g;

	p->placed[grp] = true;
	for (uint32_t k = p->member_start[grp]; k < p->member_start[grp + 1]; k++) {
		uint32_t n = p->members[k];

		rank[n] = first++;
		for (uint32_t i = g->out_start[n]; i < g->out_start[n + 1]; i++) {
			uint32_t e = g->out_edges[i], m = p->group[g->callee_of[e]];

			if (!counts(p, e) || p->placed[m])
				continue;
			p->w_in[m] -= weight_of(g, e);
			if (--p->in_deg[m] == 0)
				p->sources[p->n_sources++] = m;
			heap_push(p, m);
		}
		for (uint32_t i = g->in_start[n]; i < g->in_start[n + 1]; i++) {
			uint32_t e = g->in_edges[i], m = p->group[g->caller_of[e]];

			if (!counts(p, e) || p->placed[m])
				continue;
			p->w_out[m] -= weight_of(g, e);
			if (--p->out_deg[m] == 0)
				p->sinks[p->n_sinks++] = m;
			heap_push(p, m);
		}
	}
}

static uint32_t size_of(const struct placer *p, uint32_t grp)
{
	return p->member_start[grp + 1] - p->member_start[grp];
}

/* Whether node n's parent in after[], if any, is placed (one by one: groups are nodes). */
static bool may_lead(const struct placer *p, uint32_t n)
{
	return p->grouped || !follows(p->g, n) || p->placed[p->g->after[n]];
}

/*
 * The next group to go to the front, from the heap.  Entries made stale by
 * a later push are skipped, and so are nodes whose parent is not placed
 * yet: placing it pushes them again (an edge joins them).
 */
static bool pop_best(struct placer *p, uint32_t *grp)
{
	while (p->n_heap) {
		struct candidate c = heap_pop(p);

		if (!p->placed[c.group] && c.balance == balance_of(p, c.group) &&
		    may_lead(p, c.group)) {
			*grp = c.group;
			return true;
		}
	}
	return false;
}

static void run(struct placer *p, uint32_t *rank)
{
	uint32_t grp;

	while (p->front < p->back) {
		if (p->n_sinks) {
			grp = p->sinks[--p->n_sinks];
			if (!p->placed[grp]) {
				p->back -= size_of(p, grp);
				place(p, grp, p->back, rank);
			}
		} else if (p->n_sources) {
			grp = p->sources[--p->n_sources];
			if (!p->placed[grp]) {
				place(p, grp, p->front, rank);
				p->front += size_of(p, grp);
			}
		} else if (pop_best(p, &grp)) {
			place(p, grp, p->front, rank);
			p->front += size_of(p, grp);
		} else {
			break; /* one by one, nodes left all wait for one another: after[] has a circle */
		}
	}
}

static void weigh(struct placer *p)
{
	const struct dacce_feedback_graph *g = p->g;

	for (uint32_t n = 0; n < g->n_nodes; n++)
		for (uint32_t k = g->out_start[n]; k < g->out_start[n + 1]; k++) {
			uint32_t e = g->out_edges[k];
			uint32_t from = p->group[n], to = p->group[g->callee_of[e]];

			if (!counts(p, e))
				continue;
			p->out_deg[from]++;
			p->w_out[from] += weight_of(g, e);
			p->in_deg[to]++;
			p->w_in[to] += weight_of(g, e);
		}
	for (uint32_t n = 0; n < g->n_nodes; n++) {
		if (p->group[n] != n)
			continue; /* not a group of its own */
		if (p->out_deg[n] == 0)
			p->sinks[p->n_sinks++] = n;
		else if (p->in_deg[n] == 0)
			p->sources[p->n_sources++] = n;
		heap_push(p, n);
	}
}

static int order_with(const struct dacce_feedback_graph *g, bool grouped, uint32_t *rank)
{
	struct placer p = { .g = g, .grouped = grouped, .back = g->n_nodes };
	uint32_t listed = g->out_start[g->n_nodes];
	size_t slots = (size_t)g->n_nodes + 1;
	int err = -ENOMEM;

	p.group = calloc(slots, sizeof(*p.group));
	p.member_start = calloc(slots + 1, sizeof(*p.member_start));
	p.members = calloc(slots, sizeof(*p.members));
	p.tie = calloc(slots, sizeof(*p.tie));
	p.in_deg = calloc(slots, sizeof(*p.in_deg));
	p.out_deg = calloc(slots, sizeof(*p.out_deg));
	p.w_in = calloc(slots, sizeof(*p.w_in));
	p.w_out = calloc(slots, sizeof(*p.w_out));
	p.placed = calloc(slots, sizeof(*p.placed));
	p.sinks = malloc(sizeof(*p.sinks) * slots);
	p.sources = malloc(sizeof(*p.sources) * slots);
	/* Every group once, then one push per endpoint of a listed edge. */
	p.heap = malloc(sizeof(*p.heap) * (slots + 2 * (size_t)listed));
	if (!p.group || !p.member_start || !p.members || !p.tie || !p.in_deg || !p.out_deg ||
	    !p.w_in || !p.w_out || !p.placed || !p.sinks || !p.sources || !p.heap)
		goto cleanup;
	err = find_groups(&p);
	if (err)
		goto cleanup;
	weigh(&p);
	run(&p, rank);
	err = p.front == p.back ? 0 : -EDEADLK;
cleanup:
	free(p.group);
	free(p.member_start);
	free(p.members);
	free(p.tie);
	free(p.in_deg);
	free(p.out_deg);
	free(p.w_in);
	free(p.w_out);
	free(p.placed);
	free(p.sinks);
	free(p.sources);
	free(p.heap);
	return err;
}

/* The weight an order leaves on back edges (self-loops left out: every order pushes them). */
static uint64_t back_weight(const struct dacce_feedback_graph *g, const uint32_t *rank)
{
	uint64_t sum = 0;

	for (uint32_t n = 0; n < g->n_nodes; n++)
		for (uint32_t k = g->out_start[n]; k < g->out_start[n + 1]; k++) {
			uint32_t e = g->out_edges[k], m = g->callee_of[e];

			if (m != n && g->component[m] == g->component[n] && rank[n] > rank[m])
				sum += weight_of(g, e);
		}
	return sum;
}

int dacce_feedback_order(const struct dacce_feedback_graph *g, uint32_t n_edges, uint32_t *rank)
{
	uint32_t *other;
	int err, err_other;

	if (g->out_start[g->n_nodes] >= DACCE_FEEDBACK_MAX_EDGES ||
	    n_edges >= DACCE_FEEDBACK_MAX_EDGES)
		return -E2BIG;
	other = malloc(sizeof(*other) * (g->n_nodes + 1));
	if (!other)
		return -ENOMEM;
	err = order_with(g, true, rank);
	err_other = order_with(g, false, other);
	if (err == -ENOMEM || err_other == -ENOMEM) {
		err = -ENOMEM;
	} else if (!err_other && (err || back_weight(g, other) < back_weight(g, rank))) {
		for (uint32_t n = 0; n < g->n_nodes; n++)
			rank[n] = other[n];
		err = 0;
	}
	free(other);
	return err;
}
