/* SPDX-License-Identifier: MIT */
/*
 * Machine code for the operations of decoder/machine.h.  What these emit
 * must leave the TLS block exactly as dacce_op_call / dacce_op_return leave
 * a struct dacce_state; tests/check_rt_ops.c runs both side by side.
 *
 * Register contract: both run where flags and the red zone are dead (at a
 * call site, and just after the call returns) and keep every register:
 * with interprocedural register allocation (gcc's -fipa-ra) callers keep
 * values in caller-saved registers across calls to functions known not to
 * touch them.  Scratch registers are spilled to the red zone.
 */
#ifndef DACCE_RT_OPS_H
#define DACCE_RT_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "dict.h"
#include "x86.h"

enum dacce_rt_op_kind {
	DACCE_RT_OP_NONE,  /* encoded with En = 0: nothing to do */
	DACCE_RT_OP_ADD,   /* encoded: id += En, id -= En */
	DACCE_RT_OP_PUSH,  /* pushed on the ccStack */
};

struct dacce_rt_op { /* wide fields first: one is kept in every site (rt_state.h) */
	uint64_t en;
	uint64_t reset_id; /* maxID + 1 of the epoch (the code reads it from the TLS block) */
	uint64_t *hits;	   /* a counter the code bumps (NULL: none), for the policy */
	uint32_t edge;
	enum dacce_rt_op_kind kind;
	bool compress;
	bool count; /* bump the thread's call and push counts (DACCE_COUNT) */
};

/* The operation of edge in dict's epoch (later covers edges found since). */
int dacce_rt_op_for_edge(const struct dacce_dict *dict, const struct dacce_graph *later,
			 uint32_t edge, struct dacce_rt_op *op);

/* Whether a and b generate the same code (reset_id is read from the TLS block, not emitted). */
bool dacce_rt_op_same_code(const struct dacce_rt_op *a, const struct dacce_rt_op *b);

/* tpoff is dacce_tls_tpoff(): the TLS block's offset from %fs. */
void dacce_emit_before(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op);
void dacce_emit_after(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op);
/*
 * Before a call's before(): bumps *op->hits of a call that is not pushed
 * (the runtime counts free direct calls that may be given back: rt.c,
 * may_be_given_back); nothing without hits (push code counts itself).  Keeps
 * every register, not the flags (dead where a call is made).
 */
void dacce_emit_call_hit(struct x86_buf *b, const struct dacce_rt_op *op);

#endif
