/* SPDX-License-Identifier: MIT */
/*
 * A tiny x86-64 machine-code writer: just the instructions the runtime's
 * generated code uses, each spelled out once.  Registers are fixed by the
 * instruction (the generated code only ever uses %r11, %rax and %rcx), so
 * there is no general operand encoder to get wrong.
 */
#ifndef DACCE_RT_X86_H
#define DACCE_RT_X86_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct x86_buf {
	uint8_t *code;
	size_t len, cap;
	uintptr_t addr;	 /* run-time address of code[0], for rel32 targets */
	bool overflow;	 /* set when an instruction did not fit or could not be encoded */
};

void x86_init(struct x86_buf *b, uint8_t *code, size_t cap, uintptr_t addr);

/* A forward short jump to patch once its target is known. */
typedef size_t x86_label;

/* %fs-relative 64-bit accesses with a 32-bit displacement. */
void x86_mov_fs_to_r11(struct x86_buf *b, int32_t disp);
void x86_mov_r11_to_fs(struct x86_buf *b, int32_t disp);
void x86_mov_fs_to_rax(struct x86_buf *b, int32_t disp);
void x86_mov_rcx_to_fs(struct x86_buf *b, int32_t disp);
void x86_add_r11_to_fs(struct x86_buf *b, int32_t disp);
void x86_sub_r11_from_fs(struct x86_buf *b, int32_t disp);
void x86_add_imm_to_fs(struct x86_buf *b, int32_t disp, int32_t imm);
void x86_sub_imm_from_fs(struct x86_buf *b, int32_t disp, int32_t imm);
void x86_cmp_fs_with_r11(struct x86_buf *b, int32_t disp); /* flags of r11 - [fs:disp] */

void x86_movabs_r11(struct x86_buf *b, uint64_t imm);
/* mov (%r11), %r11 */
void x86_load_r11_from_r11(struct x86_buf *b);

/* Red-zone spills (below %rsp: dead at call sites and returns, skipped by signal frames). */
void x86_spill_rax(struct x86_buf *b, int8_t disp);
void x86_reload_rax(struct x86_buf *b, int8_t disp);
void x86_spill_r11(struct x86_buf *b, int8_t disp);
void x86_reload_r11(struct x86_buf *b, int8_t disp);
void x86_spill_rsi(struct x86_buf *b, int8_t disp);
void x86_reload_rsi(struct x86_buf *b, int8_t disp);
void x86_jmp_rsp_mem(struct x86_buf *b, int8_t disp); /* jmp *disp(%rsp) */

/* Accesses through %r11 with an 8-bit displacement. */
void x86_store_rax_at_r11(struct x86_buf *b, int8_t disp);
void x86_load_rcx_from_r11(struct x86_buf *b, int8_t disp);
void x86_store_imm32_at_r11(struct x86_buf *b, int8_t disp, uint32_t imm);
void x86_cmp_imm32_at_r11(struct x86_buf *b, int8_t disp, uint32_t imm);
void x86_cmp_rax_with_r11_mem(struct x86_buf *b, int8_t disp); /* flags of [r11+disp] - rax */
void x86_inc32_at_r11(struct x86_buf *b, int8_t disp);
void x86_inc64_at_r11(struct x86_buf *b); /* incq (%r11) */

/* For table lookups (lookup.c). */
void x86_mov_r11_to_rcx(struct x86_buf *b);
void x86_imul_rcx_imm32(struct x86_buf *b, int32_t imm); /* %rcx *= imm (sign-extended) */
void x86_shr_rcx_imm8(struct x86_buf *b, uint8_t count);
void x86_shl_rcx_imm8(struct x86_buf *b, uint8_t count);
void x86_add_rcx_to_rax(struct x86_buf *b);
void x86_cmp_r11_with_rax_mem(struct x86_buf *b); /* flags of [rax] - r11 */
void x86_cmpq_zero_at_rax(struct x86_buf *b);
void x86_add_rax_imm8(struct x86_buf *b, int8_t imm);
void x86_load_rax_from_rax(struct x86_buf *b, int8_t disp);
size_t x86_here(const struct x86_buf *b);
void x86_store_r11_at_rsp32(struct x86_buf *b, int32_t disp); /* mov %r11, disp32(%rsp) */
void x86_load_r11_from_rsp0(struct x86_buf *b);		       /* mov (%rsp), %r11 */
void x86_jmp_short_back(struct x86_buf *b, size_t to);
void x86_dec32_at_r11(struct x86_buf *b, int8_t disp);
void x86_add_r11_imm8(struct x86_buf *b, int8_t imm);

/* Used by tail-call code, which also needs %rsp, %rsi and 32-bit moves. */
void x86_spill_rcx(struct x86_buf *b, int8_t disp);
void x86_reload_rcx(struct x86_buf *b, int8_t disp);
void x86_mov_fs_to_rcx(struct x86_buf *b, int32_t disp);
void x86_mov_fs_to_rsi(struct x86_buf *b, int32_t disp);
void x86_mov_rax_to_fs(struct x86_buf *b, int32_t disp);
void x86_mov_rsi_to_fs(struct x86_buf *b, int32_t disp);
void x86_cmp_fs_with_rax(struct x86_buf *b, int32_t disp); /* flags of rax - [fs:disp] */
void x86_cmp_fs_with_rsi(struct x86_buf *b, int32_t disp); /* flags of rsi - [fs:disp] */
void x86_movabs_rax(struct x86_buf *b, uint64_t imm);
void x86_load_rax_from_rsp(struct x86_buf *b);	   /* mov (%rsp), %rax */
void x86_store_rax_to_rsp(struct x86_buf *b);	   /* mov %rax, (%rsp) */
void x86_cmp_rax_with_rsp_mem(struct x86_buf *b);  /* flags of [rsp] - rax */
void x86_store_rsp_at_r11(struct x86_buf *b, int8_t disp);
void x86_cmp_rsp_with_r11_mem(struct x86_buf *b, int8_t disp); /* flags of [r11+disp] - rsp */
void x86_cmp_rcx_with_r11_mem(struct x86_buf *b, int8_t disp); /* flags of [r11+disp] - rcx */
void x86_cmp_rax_with_r11(struct x86_buf *b); /* flags of rax - r11 */
void x86_lea_rcx_rsp(struct x86_buf *b, int8_t disp);	       /* lea disp(%rsp), %rcx */
void x86_load_ecx_from_rax(struct x86_buf *b, int8_t disp);
void x86_load_ecx_from_r11(struct x86_buf *b, int8_t disp);
void x86_load_rsi_from_r11(struct x86_buf *b, int8_t disp);
void x86_store_ecx_at_r11(struct x86_buf *b, int8_t disp);
void x86_store_ecx_at_rsi(struct x86_buf *b, int8_t disp);
void x86_xor_ecx(struct x86_buf *b);
void x86_jmp_r11_mem(struct x86_buf *b, int8_t disp); /* jmp *disp(%r11) */
void x86_ud2(struct x86_buf *b);

/* Used by tail trampolines, which must keep every register, flags and the red zone. */
void x86_lea_rsp(struct x86_buf *b, int32_t disp);	   /* lea disp(%rsp), %rsp */
void x86_lea_rcx_rsp32(struct x86_buf *b, int32_t disp);   /* lea disp(%rsp), %rcx */
void x86_pushfq(struct x86_buf *b);
void x86_popfq(struct x86_buf *b);
/*
 * pushfq and popfq as far as generated code changes the flags (the
 * arithmetic ones), without popfq, which is microcoded (about 4 ns against 1
 * on the project's machine, once per non-free tail call and jump dispatch):
 * seto/lahf save them into the same 8-byte slot at the new %rsp, add/sahf
 * restore them.  Both use the 8 bytes below the slot, so %rsp must already
 * be past any red zone.  Where lahf is not available in 64-bit mode (CPUID),
 * they are pushfq and popfq.
 */
void x86_save_flags(struct x86_buf *b);
void x86_restore_flags(struct x86_buf *b);
void x86_push_rax(struct x86_buf *b);
void x86_push_rcx(struct x86_buf *b);
void x86_push_r11(struct x86_buf *b);
void x86_pop_rax(struct x86_buf *b);
void x86_pop_rcx(struct x86_buf *b);
void x86_pop_r11(struct x86_buf *b);
void x86_load_rax_from_rcx(struct x86_buf *b);	   /* mov (%rcx), %rax */
void x86_store_rax_at_rcx(struct x86_buf *b);	   /* mov %rax, (%rcx) */
void x86_cmp_rax_with_rcx_mem(struct x86_buf *b);  /* flags of [rcx] - rax */
void x86_load_eax_from_rax(struct x86_buf *b, int8_t disp);
void x86_store_eax_at_r11(struct x86_buf *b, int8_t disp);
void x86_store_rcx_at_r11(struct x86_buf *b, int8_t disp);
void x86_xor_eax(struct x86_buf *b);

/* Used by indirect-call dispatch code. */
void x86_bytes(struct x86_buf *b, const uint8_t *bytes, size_t n); /* verbatim */
void x86_cmp_r11_with_rip_slot(struct x86_buf *b, uintptr_t slot); /* flags of r11 - [slot] */
void x86_trap(struct x86_buf *b); /* trap.h */

/* Control flow. */
void x86_ret(struct x86_buf *b);
void x86_call(struct x86_buf *b, uintptr_t target);
void x86_jmp(struct x86_buf *b, uintptr_t target);
void x86_jmp_abs_indirect(struct x86_buf *b, uintptr_t target); /* jmp *0(%rip); .quad */
void x86_call_rip_slot(struct x86_buf *b, uintptr_t slot);	 /* call *slot(%rip) */
/* An 8-byte literal at the current position; returns its run-time address. */
uintptr_t x86_literal64(struct x86_buf *b, uint64_t value);
void x86_jmp_rip_slot(struct x86_buf *b, uintptr_t slot);	 /* jmp *slot(%rip) */
void x86_endbr64(struct x86_buf *b);

enum x86_cond { X86_JB = 0x2, X86_JAE = 0x3, X86_JE = 0x4, X86_JNE = 0x5 };
x86_label x86_jcc_short(struct x86_buf *b, enum x86_cond cond);
x86_label x86_jmp_short(struct x86_buf *b);
/* A short conditional jump back to an earlier position. */
void x86_jcc_back(struct x86_buf *b, enum x86_cond cond, size_t to);
/* Points a short jump at the current position. */
void x86_bind(struct x86_buf *b, x86_label label);
/* A forward conditional jump with a 32-bit displacement, and its binding. */
x86_label x86_jcc_near(struct x86_buf *b, enum x86_cond cond);
void x86_bind_near(struct x86_buf *b, x86_label label);

/*
 * Comparing without the flags (jump dispatch): %rcx = %r11 + [slot] (the
 * slot holds a target negated), then jrcxz, a short jump bound by x86_bind.
 */
void x86_store_rcx_at_rsp8(struct x86_buf *b, int8_t disp);  /* mov %rcx, disp(%rsp) */
void x86_load_rcx_from_rsp8(struct x86_buf *b, int8_t disp); /* mov disp(%rsp), %rcx */
void x86_load_rcx_from_rip_slot(struct x86_buf *b, uintptr_t slot); /* mov slot(%rip), %rcx */
void x86_lea_rcx_r11_plus_rcx(struct x86_buf *b);		     /* lea (%r11,%rcx), %rcx */
x86_label x86_jrcxz(struct x86_buf *b);

/* Whether target is reachable with a rel32 from an instruction ending at from. */
bool x86_rel32_reaches(uintptr_t from, uintptr_t target);

#endif
