/* SPDX-License-Identifier: MIT */
/*
 * For debuggers: every return point generated code was built with, and the
 * address its call returns to natively (the site's next instruction), in a
 * table gdb's unwinder (user/dacce-gdb.py) reads from the stopped process
 * without calling into it.  With the tail stub and the TLS block's offset,
 * a frame whose return address is the tail stub is unwound through the
 * thread's tail records (tls.h).  Also the whole code of each call's
 * trampoline and dispatch code, which runs on the caller's stack: a thread
 * stopped there (gdb stepping over a call) is in the caller, about to
 * continue at the native return address; and the code of tail jumps and the
 * tail stub, which debuggers step through.
 *
 * The layout is read as raw memory by that script: change it only with
 * DACCE_DEBUG_RETURNS_LAYOUT.
 */
#ifndef DACCE_RT_DEBUG_RETURNS_H
#define DACCE_RT_DEBUG_RETURNS_H

#include <stdint.h>

#define DACCE_DEBUG_RETURNS_LAYOUT 3

struct dacce_debug_return {
	uint64_t code;	 /* a return point in generated code */
	uint64_t native; /* where the call returns natively */
};

/*
 * Code running on the caller's stack, [start, end): its caller continues at
 * native.  native 0: generated code whose caller is not at one address (the
 * tail stub, a tail jump's code), which debuggers step through.
 */
struct dacce_debug_range {
	uint64_t start, end, native;
};

struct dacce_debug_returns {
	uint32_t layout; /* DACCE_DEBUG_RETURNS_LAYOUT once the runtime started */
	uint32_t count;	 /* entries written; published after them */
	struct dacce_debug_return *entries;
	uint64_t tail_stub;
	int64_t tpoff; /* the TLS block is at the thread's fs base + tpoff */
	uint32_t n_ranges; /* ranges written; published after them */
	uint32_t cap, cap_ranges;
	struct dacce_debug_range *ranges;
};

/* Exported (libdacce.map) under this name for the script. */
extern struct dacce_debug_returns dacce_debug_returns;

/* Before any code: the tail stub and the TLS block's offset. */
void dacce_debug_returns_start(uintptr_t tail_stub, int64_t tpoff);

/* One more return point, with rt.lock held.  0 or -ENOMEM. */
int dacce_debug_returns_add(uintptr_t code, uintptr_t native);

/* One more piece of code on a caller's stack, with rt.lock held.  0 or -ENOMEM. */
int dacce_debug_returns_add_range(uintptr_t start, uintptr_t end, uintptr_t native);

#endif
