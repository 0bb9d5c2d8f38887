/* SPDX-License-Identifier: MIT */
/*
 * The per-thread context block, in static TLS (initial-exec), read and
 * written by generated code as %fs:(tpoff + field) and by BPF at
 * fsbase + tpoff.  The layout is ABI between the runtime, its generated code
 * and the sampler: change it only with DACCE_TLS_LAYOUT_VERSION.
 */
#ifndef DACCE_RT_TLS_H
#define DACCE_RT_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "machine.h"

#define DACCE_TLS_LAYOUT_VERSION 4

/* A tail record as generated code keeps it (machine.h's dacce_tc_entry, with pointers). */
struct dacce_rt_tail_record {
	uint64_t id;
	struct dacce_cc_entry *cc_top;
	uint32_t top_aux;
	uint32_t reserved;
	uint64_t frame;	      /* address of the return-address slot it guards */
	uint64_t return_to;   /* the return address it replaced */
	/*
	 * What the slot holds while the frame lives: the return stub, or the
	 * return point of the tail trampoline that called on (tail.h).  A
	 * record whose slot holds anything else is a dead frame's.
	 */
	uint64_t guard;
};

struct dacce_tls {
	uint64_t id;
	struct dacce_cc_entry *cc_top;	 /* one past the top entry */
	struct dacce_cc_entry *cc_base;
	struct dacce_rt_tail_record *tc_top;
	struct dacce_rt_tail_record *tc_base;
	uint64_t epoch;
	/*
	 * Non-zero while runtime code runs on the thread (slow paths, start-up,
	 * signal wrappers), and always in the runtime's own policy thread: its
	 * context may then be half updated or not match its pc, and a sampler
	 * must not decode it.
	 */
	uint64_t runtime_depth;
	uint64_t reset_id; /* maxID + 1 of the epoch: the id a push leaves */
	/*
	 * Counted only when DACCE_COUNT is set (the paper's Table 1 columns,
	 * calls/s and ccStack/s): calls and tail calls through instrumented
	 * sites, and ccStack pushes (each is popped once).  0 otherwise.
	 */
	uint64_t calls;
	uint64_t pushes;
	/*
	 * Where sp is while the thread runs libc's signal restorer after one of
	 * the runtime's handlers returned (dacce_tls_leaving_handler): there the
	 * pc is in libc but the thread is in no call to it, so a sampler must
	 * not take the pc for the innermost frame.  Left as is afterwards: the
	 * interrupted code's sp is above the signal frame, never equal to it.
	 */
	uint64_t sigreturn_sp;
	/*
	 * Set by the interposed longjmp family before it puts a setjmp's context
	 * back, cleared where the jump lands (dacce_rt_setjmp_again): while the
	 * thread runs libc's longjmp below this sp, its context is already the
	 * landing's but its frames are not yet, so a sampler must not decode it.
	 * A landing that does not pass there leaves it set: samples below it then
	 * read "inside the runtime", never a wrong context.
	 */
	uint64_t jump_sp;
};

#define DACCE_TLS_ID offsetof(struct dacce_tls, id)
#define DACCE_TLS_CC_TOP offsetof(struct dacce_tls, cc_top)
#define DACCE_TLS_CC_BASE offsetof(struct dacce_tls, cc_base)
#define DACCE_TLS_TC_TOP offsetof(struct dacce_tls, tc_top)
#define DACCE_TLS_TC_BASE offsetof(struct dacce_tls, tc_base)
#define DACCE_TLS_RESET_ID offsetof(struct dacce_tls, reset_id)
#define DACCE_TLS_CALLS offsetof(struct dacce_tls, calls)
#define DACCE_TLS_PUSHES offsetof(struct dacce_tls, pushes)
#define DACCE_TLS_SIGRETURN_SP offsetof(struct dacce_tls, sigreturn_sp)

_Static_assert(sizeof(struct dacce_cc_entry) == 16, "generated code assumes 16-byte entries");
_Static_assert(offsetof(struct dacce_cc_entry, edge) == 8, "entry layout");
_Static_assert(offsetof(struct dacce_cc_entry, aux) == 12, "entry layout");

/* This thread's block. */
struct dacce_tls *dacce_tls_self(void);

/* The runtime's signal handlers call this last: uc (their third argument) is sp in the restorer. */
static inline void dacce_tls_leaving_handler(void *uc)
{
	__atomic_store_n(&dacce_tls_self()->sigreturn_sp, (uint64_t)(uintptr_t)uc, __ATOMIC_RELAXED);
}

/*
 * Around the runtime's own handler work (not the program's handlers): what a
 * sampler finds there is runtime code at work, in libdacce or in the libc
 * functions it calls (errno, futex), never a call the context holds.
 */
static inline void dacce_tls_handler_work_begin(void)
{
	dacce_tls_self()->runtime_depth++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void dacce_tls_handler_work_end(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	dacce_tls_self()->runtime_depth--;
}

/* Offset of the block from the thread pointer (%fs base): the same in every thread. */
int32_t dacce_tls_tpoff(void);

#endif
