/* SPDX-License-Identifier: MIT */
/*
 * Switch jumps the runtime can leave alone.  An indirect jump is a tail call
 * when its target leaves the function and ordinary control flow when it
 * stays inside, so every one gets dispatch code that compares its target
 * with the function's bounds, each time it runs (sqlite3's value decoder
 * and perl's hash lookup spend 2 to 4 % of their time there).  A jump
 * through a compiler's jump table whose index is bounded just before it
 * reaches only the table's entries: when every entry lies inside the
 * function, the jump never leaves it and needs nothing.
 *
 * Recognized, as GCC and Clang emit them, with nothing else in between:
 *
 *   [mov %rA, %rB]            a copy into or out of the compared register
 *   cmp $N, %reg              8, 16, 32 or 64 bits
 *   ja / jae default
 *   lea table(%rip), %rB      }  in any order, with movs and movzx between
 *   [mov / movzx ..., %rI]    }  registers that carry the index
 *   movslq (%rB,%rI,4), %rE
 *   add %rB, %rE (or %rE, %rB)
 *   jmp *%rE (or %rB)         entries: int32 offsets from the table
 * or, in code that is not position-independent,
 *   cmp, ja / jae, [movs], jmp *table(,%rI,8)   entries: absolute addresses
 *
 * The bound (ja: N + 1 entries, jae: N) holds for the register compared,
 * in the bits compared; it is followed through the copies to the index,
 * which must hold it in all 64 bits: a 32-bit mov or a movzx clears what is
 * above its source, so a copy of the compared bits does, but a compare of
 * %esi says nothing of %rsi's high half.  The scan drops a match when a
 * direct branch of the function lands after the window's first instruction:
 * a path there would skip the bound.
 */
#ifndef DACCE_RT_JUMP_TABLES_H
#define DACCE_RT_JUMP_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

#define DACCE_JUMP_TABLE_MAX_ENTRIES 4096
/* Instructions from the compare to the jump, at most. */
#define DACCE_JUMP_TABLE_WINDOW 7

struct dacce_jump_table {
	uintptr_t table;    /* address of the first entry */
	uint32_t entries;   /* how many the bound lets through */
	uint8_t entry_size; /* 4: int32 offsets from table; 8: absolute addresses */
	uintptr_t guard;    /* the compare's address: straight-line code from it to the jump */
};

/*
 * Whether the last of the n instructions starting at starts[] (consecutive,
 * the last an indirect jmp) ends such a sequence; fills out if so.  code
 * holds the bytes at run-time address addr up to end.
 */
bool dacce_jump_table_match(const ZydisDecoder *decoder, const uint8_t *code, uintptr_t addr,
			    uintptr_t end, const uintptr_t *starts, size_t n,
			    struct dacce_jump_table *out);

/*
 * Whether every entry of jt (read from this process's memory, a read that
 * may fail rather than fault) lies in [lo, hi): 1 yes, 0 no, or a negative
 * errno when the table cannot be read.
 */
int dacce_jump_table_stays_in(const struct dacce_jump_table *jt, uintptr_t lo, uintptr_t hi);

#endif
