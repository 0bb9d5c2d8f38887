/* SPDX-License-Identifier: MIT */
/*
 * The dynamic call graph: functions (nodes), call sites and call edges,
 * inserted as they are first executed.
 *
 * Identities survive ASLR: a function or a call site is named by the module
 * it lives in (its GNU build-id) and an offset in that module.  Indices are
 * dense and never reused, so an index recorded on a ccStack stays valid for
 * the life of the graph.
 *
 * Fixed indices: node 0 is the virtual root R (caller of every root edge);
 * sites 0..DACCE_NR_ROOT_SITES-1 are the virtual root sites, one per root
 * kind, all with caller R.
 */
#ifndef DACCE_GRAPH_H
#define DACCE_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

#define DACCE_NONE UINT32_MAX
#define DACCE_ROOT_NODE 0u
#define DACCE_BUILD_ID_MAX 64
#define DACCE_OFFSET_MAX ((1ULL << 48) - 1)
#define DACCE_MODULE_MAX 0xffffu

enum dacce_site_kind {
	DACCE_SITE_DIRECT = 0,	   /* call rel32 */
	DACCE_SITE_INDIRECT,	   /* call through a register or memory */
	DACCE_SITE_PLT,		   /* call through a PLT stub or a GOT slot */
	DACCE_SITE_TAIL_DIRECT,	   /* jmp rel32 that leaves the function */
	DACCE_SITE_TAIL_INDIRECT,  /* indirect jmp (or jmp to PLT) leaving it */
	DACCE_SITE_ROOT_MAIN,	   /* R -> main (or the attach-time root) */
	DACCE_SITE_ROOT_THREAD,	   /* R -> thread start routine */
	DACCE_SITE_ROOT_SIGNAL,	   /* signal handler on top of the interrupted context */
	DACCE_SITE_ROOT_CALLBACK,  /* entry from code we leave alone, on top of the current context */
	DACCE_SITE_KIND_COUNT,
};

/* Virtual root sites, created with the graph, in this order. */
enum dacce_root_site {
	DACCE_ROOT_SITE_MAIN = 0,
	DACCE_ROOT_SITE_THREAD,
	DACCE_ROOT_SITE_SIGNAL,
	DACCE_ROOT_SITE_CALLBACK,
	DACCE_NR_ROOT_SITES,
};

static inline bool dacce_site_kind_is_tail(enum dacce_site_kind kind)
{
	return kind == DACCE_SITE_TAIL_DIRECT || kind == DACCE_SITE_TAIL_INDIRECT;
}

static inline bool dacce_site_kind_is_root(enum dacce_site_kind kind)
{
	return kind >= DACCE_SITE_ROOT_MAIN && kind < DACCE_SITE_KIND_COUNT;
}

/* A nested root starts a context on top of another one (signals, callbacks). */
static inline bool dacce_site_kind_is_nested_root(enum dacce_site_kind kind)
{
	return kind == DACCE_SITE_ROOT_SIGNAL || kind == DACCE_SITE_ROOT_CALLBACK;
}

/* Sites whose edges can be encoded: everything but nested roots. */
static inline bool dacce_site_kind_is_encodable(enum dacce_site_kind kind)
{
	return kind < DACCE_SITE_KIND_COUNT && !dacce_site_kind_is_nested_root(kind);
}

const char *dacce_site_kind_name(enum dacce_site_kind kind);

struct dacce_module {
	uint8_t build_id[DACCE_BUILD_ID_MAX];
	uint8_t build_id_len;
};

struct dacce_node {
	uint32_t module;
	uint64_t offset;
};

struct dacce_site {
	uint32_t caller; /* node containing the call instruction */
	uint32_t module;
	uint64_t offset;
	uint8_t kind; /* enum dacce_site_kind */
};

struct dacce_edge {
	uint32_t site;
	uint32_t caller; /* copy of sites[site].caller, for speed */
	uint32_t callee;
	uint8_t kind; /* copy of sites[site].kind */
	uint8_t flags; /* DACCE_EDGE_* */
	uint64_t freq; /* observed invocations, fed by the policy */
};

/*
 * A pinned edge is never encoded: it stays on the ccStack in every epoch.
 * The runtime pins calls out of instrumented code (to libraries): code such
 * a callee calls back into then decodes as partial, never as a context that
 * went through an encoded edge it never took.
 */
#define DACCE_EDGE_PINNED 0x1
/*
 * A leaf edge calls a library function that cannot call back into
 * instrumented code (malloc, strlen, ...).  It is encoded like any edge, but
 * in one id space shared by every leaf edge, above every other node's ids
 * (dict.h): a thread in library code whose state is not a pushed call out is
 * then inside a leaf call, and the id alone says which (DACCE_IN_LEAF).
 */
#define DACCE_EDGE_LEAF 0x2
/*
 * A free-for-good edge costs nothing (encoded, En = 0) in every epoch from
 * the one that first made it free: the runtime has put the program's own
 * `call` back at its site, so the frames it enters run and return past no
 * code of ours, and a later epoch could not make them undo anything.  The
 * encoder keeps such an edge first among its callee's incoming edges and
 * never lets it close a cycle (encode.c); at most one per callee.
 */
#define DACCE_EDGE_KEEP_FREE 0x4

/*
 * In place of a node, for a context that ends inside a leaf call (the pc in
 * a library): decoding starts in the leaf id space.
 */
#define DACCE_IN_LEAF (UINT32_MAX - 1)

struct dacce_graph {
	struct dacce_module *modules;
	struct dacce_node *nodes;
	struct dacce_site *sites;
	struct dacce_edge *edges;
	uint32_t n_modules, n_nodes, n_sites, n_edges;
	uint32_t cap_modules, cap_nodes, cap_sites, cap_edges;
	struct dacce_hashmap node_index; /* (module, offset) -> node */
	struct dacce_hashmap site_index; /* (module, offset) -> site */
	struct dacce_hashmap edge_index; /* (site, callee) -> edge */
};

/* Returns a graph holding R and the root sites, or NULL on ENOMEM. */
struct dacce_graph *dacce_graph_new(void);
void dacce_graph_free(struct dacce_graph *graph);

/*
 * Insertion is idempotent: adding what exists returns its index.
 * All return 0 or a negative errno (-EINVAL for bad arguments, -ENOMEM,
 * -EEXIST for a site re-added with another caller or kind).
 */
int dacce_graph_add_module(struct dacce_graph *graph, const uint8_t *build_id,
			   size_t build_id_len, uint32_t *module);
int dacce_graph_add_node(struct dacce_graph *graph, uint32_t module, uint64_t offset,
			 uint32_t *node);
int dacce_graph_add_site(struct dacce_graph *graph, uint32_t caller, uint32_t module,
			 uint64_t offset, enum dacce_site_kind kind, uint32_t *site);
int dacce_graph_add_edge(struct dacce_graph *graph, uint32_t site, uint32_t callee,
			 uint32_t *edge);

/*
 * Copies what the encoder reads (the sites, the edges, the node count) into
 * `into`, a graph from dacce_graph_new_copy whose arrays are reused from one
 * call to the next.  The copy has no modules, nodes or indexes: it is for
 * dacce_encode only, which can then run while the original grows (the
 * runtime encodes without holding the lock its first calls wait for).
 */
struct dacce_graph *dacce_graph_new_copy(void);
int dacce_graph_copy_for_encoding(const struct dacce_graph *from, struct dacce_graph *into);

/* Lookups return DACCE_NONE when absent. */
uint32_t dacce_graph_find_node(const struct dacce_graph *graph, uint32_t module,
			       uint64_t offset);
uint32_t dacce_graph_find_site(const struct dacce_graph *graph, uint32_t module,
			       uint64_t offset);
uint32_t dacce_graph_find_edge(const struct dacce_graph *graph, uint32_t site,
			       uint32_t callee);

/* Marks an edge as never encoded (DACCE_EDGE_PINNED). */
int dacce_graph_pin_edge(struct dacce_graph *graph, uint32_t edge);
/* Marks an edge as a call to a leaf library function (DACCE_EDGE_LEAF). */
int dacce_graph_leaf_edge(struct dacce_graph *graph, uint32_t edge);

/* Marks an edge as free for good (DACCE_EDGE_KEEP_FREE). */
int dacce_graph_keep_free_edge(struct dacce_graph *graph, uint32_t edge);
/* Takes that mark back: the edge is free to lose its place again. */
int dacce_graph_unkeep_free_edge(struct dacce_graph *graph, uint32_t edge);

/* The root edge of a kind for a function (created on demand). */
int dacce_graph_add_root_edge(struct dacce_graph *graph, enum dacce_root_site root,
			      uint32_t callee, uint32_t *edge);

#endif
