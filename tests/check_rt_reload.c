// SPDX-License-Identifier: MIT
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "reload.h"

static void assert_rewrites(const uint8_t *call, size_t len, const uint8_t *want, size_t want_len)
{
	uint8_t out[DACCE_RELOAD_MAX];
	size_t n = 0;

	ck_assert_int_eq(dacce_reload_from_call(call, len, out, &n), 0);
	ck_assert_uint_eq(n, want_len);
	ck_assert_mem_eq(out, want, n);
}

START_TEST(test_memory_forms_become_loads)
{
	/* call *0x10(%rax) -> mov 0x10(%rax), %r11 */
	assert_rewrites((const uint8_t[]){ 0xff, 0x50, 0x10 }, 3,
			(const uint8_t[]){ 0x4c, 0x8b, 0x58, 0x10 }, 4);
	/* call *0x100(%rax) -> mov 0x100(%rax), %r11 */
	assert_rewrites((const uint8_t[]){ 0xff, 0x90, 0x00, 0x01, 0x00, 0x00 }, 6,
			(const uint8_t[]){ 0x4c, 0x8b, 0x98, 0x00, 0x01, 0x00, 0x00 }, 7);
	/* call *0x8(%r12) (REX.B, SIB) -> mov 0x8(%r12), %r11 */
	assert_rewrites((const uint8_t[]){ 0x41, 0xff, 0x54, 0x24, 0x08 }, 5,
			(const uint8_t[]){ 0x4d, 0x8b, 0x5c, 0x24, 0x08 }, 5);
	/* call *0x73ae00(,%r9,8) (REX.X) -> mov 0x73ae00(,%r9,8), %r11 */
	assert_rewrites((const uint8_t[]){ 0x42, 0xff, 0x14, 0xcd, 0x00, 0xae, 0x73, 0x00 }, 8,
			(const uint8_t[]){ 0x4e, 0x8b, 0x1c, 0xcd, 0x00, 0xae, 0x73, 0x00 }, 8);
	/* notrack call *0x18(%rbx) -> the prefix goes */
	assert_rewrites((const uint8_t[]){ 0x3e, 0xff, 0x53, 0x18 }, 4,
			(const uint8_t[]){ 0x4c, 0x8b, 0x5b, 0x18 }, 4);
}
END_TEST

START_TEST(test_register_forms_become_moves)
{
	/* call *%rax -> mov %rax, %r11 */
	assert_rewrites((const uint8_t[]){ 0xff, 0xd0 }, 2, (const uint8_t[]){ 0x4c, 0x8b, 0xd8 }, 3);
	/* jmp *0x10(%rax) -> mov 0x10(%rax), %r11; notrack jmp *%rdx -> mov %rdx, %r11 */
	assert_rewrites((const uint8_t[]){ 0xff, 0x60, 0x10 }, 3,
			(const uint8_t[]){ 0x4c, 0x8b, 0x58, 0x10 }, 4);
	assert_rewrites((const uint8_t[]){ 0x3e, 0xff, 0xe2 }, 3, (const uint8_t[]){ 0x4c, 0x8b, 0xda }, 3);
	/* call *%r13 (REX.B) -> mov %r13, %r11 */
	assert_rewrites((const uint8_t[]){ 0x41, 0xff, 0xd5 }, 3,
			(const uint8_t[]){ 0x4d, 0x8b, 0xdd }, 3);
}
END_TEST

START_TEST(test_other_forms_are_refused)
{
	uint8_t out[DACCE_RELOAD_MAX];
	size_t n;

	/* call *0x1234(%rip) */
	ck_assert_int_eq(dacce_reload_from_call((const uint8_t[]){ 0xff, 0x15, 0x34, 0x12, 0, 0 },
						6, out, &n), -ENOTSUP);
	/* push *0x10(%rax): FF /6 */
	ck_assert_int_eq(dacce_reload_from_call((const uint8_t[]){ 0xff, 0x70, 0x10 }, 3, out, &n),
			 -ENOTSUP);
	/* call *%fs:0x10(%rax) */
	ck_assert_int_eq(dacce_reload_from_call((const uint8_t[]){ 0x64, 0xff, 0x50, 0x10 }, 4,
						out, &n), -ENOTSUP);
	ck_assert_int_eq(dacce_reload_from_call(NULL, 3, out, &n), -EINVAL);
}
END_TEST

/* The rewritten load, run, reads what the call would have called. */
START_TEST(test_rewritten_load_runs)
{
	static void *table[4] = { (void *)0x11, (void *)0x22, (void *)0x33, (void *)0x44 };
	/* call *0x10(%rdi) */
	uint8_t out[DACCE_RELOAD_MAX];
	size_t n;
	uint64_t got;

	ck_assert_int_eq(dacce_reload_from_call((const uint8_t[]){ 0xff, 0x57, 0x10 }, 3, out, &n),
			 0);
	ck_assert_uint_eq(n, 4);
	/* Run the same bytes inline: mov 0x10(%rdi), %r11. */
	__asm__ volatile(".byte 0x4c, 0x8b, 0x5f, 0x10\n\tmov %%r11, %0"
			 : "=r"(got)
			 : "D"(table)
			 : "r11");
	ck_assert_mem_eq(out, ((const uint8_t[]){ 0x4c, 0x8b, 0x5f, 0x10 }), 4);
	ck_assert_uint_eq(got, 0x33);
}
END_TEST

static Suite *reload_suite(void)
{
	Suite *s = suite_create("rt_reload");
	TCase *tc = tcase_create("rewrite");

	tcase_add_test(tc, test_memory_forms_become_loads);
	tcase_add_test(tc, test_register_forms_become_moves);
	tcase_add_test(tc, test_other_forms_are_refused);
	tcase_add_test(tc, test_rewritten_load_runs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(reload_suite());
}
