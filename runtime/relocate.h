/* SPDX-License-Identifier: MIT */
/*
 * A function's copy with the id's arithmetic inline at its call sites
 * (docs/runtime.md, "Functions relocated into the code cache").
 *
 * Each instruction of the original is re-emitted in order: branches inside
 * the function go to the copy's own instructions (always as rel32, so one
 * pass lays it out), branches out and RIP-relative operands keep their
 * absolute targets.  A site given as inline becomes
 * `before(op); call target; after(op)`, with at least 5 bytes after the
 * return point (room for the jump that forwards it when an epoch replaces
 * the copy).  Every other site leaves the copy: a jump to where the
 * original runs it (its own address, or the first instruction a borrowed
 * site's patch covers), which goes on in the original from there.  The
 * original is never changed, so leaving the copy at any site, or returning
 * into the original, is always correct, only slower.
 *
 * Building is pure (no runtime state): relocate_test.c checks it alone.
 */
#ifndef DACCE_RT_RELOCATE_H
#define DACCE_RT_RELOCATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"

/* The longest function moved, and the longest code of one operation (ops.h). */
#define DACCE_RELOC_MAX_FUNCTION (64u << 10)
#define DACCE_RELOC_OP_MAX 320

struct dacce_reloc_fixup;

struct dacce_reloc_site {
	uintptr_t addr;	   /* the site's instruction */
	uintptr_t leave_to; /* not inline: where the original takes the site on (addr or before) */
	uintptr_t target;  /* inline: the callee of its `call rel32` */
	struct dacce_rt_op op; /* inline: the operation (ops.h) */
	bool inline_call;
	/* Filled in by dacce_relocate (offsets in the copy). */
	uint32_t code_at;   /* its code: the inline sequence, or the jump out */
	uint32_t return_at; /* inline: its call's return point */
	uint32_t end_at;    /* inline: the end of its code (the next instruction of the original's) */
};

/* One original instruction with a place in the copy: offsets from the function's start and the copy's. */
struct dacce_reloc_pair {
	uint32_t original, copy;
};

/* What a copy needs of an instruction of the original: decoded once per function. */
enum dacce_reloc_insn_kind {
	DACCE_RELOC_PLAIN,	    /* copied as it is */
	DACCE_RELOC_RIP,	    /* copied, its RIP-relative displacement (at disp_at) rebased */
	DACCE_RELOC_CALL_OTHER,	    /* an indirect call */
	DACCE_RELOC_JMP,	    /* jmp rel8/rel32 (prefixes: bytes before the opcode) */
	DACCE_RELOC_JCC,	    /* jcc rel8/rel32, condition cc */
	DACCE_RELOC_CALL,	    /* call rel32 */
	DACCE_RELOC_OTHER_RELATIVE, /* loop, jrcxz, xbegin, a branch with REX: never moved */
};

struct dacce_reloc_insn {
	uint64_t target; /* absolute: of a branch, or of a RIP-relative operand */
	uint32_t at;	 /* offset in the function */
	uint8_t len, kind, prefixes, cc, disp_at;
};

struct dacce_reloc_code {
	struct dacce_reloc_insn *insns; /* in order */
	size_t n_insns;
	uint32_t *branch_targets; /* offsets that branches of the function reach, sorted */
	size_t n_branch_targets;
};

struct dacce_reloc_copy {
	uint8_t *code; /* malloc'd; positions fixed up for running at base */
	size_t len;
	struct dacce_reloc_pair *pairs; /* in increasing order of both */
	size_t n_pairs;
	struct dacce_reloc_fixup *fixups; /* rel32 fields that hold absolute targets */
	size_t n_fixups;
};

/*
 * Decodes the function [start, end) from code (its original bytes): 0,
 * -EILSEQ when the bytes do not decode, -ENOTSUP when a branch of it lands
 * inside an instruction, -EINVAL (longer than DACCE_RELOC_MAX_FUNCTION),
 * -ENOMEM.
 */
int dacce_relocate_decode(const uint8_t *code, uintptr_t start, uintptr_t end,
			  struct dacce_reloc_code *out);
void dacce_reloc_code_fini(struct dacce_reloc_code *code);

/* Whether a branch of the function reaches an offset in (lo, hi). */
bool dacce_reloc_branch_into(const struct dacce_reloc_code *code, uint32_t lo, uint32_t hi);

/*
 * Lays out the copy of the decoded function [start, end) (code: its original
 * bytes) for running at an address not known yet.  sites, in address order,
 * are all the runtime's sites in the function.  Returns 0, -ENOTSUP for code
 * it does not move (an instruction it cannot re-emit, a call that is no
 * site, a site that is not on an instruction), -ENOMEM.
 */
int dacce_relocate_layout(const struct dacce_reloc_code *decoded, const uint8_t *code,
			  uintptr_t start, uintptr_t end, int32_t tpoff,
			  struct dacce_reloc_site *sites, size_t n_sites, struct dacce_reloc_copy *out);

/*
 * Fixes the laid-out copy's absolute targets for running at base.
 * Returns 0, or -ERANGE when one is beyond rel32 reach from there.
 */
int dacce_relocate_place(struct dacce_reloc_copy *copy, uintptr_t base);

/* The copy's offset of the original instruction at offset original, or -1. */
long dacce_reloc_copy_of(const struct dacce_reloc_copy *copy, uint32_t original);

/* The original's offset of the instruction at the copy's offset at, or -1 (inside generated code). */
long dacce_reloc_original_of(const struct dacce_reloc_pair *pairs, size_t n, uint32_t at);

void dacce_reloc_copy_fini(struct dacce_reloc_copy *copy);

#endif
