/* SPDX-License-Identifier: MIT */
/*
 * The instrumentation semantics: what the code patched around each call site
 * does to a thread's (id, ccStack, tcStack).  This is the one definition;
 * the runtime's generated code implements exactly these operations, and the
 * reference simulator runs them.  docs/encoding.md explains each one.
 *
 *   call e, encoded    before: id += En(e)          after: id -= En(e)
 *   call e, pushed     before: push <id, e> (or bump the top entry's count
 *                      when it is <id, e> and e compresses); id = maxID + 1
 *                      after:  id = top.id; drop one repeat (or pop)
 *   tail e             if e costs nothing (encoded, En = 0): nothing at all.
 *                      Else, if the current frame holds no tail record yet,
 *                      save <id, depth, top count> for it; then "before" of
 *                      e.  Nothing runs after: the frame's return restores
 *                      the record (if it has one), then the caller's "after".
 *   nested root e      push <id, e, interrupted node>; id = maxID + 1;
 *                      leaving pops it (signal handlers, callbacks).
 *   thread root e      an empty state, then "before" of e.
 */
#ifndef DACCE_MACHINE_H
#define DACCE_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#include "dict.h"

/* One ccStack entry. */
struct dacce_cc_entry {
	uint64_t id;
	uint32_t edge;
	/* Call entries: repeats beyond the first (recursion compression).
	 * Nested-root entries: the node that was interrupted. */
	uint32_t aux;
};

/* One tcStack record, saved by the first tail call out of a frame. */
struct dacce_tc_entry {
	uint64_t id;
	uint32_t cc_depth;
	uint32_t top_aux; /* aux of entry cc_depth - 1 when cc_depth > 0 */
	uint64_t frame;	  /* opaque identity of the frame (its return-address slot) */
};

struct dacce_state {
	uint64_t epoch;
	uint64_t id;
	struct dacce_cc_entry *cc;
	uint32_t cc_depth, cc_cap;
	struct dacce_tc_entry *tc;
	uint32_t tc_depth, tc_cap;
};

/* A saved state position, as setjmp records it (cc entries below depth are shared). */
struct dacce_mark {
	uint64_t id;
	uint32_t cc_depth;
	uint32_t top_aux;
	uint32_t tc_depth;
};

#define DACCE_AUX_MAX UINT32_MAX

void dacce_state_init(struct dacce_state *st, uint64_t epoch);
void dacce_state_fini(struct dacce_state *st);
int dacce_state_copy(struct dacce_state *dst, const struct dacce_state *src);

/*
 * Operations.  dict is the dictionary of st->epoch; later is the graph for
 * edges found after it (may be NULL when the edge is in dict).
 * All return 0 or a negative errno; -EPROTO means the state does not match
 * the operation (a return without its call), which is a bug in the caller.
 */
int dacce_op_call(struct dacce_state *st, const struct dacce_dict *dict,
		  const struct dacce_graph *later, uint32_t edge);
int dacce_op_return(struct dacce_state *st, const struct dacce_dict *dict,
		    const struct dacce_graph *later, uint32_t edge);
int dacce_op_tail(struct dacce_state *st, const struct dacce_dict *dict,
		  const struct dacce_graph *later, uint32_t edge, uint64_t frame);
/*
 * Whether a call or tail call through the edge leaves the state as it is
 * (encoded with En = 0): such a tail call makes no record.
 */
bool dacce_edge_costs_nothing(const struct dacce_edge_view *v);
/*
 * Gives the current frame a tail record of the state now, unless its record
 * is already on top.  Translation uses it for a frame that has one from an
 * earlier epoch (its return goes through the record whatever the epoch).
 */
int dacce_op_keep_record(struct dacce_state *st, uint64_t frame);
/* The frame identified by frame returns: restore its tail record if it has one. */
int dacce_op_frame_exit(struct dacce_state *st, uint64_t frame);
int dacce_op_thread_start(struct dacce_state *st, const struct dacce_dict *dict,
			  const struct dacce_graph *later, uint32_t root_edge);
int dacce_op_nested_enter(struct dacce_state *st, const struct dacce_dict *dict,
			  uint32_t root_edge, uint32_t interrupted_node);
int dacce_op_nested_leave(struct dacce_state *st, uint32_t root_edge);

void dacce_state_mark(const struct dacce_state *st, struct dacce_mark *mark);
int dacce_state_rewind(struct dacce_state *st, const struct dacce_mark *mark);

#endif
