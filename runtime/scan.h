/* SPDX-License-Identifier: MIT */
/*
 * Scanning one function's machine code for the control transfers the runtime
 * must redirect: calls (direct, through a PLT stub, through a GOT slot,
 * indirect) and jumps that leave the function (tail calls, conditional or
 * not, direct or indirect).
 *
 * The scan is linear from the function's start to its end.  Bytes after an
 * unconditional jump, ret, ud2, hlt or int3 may be padding or data: if they do
 * not decode, and no branch seen so far lands on them, the scan stops quietly
 * and says where (stopped_early).  Undecodable bytes anywhere else are an
 * error: the function cannot be instrumented safely.
 */
#ifndef DACCE_RT_SCAN_H
#define DACCE_RT_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "jump_tables.h"

#ifndef DACCE_RANGE_DEFINED
#define DACCE_RANGE_DEFINED
/* A half-open address range [start, end). */
struct dacce_range {
	uintptr_t start, end;
};
#endif

/* struct dacce_scan_site.flags */
#define DACCE_SCAN_NOTRACK	(1u << 0) /* notrack prefix: CET lets it reach any target */
#define DACCE_SCAN_CONDITIONAL	(1u << 1) /* a jcc leaving the function: conditional tail call */
#define DACCE_SCAN_REG		(1u << 2) /* target in a register */
#define DACCE_SCAN_MEM		(1u << 3) /* target in memory not addressed RIP-relative */
#define DACCE_SCAN_SHORT	(1u << 4) /* under 5 bytes: no room for a jmp rel32 */
#define DACCE_SCAN_TARGETED	(1u << 5) /* a direct branch of the function lands on it */
#define DACCE_SCAN_INDEXED	(1u << 6) /* target in memory at an index register: a table */
#define DACCE_SCAN_JUMP_TABLE	(1u << 7) /* a bounded jump through a table: jump_table says which */

#define DACCE_SCAN_PATCH_LEN 5 /* length of the jmp rel32 a site is rewritten to */

/* prev_rip_disp of a borrowed jcc (`7x rel8` or `0f 8x rel32`, no prefix) */
#define DACCE_SCAN_PREV_JCC (-2)

struct dacce_scan_site { /* wide fields first: one is kept in every site (rt_state.h) */
	uintptr_t addr;	  /* run-time address of the instruction */
	uintptr_t target; /* direct: the absolute target; 0 if not known statically */
	uintptr_t slot;	  /* RIP-relative memory operand: its absolute address (a GOT slot), else 0 */
	/*
	 * The instruction just before, when dispatch code could run it in its
	 * place (no transfer, no trap, no endbr, not privileged): its address
	 * (0: none) and length (prev_len), and where its RIP-relative
	 * displacement sits in it (prev_rip_disp, -1: none).  A short site then
	 * borrows its bytes for a jump.  Padding after an unconditional
	 * transfer never runs: not borrowed.  A conditional jump inside the
	 * function may be borrowed too (`test %rax,%rax; je 1f; call *%rax`, an
	 * optional hook): its prev_rip_disp is DACCE_SCAN_PREV_JCC, and dispatch
	 * code runs it as a jcc rel32 to the same target.
	 */
	uintptr_t prev;
	/* The instruction before prev, when it can be borrowed too (same rules, never a jcc). */
	uintptr_t prev2;
	/* DACCE_SCAN_JUMP_TABLE: the table and its bound (runtime/jump_tables.h). */
	struct dacce_jump_table jump_table;
	uint8_t len;   /* the instruction's length in bytes */
	uint8_t kind;  /* enum dacce_site_kind: DIRECT, INDIRECT, PLT, TAIL_DIRECT or TAIL_INDIRECT */
	uint8_t flags; /* DACCE_SCAN_* */
	uint8_t prev_len;
	int8_t prev_rip_disp;
	uint8_t prev2_len;
	int8_t prev2_rip_disp;
	/*
	 * Unconditional jumps only: bytes of alignment padding (nops, int3)
	 * just after the site that no direct branch of the function lands
	 * in.  Nothing runs them, so a short site with len + pad >= 5 has room
	 * for a jmp rel32 after all (counted up to that).
	 */
	uint8_t pad;
};

/*
 * A run of padding (nops, int3) after an unconditional transfer, at least
 * DACCE_SCAN_PATCH_LEN bytes, that no direct branch of the function lands
 * in and no site's pad takes: nothing runs it, so a short site nearby can
 * hop through it (runtime/padding.h does the same between functions).
 */
struct dacce_scan_pad {
	uintptr_t start;
	uint8_t len, used; /* used: bytes handed out from start */
};

struct dacce_scan {
	struct dacce_scan_site *sites; /* in address order */
	size_t n, cap;
	struct dacce_scan_pad *pads;   /* in address order */
	size_t n_pads, cap_pads;
	size_t n_insns;	     /* instructions decoded */
	bool stopped_early;  /* undecodable bytes after a terminator ended the scan before end */
	uintptr_t stop_addr; /* where decoding stopped (stopped_early, or -EILSEQ) */
};

/*
 * Scans the function [start, end).  code holds the bytes at run-time address
 * addr and must cover [addr, end); start >= addr.  plt lists the module's PLT
 * sections (.plt, .plt.sec, .plt.got); it may be NULL when n_plt is 0.
 *
 * out need not be initialised: it is overwritten.  Returns 0, or -EINVAL for
 * bad arguments, -ENOMEM, or -EILSEQ when an instruction in reachable code
 * does not decode (or runs past end); out->stop_addr then holds its address.
 * On error out holds no sites, so dacce_scan_fini() is still safe.
 *
 * Thread-safe: no state is shared between calls.
 */
int dacce_scan_function(const uint8_t *code, uintptr_t addr, uintptr_t start, uintptr_t end,
			const struct dacce_range *plt, size_t n_plt, struct dacce_scan *out);

/* Frees the sites; NULL-safe, and safe to call twice. */
void dacce_scan_fini(struct dacce_scan *scan);

/* Whether the 4 bytes at code are endbr64 (kept at entries for CET). */
bool dacce_scan_endbr64(const uint8_t *code);

#endif
