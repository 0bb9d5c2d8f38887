/* SPDX-License-Identifier: MIT */
/*
 * Tail calls (decoder/machine.h's "tail" operation) in machine code.
 *
 * A tail `jmp` leaves its function's frame: the callee will return straight
 * to the frame's caller, so no code of ours runs "after" the tail edge.  The
 * first tail call out of a frame therefore saves a tail record (id, ccStack
 * top, top entry's count, the frame's return-address slot and the return
 * address) and points that slot at the shared return stub; the stub restores
 * the record and jumps to the saved return address.  The stack layout the
 * callee sees is untouched: no extra return address, same alignment.
 */
#ifndef DACCE_RT_TAIL_H
#define DACCE_RT_TAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"
#include "x86.h"

#define DACCE_TAIL_STUB_MAX 160
#define DACCE_TAIL_TRAMP_MAX 1024

/*
 * The return stub, once per process.  Records whose slot is not the one the
 * return came through belong to frames a longjmp skipped: they are dropped.
 * Returns its address, or 0 on overflow.
 */
uintptr_t dacce_tail_emit_return_stub(struct x86_buf *b, int32_t tpoff);

/*
 * DWARF call frame instructions (under gdbjit.c's CIE) for a debugger that
 * meets the stub as a return address: where the frame is, and that the walk
 * ends there.  The return address it stands for is in the thread's tail
 * records, which no DWARF expression gdb evaluates can reach (gdb reads no
 * %fs.base in them); user/dacce-gdb.py finds it.  Sets *len.
 */
const uint8_t *dacce_tail_stub_unwind_rules(size_t *len);

/*
 * A tail site's trampoline: record the frame if needed, before(op), jmp
 * target: through target_slot when not 0 (a GOT slot holding it, in rel32
 * reach), else directly or through a literal placed before the code when out
 * of rel32 reach.  Sets *entry.  Returns 0 or -ENOSPC.
 */
int dacce_tail_emit_trampoline(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op,
			       uintptr_t return_stub, uintptr_t target, uintptr_t target_slot,
			       uintptr_t *entry);

/*
 * The call shape of a tail call that costs something (an ADD or a PUSH).
 * Through the stub, the callee's return was mispredicted every time (the
 * stub is not where the return stack says) and so was the stub's jump on,
 * since one jump serves every frame.  Here, when the frame has no record
 * yet, the trampoline makes one, takes the return address off the stack
 * into it and calls the callee, whose return comes back to *after,
 * predicted: that code restores the record as the stub does, puts the
 * return address back in its slot and returns through it, predicted too.
 * While the callee runs, its slot holds *after instead of the stub: every
 * stack walker treats both alike (returns.h), and the record's guard says
 * which one the slot holds.  The stack the callee sees is the native one.
 * A frame that holds a record already (it tail-called before) keeps it (it
 * holds the state of the frame's return) and jumps: the callee returns
 * where the frame's first tail call put, another trampoline's return point
 * (which the return stack holds) or the stub.  So a frame's tail calls stack
 * one return address at most, however many it makes.  A leaf (a library function that calls nothing
 * instrumented, leaves.h) is entered at its entry from another module:
 * flags, %r11 and the red zone are dead there, and leaf code leaves them
 * alone.  Otherwise the jump may enter a fragment of the function it left,
 * where they can be live: they are kept, and %r11 too (a caller that knows
 * its callees may keep a value there: ops.h).  Sets *entry and *after.
 * Returns 0, -EINVAL for an operation that costs nothing, or -ENOSPC.
 */
int dacce_tail_emit_call_trampoline(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op,
				    bool leaf, uintptr_t target, uintptr_t target_slot,
				    uintptr_t *entry, uintptr_t *after);

#endif
