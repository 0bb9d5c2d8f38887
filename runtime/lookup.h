/* SPDX-License-Identifier: MIT */
/*
 * Target tables for indirect call sites with many targets.  Dispatch code
 * compares a site's target with its first few targets (rt.c); past those it
 * looks the target up here: an open-addressing table of (target, trampoline)
 * pairs, probed linearly from a multiplicative hash and ended by an empty
 * entry.  Readers run in generated code without locks: an entry's
 * trampoline is written before its target, and entries are never removed
 * (a re-encoding, with the world stopped, replaces trampolines in place).
 */
#ifndef DACCE_RT_LOOKUP_H
#define DACCE_RT_LOOKUP_H

#include <stdint.h>

#include "x86.h"

#define DACCE_LOOKUP_BITS 8 /* 256 home slots */

struct dacce_lookup_entry {
	uint64_t target; /* 0: empty */
	uint64_t tramp;
};

/* A table of 2 * 2^DACCE_LOOKUP_BITS + 1 entries (the last always empty), or NULL. */
struct dacce_lookup_entry *dacce_lookup_new(void);
void dacce_lookup_free(struct dacce_lookup_entry *table);

/* Adds or updates target's trampoline.  Returns 0, or -ENOSPC when its probe run is full. */
int dacce_lookup_set(struct dacce_lookup_entry *table, uint64_t target, uint64_t tramp);

/* The trampoline for target, or 0. */
uint64_t dacce_lookup_get(const struct dacce_lookup_entry *table, uint64_t target);

/* Where a target not in the table goes instead of a trap byte: entry, with token in %r11. */
struct dacce_lookup_miss {
	uintptr_t entry;
	uint64_t token;
};

/*
 * The lookup in machine code.  Expects the target in %r11 and the program's
 * %r11 at r11_slot(%rsp) (red zone); jumps to the trampoline with every
 * register as the program had it.  A target not in the table runs into a
 * trap byte (trap.h) with the same registers (its address is returned in
 * *trap_at), or, given miss, jumps to miss->entry with miss->token in %r11
 * and the program's %r11 still in its slot (*trap_at is then 0).  Uses the
 * red zone below r11_slot and the flags.
 */
void dacce_emit_lookup(struct x86_buf *b, const struct dacce_lookup_entry *table, int8_t r11_slot,
		       const struct dacce_lookup_miss *miss, uintptr_t *trap_at);

#endif
