/* SPDX-License-Identifier: MIT */
/*
 * Trampolines: the code a patched site jumps to.  A site is entered by
 * `jmp` (its `call rel32` rewritten as `jmp rel32`), never by `call`, so the
 * callee sees exactly the stack it would natively: same stack arguments,
 * same alignment.  The trampoline's own `call` keeps the return-stack
 * predictor in step, and its `jmp` back lands on the original return site.
 */
#ifndef DACCE_RT_TRAMP_H
#define DACCE_RT_TRAMP_H

#include <stdint.h>

#include "ops.h"
#include "x86.h"

/* Longest trampoline tramp_build_call emits. */
#define DACCE_TRAMP_CALL_MAX 320

/*
 * before(op); call target; after(op); jmp return_to.  A target beyond rel32
 * reach is called through an 8-byte literal placed before the code.
 * Sets *entry (where to jump in) and *after_call (the return address live
 * frames hold).  Returns 0, or -ENOSPC when b overflowed or return_to is
 * out of reach.
 */
int dacce_tramp_build_call(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op,
			   uintptr_t target, uintptr_t return_to, uintptr_t *entry,
			   uintptr_t *after_call);

/* The 5 bytes of `jmp rel32` at site to dest, or -ERANGE when out of reach. */
int dacce_tramp_jmp_bytes(uintptr_t site, uintptr_t dest, uint8_t out[5]);

#endif
