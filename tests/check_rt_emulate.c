// SPDX-License-Identifier: MIT
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "emulate.h"

#define AT 0x400000u

static mcontext_t regs_with(int reg, uint64_t value)
{
	mcontext_t regs;

	memset(&regs, 0, sizeof(regs));
	regs.gregs[reg] = (greg_t)value;
	return regs;
}

START_TEST(test_register_and_memory_targets)
{
	static const uint8_t call_rax[] = { 0xff, 0xd0 };		 /* call *%rax */
	static const uint8_t call_8_rdi[] = { 0xff, 0x57, 0x08 };	 /* call *0x8(%rdi) */
	static const uint8_t jmp_table[] = { 0xff, 0x24, 0xcd, 0, 0, 0, 0 }; /* jmp *0(,%rcx,8) */
	static const uint8_t notrack_jmp_r11[] = { 0x3e, 0x41, 0xff, 0xe3 }; /* notrack jmp *%r11 */
	uint64_t table[4] = { 0x111, 0x222, 0x333, 0x444 };
	struct dacce_branch br;
	mcontext_t regs;

	regs = regs_with(REG_RAX, 0xabcdef);
	ck_assert_int_eq(dacce_emulate_branch(call_rax, sizeof(call_rax), AT, &regs, &br), 0);
	ck_assert_uint_eq(br.target, 0xabcdef);
	ck_assert(br.is_call && br.taken);
	ck_assert_uint_eq(br.len, 2);

	regs = regs_with(REG_RDI, (uint64_t)(uintptr_t)table);
	ck_assert_int_eq(dacce_emulate_branch(call_8_rdi, sizeof(call_8_rdi), AT, &regs, &br), 0);
	ck_assert_uint_eq(br.target, 0x222);

	/* Scaled index with an absolute displacement pointing at the table. */
	uint8_t jt[sizeof(jmp_table)];
	uint32_t disp = (uint32_t)(uintptr_t)table;

	memcpy(jt, jmp_table, sizeof(jt));
	memcpy(jt + 3, &disp, 4);
	if ((uintptr_t)table < 0x80000000u) { /* disp32 is sign-extended: only low tables */
		regs = regs_with(REG_RCX, 3);
		ck_assert_int_eq(dacce_emulate_branch(jt, sizeof(jt), AT, &regs, &br), 0);
		ck_assert_uint_eq(br.target, 0x444);
		ck_assert(!br.is_call);
	}
	regs = regs_with(REG_R11, 0x5000);
	ck_assert_int_eq(dacce_emulate_branch(notrack_jmp_r11, sizeof(notrack_jmp_r11), AT, &regs,
					      &br), 0);
	ck_assert_uint_eq(br.target, 0x5000);
}
END_TEST

START_TEST(test_rip_relative_and_direct)
{
	static uint64_t slot = 0x7777;
	uint8_t call_slot[6] = { 0xff, 0x15 };	/* call *rel32(%rip) */
	static const uint8_t jmp_short[] = { 0xeb, 0x10 };
	struct dacce_branch br;
	mcontext_t regs = regs_with(REG_RAX, 0);
	uintptr_t at = (uintptr_t)&slot - 0x100;
	int32_t rel = (int32_t)((uintptr_t)&slot - (at + 6));

	memcpy(call_slot + 2, &rel, 4);
	ck_assert_int_eq(dacce_emulate_branch(call_slot, sizeof(call_slot), at, &regs, &br), 0);
	ck_assert_uint_eq(br.target, 0x7777);
	ck_assert_int_eq(dacce_emulate_branch(jmp_short, sizeof(jmp_short), AT, &regs, &br), 0);
	ck_assert_uint_eq(br.target, AT + 2 + 0x10);
}
END_TEST

START_TEST(test_conditions_follow_the_flags)
{
	static const uint8_t je[] = { 0x0f, 0x84, 0x00, 0x01, 0x00, 0x00 };  /* je +0x100 */
	static const uint8_t jl[] = { 0x7c, 0x20 };			     /* jl +0x20 */
	static const uint8_t jbe[] = { 0x76, 0x20 };
	struct dacce_branch br;
	mcontext_t regs;

	regs = regs_with(REG_EFL, 1u << 6); /* ZF */
	ck_assert_int_eq(dacce_emulate_branch(je, sizeof(je), AT, &regs, &br), 0);
	ck_assert(br.taken);
	ck_assert_uint_eq(br.target, AT + 6 + 0x100);
	regs = regs_with(REG_EFL, 0);
	ck_assert_int_eq(dacce_emulate_branch(je, sizeof(je), AT, &regs, &br), 0);
	ck_assert(!br.taken);
	regs = regs_with(REG_EFL, 1u << 7); /* SF != OF: less */
	ck_assert_int_eq(dacce_emulate_branch(jl, sizeof(jl), AT, &regs, &br), 0);
	ck_assert(br.taken);
	regs = regs_with(REG_EFL, (1u << 7) | (1u << 11)); /* SF == OF */
	ck_assert_int_eq(dacce_emulate_branch(jl, sizeof(jl), AT, &regs, &br), 0);
	ck_assert(!br.taken);
	regs = regs_with(REG_EFL, 1u << 0); /* CF: below or equal */
	ck_assert_int_eq(dacce_emulate_branch(jbe, sizeof(jbe), AT, &regs, &br), 0);
	ck_assert(br.taken);
}
END_TEST

START_TEST(test_other_instructions_are_refused)
{
	static const uint8_t nop[] = { 0x90 };
	static const uint8_t far_jmp[] = { 0xff, 0x28 }; /* ljmp *(%rax) */
	static const uint8_t fs_call[] = { 0x64, 0xff, 0x10 }; /* call *%fs:(%rax) */
	static const uint8_t jrcxz[] = { 0xe3, 0x10 };
	struct dacce_branch br;
	mcontext_t regs = regs_with(REG_RAX, 0);

	ck_assert_int_eq(dacce_emulate_branch(nop, sizeof(nop), AT, &regs, &br), -EILSEQ);
	ck_assert_int_eq(dacce_emulate_branch(far_jmp, sizeof(far_jmp), AT, &regs, &br), -ENOTSUP);
	ck_assert_int_eq(dacce_emulate_branch(fs_call, sizeof(fs_call), AT, &regs, &br), -ENOTSUP);
	ck_assert_int_eq(dacce_emulate_branch(jrcxz, sizeof(jrcxz), AT, &regs, &br), -ENOTSUP);
}
END_TEST

static Suite *emulate_suite(void)
{
	Suite *s = suite_create("rt_emulate");
	TCase *tc = tcase_create("branches");

	tcase_add_test(tc, test_register_and_memory_targets);
	tcase_add_test(tc, test_rip_relative_and_direct);
	tcase_add_test(tc, test_conditions_follow_the_flags);
	tcase_add_test(tc, test_other_instructions_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(emulate_suite());
}
