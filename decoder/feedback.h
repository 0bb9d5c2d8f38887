/* SPDX-License-Identifier: MIT */
/*
 * Which edges of a cycle become back edges (pushed on the ccStack at every
 * call): an order of the nodes of each strongly connected component, whose
 * edges against the order are the back edges.  The order comes from Eades,
 * Lin and Smyth's greedy heuristic for a minimum feedback arc set, weighted
 * by calls, so the edges left to push carry as few calls as it finds.
 */
#ifndef DACCE_FEEDBACK_H
#define DACCE_FEEDBACK_H

#include <stdint.h>

struct dacce_feedback_graph {
	uint32_t n_nodes;
	const uint32_t *out_start, *out_edges; /* node n's out-edges: out_edges[out_start[n] ..) */
	const uint32_t *in_start, *in_edges;   /* the same edges by callee */
	const uint32_t *caller_of, *callee_of; /* per edge */
	const uint64_t *weight;		       /* per edge: calls, at most DACCE_FEEDBACK_MAX_WEIGHT */
	const uint32_t *component;	       /* per node (scc.h) */
	const uint32_t *tie;		       /* per node: of two equal choices, the larger goes first */
	const uint32_t *after;		       /* per node: a node it must follow, or DACCE_FEEDBACK_NONE */
};

#define DACCE_FEEDBACK_NONE UINT32_MAX

#define DACCE_FEEDBACK_MAX_WEIGHT ((uint64_t)1 << 36)
/* Sums of weights stay below 2^62 up to this many edges. */
#define DACCE_FEEDBACK_MAX_EDGES ((uint32_t)1 << 26)

/*
 * rank[n] for every node, distinct: an edge inside a component, not a
 * self-loop, is a back edge exactly when rank[caller] > rank[callee].  Edges
 * between components or listed nowhere count for nothing.  A node comes
 * after[n] when both are in one component and that is an edge.  0, -ENOMEM,
 * -E2BIG past DACCE_FEEDBACK_MAX_EDGES listed edges, or -EDEADLK when the
 * after[] constraints close a cycle.
 */
int dacce_feedback_order(const struct dacce_feedback_graph *g, uint32_t n_edges, uint32_t *rank);

#endif
