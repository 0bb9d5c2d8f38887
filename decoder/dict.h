/* SPDX-License-Identifier: MIT */
/*
 * An encoding epoch: the immutable dictionary produced by encoding the call
 * graph at one moment (the paper's gTimeStamp).  It holds everything needed
 * to run the instrumentation of that epoch and to decode contexts recorded
 * in it, including a copy of the graph's structure at encoding time, so a
 * dictionary read back from a file decodes without the live graph.
 *
 * Edges discovered after the epoch was encoded (index >= n_edges) are
 * unencoded in it by definition; decoding entries that name them needs the
 * later graph (see decode.h).
 */
#ifndef DACCE_DICT_H
#define DACCE_DICT_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

/* dummy[n] of a leaf node. */
#define DACCE_DUMMY_LEAF 2

/* numCC(n) <= limit for every node, so maxID < limit and 2*maxID+1 < 2^63. */
#define DACCE_ID_LIMIT_DEFAULT (1ULL << 62)

enum dacce_edge_class {
	DACCE_EDGE_ENCODED = 0, /* id += En before the call, id -= En after */
	DACCE_EDGE_UNENCODED,	/* pushed on the ccStack: new, demoted, or a nested root */
	DACCE_EDGE_BACK,	/* closes a cycle: pushed on the ccStack */
};

/* Dispatch tables hold at most 2^24 slots, at most half full. */
#define DACCE_DISPATCH_MAX_TARGETS (1u << 23)

/* An indirect site with many targets dispatches through a hash table. */
struct dacce_dispatch {
	uint32_t site;
	uint32_t bits;	   /* table holds 1 << bits slots */
	uint32_t *callee;  /* key per slot, DACCE_NONE when empty */
	uint32_t *edge;	   /* value per slot */
};

/*
 * One encoded incoming edge as the decoder needs it: the id range it covers
 * and where it leads.  Derived from in_edges, en and num_cc (never stored in
 * files) and laid out contiguously per node so that decoding one frame
 * touches one or two cache lines instead of chasing four arrays.
 */
struct dacce_in_range {
	uint64_t en;
	uint64_t end; /* en + numCC(caller) */
	uint32_t caller;
	uint32_t edge;
};

/* Where an edge goes, packed for the decoder's ccStack pops (derived, like in_range). */
struct dacce_edge_ends {
	uint32_t caller;
	uint32_t callee;
	uint32_t kind;
};

struct dacce_dict {
	uint64_t epoch;
	uint64_t max_id;
	uint64_t id_limit;
	bool compress_new; /* do edges found after this epoch compress repeats? */

	uint32_t n_nodes, n_sites, n_edges;

	/* Per node. */
	uint64_t *num_cc;
	uint8_t *dummy;	      /* 1: no encoded path from R; range [0,1) reserved;
			       * DACCE_DUMMY_LEAF: a leaf node (graph.h), whose ranges lie
			       * in the leaf id space, above every other node's numCC */
	uint32_t *in_start;   /* n_nodes + 1 offsets into in_edges */
	uint32_t *in_edges;   /* encoded incoming edges of each node, by En */
	struct dacce_in_range *in_range; /* parallel to in_edges; see dacce_dict_index */

	/* Per site: a copy of the graph's structure. */
	uint32_t *site_caller;
	uint8_t *site_kind;

	/* Per edge: structure copy and the encoding. */
	uint32_t *edge_site;
	uint32_t *edge_caller;
	uint32_t *edge_callee;
	uint8_t *edge_class;
	uint8_t *edge_compress; /* 1: a repeat of the top entry bumps its count */
	uint64_t *en;		/* meaningful for DACCE_EDGE_ENCODED */
	struct dacce_edge_ends *edge_ends; /* derived; see dacce_dict_index */

	/*
	 * Derived: the ranges of every leaf node's encoded in-edges, sorted by
	 * En (they are disjoint), for decoding from DACCE_IN_LEAF.
	 */
	struct dacce_in_range *leaf_range;
	uint32_t n_leaf_range;

	struct dacce_dispatch *dispatch;
	uint32_t n_dispatch;
};

struct dacce_encode_opts {
	uint64_t epoch;
	uint64_t id_limit;		 /* 0: DACCE_ID_LIMIT_DEFAULT */
	uint32_t dispatch_min_targets;	 /* 0: never build dispatch tables */
	bool compress_back_edges;
	bool compress_unencoded;	 /* demoted edges and edges found later */
};

void dacce_encode_opts_default(struct dacce_encode_opts *opts);

/*
 * Encodes the whole graph as it is now: back edges by DFS from R (hottest
 * edges first), numCC over the remaining DAG, incoming edges of each node in
 * decreasing frequency so the hottest gets the smallest En (0 unless the node
 * is reachable only through pushed edges), cold edges demoted to unencoded
 * whenever numCC would exceed the id limit.
 * Returns 0 and a new dictionary in *out, or a negative errno.
 */
int dacce_encode(const struct dacce_graph *graph, const struct dacce_encode_opts *opts,
		 struct dacce_dict **out);

void dacce_dict_free(struct dacce_dict *dict);

/* Allocates the arrays of a dictionary of this size (for the decoder of files). */
struct dacce_dict *dacce_dict_alloc(uint32_t n_nodes, uint32_t n_sites, uint32_t n_edges,
				    uint32_t n_in_edges, uint32_t n_dispatch);

/*
 * Builds the decoder's derived indexes (in_range, edge_ends, leaf_range) from
 * in_edges, en, num_cc and the edge structure.
 * Encoding and reading a file call it; call it again after editing those.
 * Returns 0, -ENOMEM, or -EBADMSG when leaf ranges overlap or reach below
 * another node's numCC.
 */
int dacce_dict_index(struct dacce_dict *dict);

/* Structural access that also covers edges added after the epoch. */
struct dacce_edge_view {
	uint32_t site, caller, callee;
	uint8_t kind, class, compress;
	uint64_t en;
};

/*
 * Describes edge e as this epoch sees it; edges past the dictionary are read
 * from later (may be NULL) and are unencoded.  Returns 0 or -ENOENT.
 */
int dacce_dict_edge(const struct dacce_dict *dict, const struct dacce_graph *later,
		    uint32_t edge, struct dacce_edge_view *view);

/* Dispatch table lookup: the table of a site (or NULL), then the edge for a callee. */
const struct dacce_dispatch *dacce_dict_dispatch(const struct dacce_dict *dict, uint32_t site);
uint32_t dacce_dispatch_lookup(const struct dacce_dispatch *table, uint32_t callee);

/* Fibonacci hashing: two instructions in generated code. */
static inline uint32_t dacce_dispatch_slot(uint64_t key, uint32_t bits)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
}

#endif
