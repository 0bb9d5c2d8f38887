/* SPDX-License-Identifier: MIT */
/*
 * A thread's setjmp marks (rt.c, "Non-local jumps"): what setjmp saw, by
 * jmp_buf address and by where setjmp returns.  Each thread keeps its own
 * tables and is the only one to write them, so setjmp takes no lock and
 * blocks no signal (bash calls setjmp for every command); an epoch reads
 * them with the world stopped.  Finding or claiming a slot never allocates:
 * growing does, and is left to the caller, with signals blocked.
 */
#ifndef DACCE_RT_MARKS_H
#define DACCE_RT_MARKS_H

#include <stdbool.h>
#include <stdint.h>

#include "tls.h"

/*
 * What setjmp saw, for its jmp_buf.  The top entry (the call to setjmp) is
 * kept whole: it is popped when setjmp returns, and later calls from the
 * same frame reuse its slot, so neither a re-encoding (translating the
 * mark) nor the longjmp (putting it back) can take it from the ccStack.
 */
struct jump_mark {
	const struct dacce_tls *thread; /* whose block (a jmp_buf is a thread's own); NULL: dropped */
	uint64_t id;
	struct dacce_cc_entry top; /* when cc_depth > 0 */
	uint32_t cc_depth, tc_depth;
	int handlers_over_code; /* the thread's, put back by a jump out of such handlers */
	uintptr_t ret, sp; /* a mark by return: where setjmp returns (through a thunk); else 0 */
	uintptr_t caller_sp; /* the stack pointer setjmp returns with (getcontext saves it) */
	bool context;	     /* taken by getcontext: setcontext and swapcontext come back to it */
};

struct dacce_mark_slot {
	uint64_t key; /* 0: empty */
	struct jump_mark mark;
};

/* Open addressing with linear probing; cap is 0 or a power of two. */
struct dacce_marks {
	struct dacce_mark_slot *slots;
	uint32_t cap, n;
};

/* The mark kept under key, or NULL. */
struct jump_mark *dacce_marks_find(const struct dacce_marks *marks, uint64_t key);

/* Whether one more key fits without growing. */
bool dacce_marks_have_room(const struct dacce_marks *marks);

/*
 * Keeps mark under key, replacing the one there.  A new key is written
 * after its mark, so a reader never sees a key with half a mark.  -ENOSPC
 * when the table must grow first (dacce_marks_grow).
 */
int dacce_marks_put(struct dacce_marks *marks, uint64_t key, const struct jump_mark *mark);

/* Doubles the table (allocates).  0 or -ENOMEM. */
int dacce_marks_grow(struct dacce_marks *marks);

/* Forgets every mark, keeping the memory. */
void dacce_marks_clear(struct dacce_marks *marks);

void dacce_marks_fini(struct dacce_marks *marks);

#endif
