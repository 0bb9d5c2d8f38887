// SPDX-License-Identifier: MIT
#include "x86.h"

#include <cpuid.h>

#include "trap.h"

#include <string.h>

#define FS_PREFIX 0x64
#define REX_W 0x48
#define REX_WB 0x49 /* 64-bit, ModRM.rm extended: %r11 as base */
#define REX_WR 0x4c /* 64-bit, ModRM.reg extended: %r11 as operand */
#define REX_B 0x41  /* 32-bit operation, %r11 as base */

/* ModRM for [disp32] without base or index, then SIB 0x25 (absolute). */
#define MODRM_ABS(reg) ((uint8_t)(((reg) & 7) << 3 | 0x04))
#define SIB_ABS 0x25
/* ModRM for [%r11 + disp8] (rm = 011 with REX.B) and [%rsp + disp8] (needs SIB 0x24). */
#define MODRM_R11_D8(reg) ((uint8_t)(0x40 | ((reg) & 7) << 3 | 0x03))
#define MODRM_RSP_D8(reg) ((uint8_t)(0x40 | ((reg) & 7) << 3 | 0x04))
#define SIB_RSP 0x24

enum { RAX = 0, RCX = 1, RSP = 4, RSI = 6, R11 = 11 };

void x86_init(struct x86_buf *b, uint8_t *code, size_t cap, uintptr_t addr)
{
	b->code = code;
	b->len = 0;
	b->cap = cap;
	b->addr = addr;
	b->overflow = false;
}

static void emit(struct x86_buf *b, const uint8_t *bytes, size_t n)
{
	if (b->overflow || b->len + n > b->cap) {
		b->overflow = true;
		return;
	}
	memcpy(b->code + b->len, bytes, n);
	b->len += n;
}

static void emit_u32(uint8_t *out, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

/* prefix(es) opcode ModRM SIB disp32 for an %fs:disp32 operand. */
static void fs_op(struct x86_buf *b, uint8_t rex, uint8_t opcode, int reg, int32_t disp)
{
	uint8_t insn[9] = { FS_PREFIX, rex, opcode, MODRM_ABS(reg), SIB_ABS };

	emit_u32(insn + 5, (uint32_t)disp);
	emit(b, insn, sizeof(insn));
}

void x86_mov_fs_to_r11(struct x86_buf *b, int32_t disp) { fs_op(b, REX_WR, 0x8b, R11, disp); }
void x86_mov_r11_to_fs(struct x86_buf *b, int32_t disp) { fs_op(b, REX_WR, 0x89, R11, disp); }
void x86_mov_fs_to_rax(struct x86_buf *b, int32_t disp) { fs_op(b, REX_W, 0x8b, RAX, disp); }
void x86_mov_rcx_to_fs(struct x86_buf *b, int32_t disp) { fs_op(b, REX_W, 0x89, RCX, disp); }
void x86_add_r11_to_fs(struct x86_buf *b, int32_t disp) { fs_op(b, REX_WR, 0x01, R11, disp); }
void x86_sub_r11_from_fs(struct x86_buf *b, int32_t disp) { fs_op(b, REX_WR, 0x29, R11, disp); }
void x86_cmp_fs_with_r11(struct x86_buf *b, int32_t disp) { fs_op(b, REX_WR, 0x3b, R11, disp); }

/* 81 /0 (add) and 81 /5 (sub) with a sign-extended imm32. */
static void fs_imm_op(struct x86_buf *b, int ext, int32_t disp, int32_t imm)
{
	uint8_t insn[13] = { FS_PREFIX, REX_W, 0x81, MODRM_ABS(ext), SIB_ABS };

	emit_u32(insn + 5, (uint32_t)disp);
	emit_u32(insn + 9, (uint32_t)imm);
	emit(b, insn, sizeof(insn));
}

void x86_add_imm_to_fs(struct x86_buf *b, int32_t disp, int32_t imm) { fs_imm_op(b, 0, disp, imm); }
void x86_sub_imm_from_fs(struct x86_buf *b, int32_t disp, int32_t imm) { fs_imm_op(b, 5, disp, imm); }

void x86_movabs_r11(struct x86_buf *b, uint64_t imm)
{
	uint8_t insn[10] = { REX_WB, 0xbb };

	emit_u32(insn + 2, (uint32_t)imm);
	emit_u32(insn + 6, (uint32_t)(imm >> 32));
	emit(b, insn, sizeof(insn));
}

void x86_load_r11_from_r11(struct x86_buf *b)
{
	uint8_t insn[] = { 0x4d, 0x8b, 0x1b }; /* REX.W R B, mov r/m64 to r64, (%r11) into %r11 */

	emit(b, insn, sizeof(insn));
}

void x86_spill_rax(struct x86_buf *b, int8_t disp)
{
	uint8_t insn[] = { REX_W, 0x89, MODRM_RSP_D8(RAX), SIB_RSP, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_reload_rax(struct x86_buf *b, int8_t disp)
{
	uint8_t insn[] = { REX_W, 0x8b, MODRM_RSP_D8(RAX), SIB_RSP, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

static void r11_op(struct x86_buf *b, uint8_t rex, uint8_t opcode, int reg, int8_t disp)
{
	uint8_t insn[] = { rex, opcode, MODRM_R11_D8(reg), (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_store_rax_at_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_WB, 0x89, RAX, disp); }
void x86_load_rcx_from_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_WB, 0x8b, RCX, disp); }
void x86_cmp_rax_with_r11_mem(struct x86_buf *b, int8_t disp) { r11_op(b, REX_WB, 0x39, RAX, disp); }
void x86_inc32_at_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_B, 0xff, 0, disp); }
void x86_dec32_at_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_B, 0xff, 1, disp); }

void x86_inc64_at_r11(struct x86_buf *b) { r11_op(b, REX_WB, 0xff, 0, 0); }

void x86_mov_r11_to_rcx(struct x86_buf *b)
{
	static const uint8_t insn[] = { 0x4c, 0x89, 0xd9 };

	emit(b, insn, sizeof(insn));
}

void x86_imul_rcx_imm32(struct x86_buf *b, int32_t imm)
{
	uint8_t insn[7] = { 0x48, 0x69, 0xc9 };

	emit_u32(insn + 3, (uint32_t)imm);
	emit(b, insn, sizeof(insn));
}

void x86_shr_rcx_imm8(struct x86_buf *b, uint8_t count)
{
	uint8_t insn[] = { 0x48, 0xc1, 0xe9, count };

	emit(b, insn, sizeof(insn));
}

void x86_shl_rcx_imm8(struct x86_buf *b, uint8_t count)
{
	uint8_t insn[] = { 0x48, 0xc1, 0xe1, count };

	emit(b, insn, sizeof(insn));
}

void x86_add_rcx_to_rax(struct x86_buf *b)
{
	static const uint8_t insn[] = { 0x48, 0x01, 0xc8 };

	emit(b, insn, sizeof(insn));
}

void x86_cmp_r11_with_rax_mem(struct x86_buf *b)
{
	static const uint8_t insn[] = { 0x4c, 0x39, 0x18 };

	emit(b, insn, sizeof(insn));
}

void x86_cmpq_zero_at_rax(struct x86_buf *b)
{
	static const uint8_t insn[] = { 0x48, 0x83, 0x38, 0x00 };

	emit(b, insn, sizeof(insn));
}

void x86_add_rax_imm8(struct x86_buf *b, int8_t imm)
{
	uint8_t insn[] = { 0x48, 0x83, 0xc0, (uint8_t)imm };

	emit(b, insn, sizeof(insn));
}

void x86_load_rax_from_rax(struct x86_buf *b, int8_t disp)
{
	uint8_t insn[] = { 0x48, 0x8b, 0x40, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_store_r11_at_rsp32(struct x86_buf *b, int32_t disp)
{
	uint8_t insn[8] = { 0x4c, 0x89, 0x9c, 0x24 };

	emit_u32(insn + 4, (uint32_t)disp);
	emit(b, insn, sizeof(insn));
}

void x86_load_r11_from_rsp0(struct x86_buf *b)
{
	static const uint8_t insn[] = { 0x4c, 0x8b, 0x1c, 0x24 };

	emit(b, insn, sizeof(insn));
}

size_t x86_here(const struct x86_buf *b)
{
	return b->len;
}

void x86_jmp_short_back(struct x86_buf *b, size_t to)
{
	int64_t distance = (int64_t)to - (int64_t)(b->len + 2);
	uint8_t insn[] = { 0xeb, (uint8_t)(int8_t)distance };

	if (distance < -128) {
		b->overflow = true;
		return;
	}
	emit(b, insn, sizeof(insn));
}

void x86_store_imm32_at_r11(struct x86_buf *b, int8_t disp, uint32_t imm)
{
	uint8_t insn[8] = { REX_B, 0xc7, MODRM_R11_D8(0), (uint8_t)disp };

	emit_u32(insn + 4, imm);
	emit(b, insn, sizeof(insn));
}

void x86_cmp_imm32_at_r11(struct x86_buf *b, int8_t disp, uint32_t imm)
{
	uint8_t insn[8] = { REX_B, 0x81, MODRM_R11_D8(7), (uint8_t)disp };

	emit_u32(insn + 4, imm);
	emit(b, insn, sizeof(insn));
}

void x86_add_r11_imm8(struct x86_buf *b, int8_t imm)
{
	/* 83 /0 ib; a negative imm subtracts. */
	uint8_t insn[] = { REX_WB, 0x83, 0xc3, (uint8_t)imm };

	emit(b, insn, sizeof(insn));
}

/* mov between a register and disp8(%rsp). */
static void rsp_d8_op(struct x86_buf *b, uint8_t rex, uint8_t opcode, int reg, int8_t disp)
{
	uint8_t insn[] = { rex, opcode, MODRM_RSP_D8(reg), SIB_RSP, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_spill_r11(struct x86_buf *b, int8_t disp) { rsp_d8_op(b, REX_WR, 0x89, R11, disp); }
void x86_reload_r11(struct x86_buf *b, int8_t disp) { rsp_d8_op(b, REX_WR, 0x8b, R11, disp); }
void x86_spill_rsi(struct x86_buf *b, int8_t disp) { rsp_d8_op(b, REX_W, 0x89, RSI, disp); }
void x86_reload_rsi(struct x86_buf *b, int8_t disp) { rsp_d8_op(b, REX_W, 0x8b, RSI, disp); }

void x86_jmp_rsp_mem(struct x86_buf *b, int8_t disp)
{
	/* FF /4, ModRM 01 100 100, SIB 0x24 */
	uint8_t insn[] = { 0xff, 0x64, SIB_RSP, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_spill_rcx(struct x86_buf *b, int8_t disp)
{
	uint8_t insn[] = { REX_W, 0x89, MODRM_RSP_D8(RCX), SIB_RSP, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_reload_rcx(struct x86_buf *b, int8_t disp)
{
	uint8_t insn[] = { REX_W, 0x8b, MODRM_RSP_D8(RCX), SIB_RSP, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_mov_fs_to_rcx(struct x86_buf *b, int32_t disp) { fs_op(b, REX_W, 0x8b, RCX, disp); }
void x86_mov_fs_to_rsi(struct x86_buf *b, int32_t disp) { fs_op(b, REX_W, 0x8b, RSI, disp); }
void x86_mov_rax_to_fs(struct x86_buf *b, int32_t disp) { fs_op(b, REX_W, 0x89, RAX, disp); }
void x86_mov_rsi_to_fs(struct x86_buf *b, int32_t disp) { fs_op(b, REX_W, 0x89, RSI, disp); }
void x86_cmp_fs_with_rax(struct x86_buf *b, int32_t disp) { fs_op(b, REX_W, 0x3b, RAX, disp); }
void x86_cmp_fs_with_rsi(struct x86_buf *b, int32_t disp) { fs_op(b, REX_W, 0x3b, RSI, disp); }

void x86_movabs_rax(struct x86_buf *b, uint64_t imm)
{
	uint8_t insn[10] = { REX_W, 0xb8 };

	emit_u32(insn + 2, (uint32_t)imm);
	emit_u32(insn + 6, (uint32_t)(imm >> 32));
	emit(b, insn, sizeof(insn));
}

/* mod 00, rm 100 + SIB 0x24: [%rsp] with no displacement. */
static void rsp_op(struct x86_buf *b, uint8_t opcode)
{
	uint8_t insn[] = { REX_W, opcode, 0x04, SIB_RSP };

	emit(b, insn, sizeof(insn));
}

void x86_load_rax_from_rsp(struct x86_buf *b) { rsp_op(b, 0x8b); }
void x86_store_rax_to_rsp(struct x86_buf *b) { rsp_op(b, 0x89); }
void x86_cmp_rax_with_rsp_mem(struct x86_buf *b) { rsp_op(b, 0x39); }

void x86_store_rsp_at_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_WB, 0x89, RSP, disp); }
void x86_cmp_rsp_with_r11_mem(struct x86_buf *b, int8_t disp) { r11_op(b, REX_WB, 0x39, RSP, disp); }
void x86_cmp_rcx_with_r11_mem(struct x86_buf *b, int8_t disp) { r11_op(b, REX_WB, 0x39, RCX, disp); }
void x86_load_rsi_from_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_WB, 0x8b, RSI, disp); }
void x86_load_ecx_from_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_B, 0x8b, RCX, disp); }
void x86_store_ecx_at_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_B, 0x89, RCX, disp); }

void x86_cmp_rax_with_r11(struct x86_buf *b)
{
	uint8_t insn[] = { REX_WR, 0x39, 0xd8 }; /* cmp %r11, %rax */

	emit(b, insn, sizeof(insn));
}

void x86_lea_rcx_rsp(struct x86_buf *b, int8_t disp)
{
	uint8_t insn[] = { REX_W, 0x8d, MODRM_RSP_D8(RCX), SIB_RSP, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_load_ecx_from_rax(struct x86_buf *b, int8_t disp)
{
	/* mov disp8(%rax), %ecx: ModRM 01 001 000 */
	uint8_t insn[] = { 0x8b, 0x48, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_store_ecx_at_rsi(struct x86_buf *b, int8_t disp)
{
	/* mov %ecx, disp8(%rsi): ModRM 01 001 110 */
	uint8_t insn[] = { 0x89, 0x4e, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_xor_ecx(struct x86_buf *b)
{
	uint8_t insn[] = { 0x31, 0xc9 };

	emit(b, insn, sizeof(insn));
}

void x86_jmp_r11_mem(struct x86_buf *b, int8_t disp)
{
	/* FF /4 with ModRM 01 100 011 */
	uint8_t insn[] = { REX_B, 0xff, 0x63, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_ud2(struct x86_buf *b)
{
	uint8_t insn[] = { 0x0f, 0x0b };

	emit(b, insn, sizeof(insn));
}

static void emit1(struct x86_buf *b, uint8_t byte)
{
	emit(b, &byte, 1);
}

/* lea disp32(%rsp), reg: ModRM 10 reg 100 + SIB 0x24. */
static void lea_rsp32(struct x86_buf *b, int reg, int32_t disp)
{
	uint8_t insn[8] = { REX_W, 0x8d, (uint8_t)(0x80 | (reg & 7) << 3 | 0x04), SIB_RSP };

	emit_u32(insn + 4, (uint32_t)disp);
	emit(b, insn, sizeof(insn));
}

void x86_lea_rsp(struct x86_buf *b, int32_t disp) { lea_rsp32(b, RSP, disp); }
void x86_lea_rcx_rsp32(struct x86_buf *b, int32_t disp) { lea_rsp32(b, RCX, disp); }
void x86_pushfq(struct x86_buf *b) { emit1(b, 0x9c); }
void x86_popfq(struct x86_buf *b) { emit1(b, 0x9d); }

/* CPUID 0x80000001, ECX bit 0: LAHF/SAHF in 64-bit mode (asked once; the answer never changes). */
static bool lahf_in_long_mode(void)
{
	static int known = -1;
	unsigned int eax, ebx, ecx, edx;

	if (known < 0)
		known = __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) && (ecx & 1);
	return known;
}

void x86_save_flags(struct x86_buf *b)
{
	static const uint8_t save[] = {
		0x48, 0x89, 0x44, 0x24, 0xf0, /* mov %rax, -16(%rsp) */
		0x0f, 0x90, 0xc0,	      /* seto %al */
		0x9f,			      /* lahf */
		0x48, 0x89, 0x44, 0x24, 0xf8, /* mov %rax, -8(%rsp): the slot */
		0x48, 0x8b, 0x44, 0x24, 0xf0, /* mov -16(%rsp), %rax */
		0x48, 0x8d, 0x64, 0x24, 0xf8, /* lea -8(%rsp), %rsp */
	};

	if (!lahf_in_long_mode()) {
		x86_pushfq(b);
		return;
	}
	emit(b, save, sizeof(save));
}

void x86_restore_flags(struct x86_buf *b)
{
	static const uint8_t restore[] = {
		0x48, 0x89, 0x44, 0x24, 0xf8, /* mov %rax, -8(%rsp) */
		0x48, 0x8b, 0x04, 0x24,	      /* mov (%rsp), %rax: the slot */
		0x04, 0x7f,		      /* add $0x7f, %al: OF back (seto left 0 or 1) */
		0x9e,			      /* sahf: SF ZF AF PF CF back */
		0x48, 0x8b, 0x44, 0x24, 0xf8, /* mov -8(%rsp), %rax */
		0x48, 0x8d, 0x64, 0x24, 0x08, /* lea 8(%rsp), %rsp */
	};

	if (!lahf_in_long_mode()) {
		x86_popfq(b);
		return;
	}
	emit(b, restore, sizeof(restore));
}
void x86_push_rax(struct x86_buf *b) { emit1(b, 0x50); }
void x86_push_rcx(struct x86_buf *b) { emit1(b, 0x51); }
void x86_pop_rax(struct x86_buf *b) { emit1(b, 0x58); }
void x86_pop_rcx(struct x86_buf *b) { emit1(b, 0x59); }

void x86_push_r11(struct x86_buf *b)
{
	uint8_t insn[] = { REX_B, 0x53 };

	emit(b, insn, sizeof(insn));
}

void x86_pop_r11(struct x86_buf *b)
{
	uint8_t insn[] = { REX_B, 0x5b };

	emit(b, insn, sizeof(insn));
}

/* op r64, [rcx] with mod 00, rm 001. */
static void rcx_mem_op(struct x86_buf *b, uint8_t opcode)
{
	uint8_t insn[] = { REX_W, opcode, 0x01 };

	emit(b, insn, sizeof(insn));
}

void x86_load_rax_from_rcx(struct x86_buf *b) { rcx_mem_op(b, 0x8b); }
void x86_store_rax_at_rcx(struct x86_buf *b) { rcx_mem_op(b, 0x89); }
void x86_cmp_rax_with_rcx_mem(struct x86_buf *b) { rcx_mem_op(b, 0x39); }

void x86_load_eax_from_rax(struct x86_buf *b, int8_t disp)
{
	/* mov disp8(%rax), %eax: ModRM 01 000 000 */
	uint8_t insn[] = { 0x8b, 0x40, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_store_eax_at_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_B, 0x89, RAX, disp); }
void x86_store_rcx_at_r11(struct x86_buf *b, int8_t disp) { r11_op(b, REX_WB, 0x89, RCX, disp); }

void x86_xor_eax(struct x86_buf *b)
{
	uint8_t insn[] = { 0x31, 0xc0 };

	emit(b, insn, sizeof(insn));
}

void x86_ret(struct x86_buf *b)
{
	uint8_t insn[] = { 0xc3 };

	emit(b, insn, sizeof(insn));
}

bool x86_rel32_reaches(uintptr_t from, uintptr_t target)
{
	int64_t delta = (int64_t)(target - from);

	return delta >= INT32_MIN && delta <= INT32_MAX;
}

static void rel32_op(struct x86_buf *b, uint8_t opcode, uintptr_t target)
{
	uint8_t insn[5] = { opcode };
	uintptr_t end = b->addr + b->len + sizeof(insn);

	if (!x86_rel32_reaches(end, target)) {
		b->overflow = true;
		return;
	}
	emit_u32(insn + 1, (uint32_t)(target - end));
	emit(b, insn, sizeof(insn));
}

void x86_call(struct x86_buf *b, uintptr_t target) { rel32_op(b, 0xe8, target); }
void x86_jmp(struct x86_buf *b, uintptr_t target) { rel32_op(b, 0xe9, target); }

void x86_jmp_abs_indirect(struct x86_buf *b, uintptr_t target)
{
	uint8_t insn[14] = { 0xff, 0x25, 0, 0, 0, 0 };

	emit_u32(insn + 6, (uint32_t)target);
	emit_u32(insn + 10, (uint32_t)(target >> 32));
	emit(b, insn, sizeof(insn));
}

/* An instruction whose head (opcode bytes, ModRM) ends in a RIP-relative rel32 to slot. */
static void rip_relative(struct x86_buf *b, const uint8_t *head, size_t head_len, uintptr_t slot)
{
	uint8_t insn[8];
	uintptr_t end = b->addr + b->len + head_len + 4;

	if (head_len > sizeof(insn) - 4 || !x86_rel32_reaches(end, slot)) {
		b->overflow = true;
		return;
	}
	memcpy(insn, head, head_len);
	emit_u32(insn + head_len, (uint32_t)(slot - end));
	emit(b, insn, head_len + 4);
}

/* FF /2 (call) or FF /4 (jmp) with a RIP-relative memory operand. */
static void rip_slot_op(struct x86_buf *b, uint8_t modrm, uintptr_t slot)
{
	const uint8_t head[] = { 0xff, modrm };

	rip_relative(b, head, sizeof(head), slot);
}

void x86_call_rip_slot(struct x86_buf *b, uintptr_t slot) { rip_slot_op(b, 0x15, slot); }
void x86_jmp_rip_slot(struct x86_buf *b, uintptr_t slot) { rip_slot_op(b, 0x25, slot); }

uintptr_t x86_literal64(struct x86_buf *b, uint64_t value)
{
	uint8_t bytes[8];
	uintptr_t at = b->addr + b->len;

	emit_u32(bytes, (uint32_t)value);
	emit_u32(bytes + 4, (uint32_t)(value >> 32));
	emit(b, bytes, sizeof(bytes));
	return at;
}

void x86_bytes(struct x86_buf *b, const uint8_t *bytes, size_t n)
{
	emit(b, bytes, n);
}

void x86_cmp_r11_with_rip_slot(struct x86_buf *b, uintptr_t slot)
{
	static const uint8_t head[] = { REX_WR, 0x3b, 0x1d }; /* cmp r11, [rip + rel32] */

	rip_relative(b, head, sizeof(head), slot);
}

void x86_trap(struct x86_buf *b)
{
	uint8_t insn[] = { DACCE_TRAP_BYTE };

	emit(b, insn, sizeof(insn));
}

x86_label x86_jcc_near(struct x86_buf *b, enum x86_cond cond)
{
	uint8_t insn[6] = { 0x0f, (uint8_t)(0x80 | cond) };

	emit(b, insn, sizeof(insn));
	return b->len;
}

void x86_bind_near(struct x86_buf *b, x86_label label)
{
	if (b->overflow)
		return;
	emit_u32(b->code + label - 4, (uint32_t)(b->len - label));
}

void x86_endbr64(struct x86_buf *b)
{
	uint8_t insn[] = { 0xf3, 0x0f, 0x1e, 0xfa };

	emit(b, insn, sizeof(insn));
}

x86_label x86_jcc_short(struct x86_buf *b, enum x86_cond cond)
{
	uint8_t insn[] = { (uint8_t)(0x70 | cond), 0 };

	emit(b, insn, sizeof(insn));
	return b->len;
}

x86_label x86_jmp_short(struct x86_buf *b)
{
	uint8_t insn[] = { 0xeb, 0 };

	emit(b, insn, sizeof(insn));
	return b->len;
}

void x86_jcc_back(struct x86_buf *b, enum x86_cond cond, size_t to)
{
	int64_t distance = (int64_t)to - (int64_t)(b->len + 2);
	uint8_t insn[] = { (uint8_t)(0x70 | cond), (uint8_t)(int8_t)distance };

	if (distance < -128) {
		b->overflow = true;
		return;
	}
	emit(b, insn, sizeof(insn));
}

void x86_store_rcx_at_rsp8(struct x86_buf *b, int8_t disp)
{
	uint8_t insn[] = { 0x48, 0x89, 0x4c, 0x24, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_load_rcx_from_rsp8(struct x86_buf *b, int8_t disp)
{
	uint8_t insn[] = { 0x48, 0x8b, 0x4c, 0x24, (uint8_t)disp };

	emit(b, insn, sizeof(insn));
}

void x86_load_rcx_from_rip_slot(struct x86_buf *b, uintptr_t slot)
{
	static const uint8_t head[] = { 0x48, 0x8b, 0x0d }; /* mov rcx, [rip + rel32] */

	rip_relative(b, head, sizeof(head), slot);
}

void x86_lea_rcx_r11_plus_rcx(struct x86_buf *b)
{
	static const uint8_t insn[] = { 0x49, 0x8d, 0x0c, 0x0b };

	emit(b, insn, sizeof(insn));
}

x86_label x86_jrcxz(struct x86_buf *b)
{
	static const uint8_t insn[] = { 0xe3, 0 };

	emit(b, insn, sizeof(insn));
	return b->len;
}

void x86_bind(struct x86_buf *b, x86_label label)
{
	size_t distance = b->len - label;

	if (b->overflow)
		return;
	if (distance > 127) {
		b->overflow = true;
		return;
	}
	b->code[label - 1] = (uint8_t)distance;
}
