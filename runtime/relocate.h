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
#define DACCE_RELOC_OP_MAX 256

struct dacce_reloc_fixup;

struct dacce_reloc_site {
	uintptr_t addr;	   /* the site's instruction */
	uintptr_t leave_to; /* not inline: where the original takes the site on (addr or before) */
	uintptr_t target;  /* inline: the callee of its `call rel32` */
	struct dacce_rt_op op; /* inline: the operation (NONE or ADD) */
	bool inline_call;
	/* Filled in by dacce_relocate (offsets in the copy). */
	uint32_t code_at;   /* its code: the inline sequence, or the jump out */
	uint32_t return_at; /* inline: its call's return point */
};

/* One original instruction with a place in the copy: offsets from the function's start and the copy's. */
struct dacce_reloc_pair {
	uint32_t original, copy;
};

struct dacce_reloc_copy {
	uint8_t *code; /* malloc'd; positions fixed up for running at base */
	size_t len;
	struct dacce_reloc_pair *pairs; /* in increasing order of both */
	size_t n_pairs;
	uint32_t *branch_targets; /* offsets in the original that branches of the function reach, sorted */
	size_t n_branch_targets;
	struct dacce_reloc_fixup *fixups; /* rel32 fields that hold absolute targets */
	size_t n_fixups;
};

/*
 * Lays out the copy of [start, end) (code holds its original bytes) for
 * running at an address not known yet.  sites, in address order, are all
 * the runtime's sites in the function.  Returns 0, -ENOTSUP for code it
 * does not move (an instruction it cannot re-emit, a call that is no site,
 * a branch into the middle of an instruction), -EILSEQ when the bytes do
 * not decode, -ENOMEM.
 */
int dacce_relocate_layout(const uint8_t *code, uintptr_t start, uintptr_t end, int32_t tpoff,
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

/* Whether a branch of the function reaches an offset in (lo, hi). */
bool dacce_reloc_branch_into(const struct dacce_reloc_copy *copy, uint32_t lo, uint32_t hi);

void dacce_reloc_copy_fini(struct dacce_reloc_copy *copy);

#endif
