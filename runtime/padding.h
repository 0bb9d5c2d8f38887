/* SPDX-License-Identifier: MIT */
/*
 * Room for a jump in the alignment padding between the program's functions.
 *
 * A 2-byte site (`jmp *%rax`, `call *%rax`) whose previous instruction
 * cannot be borrowed has no room for a jump to generated code, and would
 * trap at every execution.  A short `jmp rel8` fits over it, though, and
 * within its reach (-128..+127 bytes) compilers usually leave padding
 * between functions (nops or int3s, which nothing executes): a 5-byte
 * `jmp rel32` written there takes the site on to its code.
 *
 * A gap counts as padding only when it lies between two functions whose
 * bounds are exact (no guessed end) and every byte of it decodes as nop or
 * int3 instructions that end exactly at the next function; it is checked
 * once, before anything is written into it, and handed out from its start.
 */
#ifndef DACCE_RT_PADDING_H
#define DACCE_RT_PADDING_H

#include <stddef.h>
#include <stdint.h>

#include "funcs.h"
#include "hashmap.h"

struct dacce_padding {
	const struct dacce_funcs *funcs;
	struct dacce_hashmap gaps; /* gap start -> bytes handed out, or GAP_UNUSABLE */
};

void dacce_padding_init(struct dacce_padding *p, const struct dacce_funcs *funcs);
void dacce_padding_fini(struct dacce_padding *p);

/*
 * Takes len bytes of padding starting in [lo, hi] and ending by hi + len,
 * and returns their address, or 0 when there are none (-ENOMEM is also 0:
 * the site then traps, as without padding).
 */
uintptr_t dacce_padding_take(struct dacce_padding *p, uintptr_t lo, uintptr_t hi, size_t len);

#endif
