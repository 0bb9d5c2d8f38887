/* SPDX-License-Identifier: MIT */
/*
 * Returns through generated code, seen from outside it.  A frame entered
 * through a trampoline returns to the trampoline's return point (or to the
 * tail stub, when its function left by a tail jump), which undoes the call's
 * operation and goes on to the original return address.  An unwinder that
 * meets such an address knows no frame there; unwind.c shows it the
 * original address instead, and when the frames above a landing pad are
 * gone, does to the context what their returns would have done.
 *
 * All of it with rt.lock held.
 */
#ifndef DACCE_RT_RETURNS_H
#define DACCE_RT_RETURNS_H

#include <stdint.h>

#include "tls.h"

/*
 * Where a return through value, read from the return-address slot at slot,
 * ends up in the program: 1 and *native when value is generated code's
 * return point or the tail stub, 0 when it is not generated code's at all,
 * -ENOENT for the tail stub with no record of slot (the context is lost).
 */
int rt_return_native(const struct dacce_tls *tls, uintptr_t value, uintptr_t slot,
		     uintptr_t *native);

/* The function the return through value at slot goes back into (a node), or DACCE_NONE. */
uint32_t rt_return_caller(const struct dacce_tls *tls, uintptr_t value, uintptr_t slot);

/*
 * Does to tls what the return through value at slot would do: the "after"
 * operation of its edge in the current epoch, the tail stub's restoring of
 * the frame's record.  0, or -EPROTO when the context does not hold what
 * that return undoes (then the caller leaves the thread partial).
 */
int rt_return_apply(struct dacce_tls *tls, uintptr_t value, uintptr_t slot);

#endif
