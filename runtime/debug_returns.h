/* SPDX-License-Identifier: MIT */
/*
 * For debuggers: every return point generated code was built with, and the
 * address its call returns to natively (the site's next instruction), in a
 * table gdb's unwinder (user/dacce-gdb.py) reads from the stopped process
 * without calling into it.  With the tail stub and the TLS block's offset,
 * a frame whose return address is the tail stub is unwound through the
 * thread's tail records (tls.h).
 *
 * The layout is read as raw memory by that script: change it only with
 * DACCE_DEBUG_RETURNS_LAYOUT.
 */
#ifndef DACCE_RT_DEBUG_RETURNS_H
#define DACCE_RT_DEBUG_RETURNS_H

#include <stdint.h>

#define DACCE_DEBUG_RETURNS_LAYOUT 1

struct dacce_debug_return {
	uint64_t code;	 /* a return point in generated code */
	uint64_t native; /* where the call returns natively */
};

struct dacce_debug_returns {
	uint32_t layout; /* DACCE_DEBUG_RETURNS_LAYOUT once the runtime started */
	uint32_t count;	 /* entries written; published after them */
	struct dacce_debug_return *entries;
	uint64_t tail_stub;
	int64_t tpoff; /* the TLS block is at the thread's fs base + tpoff */
	uint32_t cap;
};

/* Exported (libdacce.map) under this name for the script. */
extern struct dacce_debug_returns dacce_debug_returns;

/* Before any code: the tail stub and the TLS block's offset. */
void dacce_debug_returns_start(uintptr_t tail_stub, int64_t tpoff);

/* One more return point, with rt.lock held.  0 or -ENOMEM. */
int dacce_debug_returns_add(uintptr_t code, uintptr_t native);

#endif
