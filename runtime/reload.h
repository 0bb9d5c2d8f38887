/* SPDX-License-Identifier: MIT */
/*
 * An indirect call's or jump's target, loaded instead of branched to:
 * `call *mem`, `jmp *%reg` and the like (FF /2, FF /4) rewritten as
 * `mov mem, %r11` or `mov %reg, %r11`, same addressing bytes.  Dispatch
 * code uses it to compare a site's target against the targets it knows,
 * without a trap.
 */
#ifndef DACCE_RT_RELOAD_H
#define DACCE_RT_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DACCE_RELOAD_MAX 16

/*
 * Writes the load into out (room for DACCE_RELOAD_MAX bytes) and its length.
 * Returns 0, or -ENOTSUP for forms it does not rewrite: RIP-relative memory (its displacement would have to move), segment
 * overrides, anything that is not FF /2 or FF /4.
 */
int dacce_reload_from_call(const uint8_t *insn, size_t len, uint8_t *out, size_t *out_len);

/* Whether an FF /2 or FF /4 branch addresses memory relative to %rsp. */
bool dacce_branch_addresses_stack(const uint8_t *insn, size_t len);

#endif
