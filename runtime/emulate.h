/* SPDX-License-Identifier: MIT */
/*
 * Where a control transfer goes, computed from a thread's registers: for the
 * sites the runtime reaches through a trap (indirect calls and jumps, short
 * and conditional jumps out of a function), the trap handler needs the
 * target the instruction would have taken, and whether a jcc is taken.
 */
#ifndef DACCE_RT_EMULATE_H
#define DACCE_RT_EMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

struct dacce_branch {
	uintptr_t target; /* where the instruction transfers control when taken */
	bool taken;	  /* false only for a conditional jump whose condition fails */
	bool is_call;
	uint8_t len;	  /* instruction length */
};

/*
 * code holds the original instruction (at most len bytes) that lived at
 * addr; regs is the thread's context at that instruction.  Memory operands
 * are read (the instruction would have read them).  Returns 0, or -EILSEQ
 * for bytes that are not a call/jmp/jcc, -ENOTSUP for forms we do not
 * emulate (far transfers, segment-relative memory, loop/jrcxz).
 */
int dacce_emulate_branch(const uint8_t *code, size_t len, uintptr_t addr,
			 const mcontext_t *regs, struct dacce_branch *out);

#endif
