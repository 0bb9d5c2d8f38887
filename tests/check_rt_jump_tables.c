// SPDX-License-Identifier: MIT
/*
 * Switch jumps the runtime leaves alone (runtime/jump_tables.h): the scan
 * flags a jump through a bounded table only in the exact shapes compilers
 * emit, hand-assembled here at a made-up address, and never when the bound
 * may not hold at the jump (a compare on the index's low half alone, a lea
 * or another instruction writing a register the bound lives in, a signed
 * compare, a branch landing after the compare).  The entries are then read
 * from memory, without faulting, and must all lie in the function.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_main.h"
#include "jump_tables.h"
#include "scan.h"

#define BASE ((uintptr_t)0x400000)

/* The indirect jump's site in bytes scanned as the function [BASE, BASE + len). */
static struct dacce_scan_site scan_jump(const uint8_t *bytes, size_t len)
{
	struct dacce_scan scan;
	struct dacce_scan_site site;

	ck_assert_int_eq(dacce_scan_function(bytes, BASE, BASE, BASE + len, NULL, 0, &scan), 0);
	ck_assert_uint_eq(scan.n, 1);
	site = scan.sites[0];
	ck_assert_uint_eq(site.kind, DACCE_SITE_TAIL_INDIRECT);
	dacce_scan_fini(&scan);
	return site;
}

static void assert_table(const struct dacce_scan_site *site, uintptr_t table, uint32_t entries,
			 uint8_t entry_size, uintptr_t guard)
{
	ck_assert(site->flags & DACCE_SCAN_JUMP_TABLE);
	ck_assert_uint_eq(site->jump_table.table, table);
	ck_assert_uint_eq(site->jump_table.entries, entries);
	ck_assert_uint_eq(site->jump_table.entry_size, entry_size);
	ck_assert_uint_eq(site->jump_table.guard, guard);
}

static void assert_no_table(const uint8_t *bytes, size_t len)
{
	struct dacce_scan_site site = scan_jump(bytes, len);

	ck_assert(!(site.flags & DACCE_SCAN_JUMP_TABLE));
}

/* cmp $0xb,%esi; ja; lea; mov %esi,%edx; movslq (%rcx,%rdx,4),%rdx; add %rcx,%rdx; jmp *%rdx */
static const uint8_t relative_form[] = {
	0x83, 0xfe, 0x0b, 0x77, 0x12, 0x48, 0x8d, 0x0d, 0x00, 0x10, 0x00, 0x00, 0x89, 0xf2,
	0x48, 0x63, 0x14, 0x91, 0x48, 0x01, 0xca, 0xff, 0xe2, 0xc3,
};

START_TEST(test_relative_table_after_a_32_bit_compare_and_mov)
{
	struct dacce_scan_site site = scan_jump(relative_form, sizeof(relative_form));

	ck_assert_uint_eq(site.addr, BASE + 0x15);
	assert_table(&site, BASE + 0xc + 0x1000, 12, 4, BASE);
}
END_TEST

START_TEST(test_relative_table_indexed_by_a_copy_made_before_the_compare)
{
	/* mov %rsi,%rcx; cmp $0x18,%rsi; ja; lea ..,%rsi; movslq (%rsi,%rcx,4),%rcx; add %rsi,%rcx; notrack jmp *%rcx */
	static const uint8_t code[] = {
		0x48, 0x89, 0xf1, 0x48, 0x83, 0xfe, 0x18, 0x77, 0x11, 0x48, 0x8d, 0x35, 0x00,
		0x10, 0x00, 0x00, 0x48, 0x63, 0x0c, 0x8e, 0x48, 0x01, 0xf1, 0x3e, 0xff, 0xe1, 0xc3,
	};
	struct dacce_scan_site site = scan_jump(code, sizeof(code));

	assert_table(&site, BASE + 0x10 + 0x1000, 25, 4, BASE);
	ck_assert(site.flags & DACCE_SCAN_NOTRACK);
}
END_TEST

START_TEST(test_absolute_table_after_jae)
{
	/* cmp $5,%eax; jae; mov %eax,%eax; jmp *0x402000(,%rax,8) */
	static const uint8_t code[] = {
		0x83, 0xf8, 0x05, 0x73, 0x09, 0x89, 0xc0, 0xff, 0x24, 0xc5, 0x00, 0x20, 0x40, 0x00, 0xc3,
	};
	struct dacce_scan_site site = scan_jump(code, sizeof(code));

	assert_table(&site, 0x402000, 5, 8, BASE);
}
END_TEST

START_TEST(test_relative_table_indexed_by_a_32_bit_copy_made_before_the_compare)
{
	/* mov %edi,%edx; cmp $7,%edx; ja; lea; movslq (%rcx,%rdx,4),%rax; add %rcx,%rax; jmp *%rax */
	static const uint8_t code[] = {
		0x89, 0xfa, 0x83, 0xfa, 0x07, 0x77, 0x10, 0x48, 0x8d, 0x0d, 0x00, 0x10,
		0x00, 0x00, 0x48, 0x63, 0x04, 0x91, 0x48, 0x01, 0xc8, 0xff, 0xe0, 0xc3,
	};
	struct dacce_scan_site site = scan_jump(code, sizeof(code));

	assert_table(&site, BASE + 0xe + 0x1000, 8, 4, BASE);
}
END_TEST

START_TEST(test_relative_table_after_a_byte_compare_and_movzbl)
{
	/* cmp $6,%dl; ja; lea; movzbl %dl,%edx; movslq (%rcx,%rdx,4),%rax; add %rcx,%rax; jmp *%rax */
	static const uint8_t code[] = {
		0x80, 0xfa, 0x06, 0x77, 0x13, 0x48, 0x8d, 0x0d, 0x00, 0x10, 0x00, 0x00, 0x0f,
		0xb6, 0xd2, 0x48, 0x63, 0x04, 0x91, 0x48, 0x01, 0xc8, 0xff, 0xe0, 0xc3,
	};
	struct dacce_scan_site site = scan_jump(code, sizeof(code));

	assert_table(&site, BASE + 0xc + 0x1000, 7, 4, BASE);
}
END_TEST

START_TEST(test_a_byte_compare_then_a_32_bit_copy_bounds_nothing)
{
	/* cmp $6,%dl; ...; mov %edx,%edx: bits 8 to 31 of the index are unknown */
	static const uint8_t code[] = {
		0x80, 0xfa, 0x06, 0x77, 0x12, 0x48, 0x8d, 0x0d, 0x00, 0x10, 0x00, 0x00, 0x89,
		0xd2, 0x48, 0x63, 0x04, 0x91, 0x48, 0x01, 0xc8, 0xff, 0xe0, 0xc3,
	};

	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_compare_of_a_high_byte_bounds_nothing)
{
	/* cmp $6,%dh; ja; lea; movzbl %dl,%edx: %dh is bits 8 to 15, the index %dl's */
	static const uint8_t code[] = {
		0x80, 0xfe, 0x06, 0x77, 0x13, 0x48, 0x8d, 0x0d, 0x00, 0x10, 0x00, 0x00, 0x0f,
		0xb6, 0xd2, 0x48, 0x63, 0x04, 0x91, 0x48, 0x01, 0xc8, 0xff, 0xe0, 0xc3,
	};

	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_copy_of_another_register_bounds_nothing)
{
	/* mov %rdi,%r8; cmp $7,%rdx; ja; lea; movslq (%rcx,%r8,4),%rax; add %rcx,%rax; jmp *%rax */
	static const uint8_t code[] = {
		0x49, 0x89, 0xf8, 0x48, 0x83, 0xfa, 0x07, 0x77, 0x10, 0x48, 0x8d, 0x0d, 0x00,
		0x10, 0x00, 0x00, 0x4a, 0x63, 0x04, 0x81, 0x48, 0x01, 0xc8, 0xff, 0xe0, 0xc3,
	};

	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_compare_of_the_low_half_alone_bounds_nothing)
{
	/* cmp $0xb,%esi; ja; lea; movslq (%rcx,%rsi,4),%rdx: %rsi's high half is unknown */
	static const uint8_t code[] = {
		0x83, 0xfe, 0x0b, 0x77, 0x10, 0x48, 0x8d, 0x0d, 0x00, 0x10, 0x00, 0x00,
		0x48, 0x63, 0x14, 0xb1, 0x48, 0x01, 0xca, 0xff, 0xe2, 0xc3,
	};

	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_lea_writing_the_index_bounds_nothing)
{
	/* cmp $0xb,%rdx; ja; lea ..,%rdx; movslq (%rdx,%rdx,4),%rax; add %rdx,%rax; jmp *%rax */
	static const uint8_t code[] = {
		0x48, 0x83, 0xfa, 0x0b, 0x77, 0x10, 0x48, 0x8d, 0x15, 0x00, 0x10, 0x00, 0x00,
		0x48, 0x63, 0x04, 0x92, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xc3,
	};

	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_another_instruction_in_between_bounds_nothing)
{
	/* ... mov %esi,%edx; add $1,%edx; movslq ...: the index moved past the bound */
	static const uint8_t code[] = {
		0x83, 0xfe, 0x0b, 0x77, 0x15, 0x48, 0x8d, 0x0d, 0x00, 0x10, 0x00, 0x00, 0x89, 0xf2,
		0x83, 0xc2, 0x01, 0x48, 0x63, 0x14, 0x91, 0x48, 0x01, 0xca, 0xff, 0xe2, 0xc3,
	};

	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_branch_landing_after_the_compare_bounds_nothing)
{
	/* relative_form, but its default case jumps back to the mov, past the compare */
	static const uint8_t code[] = {
		0x83, 0xfe, 0x0b, 0x77, 0x12, 0x48, 0x8d, 0x0d, 0x00, 0x10, 0x00, 0x00, 0x89, 0xf2,
		0x48, 0x63, 0x14, 0x91, 0x48, 0x01, 0xca, 0xff, 0xe2, 0xeb, 0xf3,
	};

	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_signed_compare_bounds_nothing)
{
	uint8_t code[sizeof(relative_form)];

	memcpy(code, relative_form, sizeof(code));
	code[3] = 0x7f; /* jg: a negative index falls through */
	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_compare_of_another_register_bounds_nothing)
{
	uint8_t code[sizeof(relative_form)];

	memcpy(code, relative_form, sizeof(code));
	code[1] = 0xff; /* cmp $0xb,%edi; the index comes from %esi */
	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_negative_bound_bounds_nothing)
{
	/* cmp $-1,%rsi; ja; lea; movslq (%rcx,%rsi,4),%rdx; add %rcx,%rdx; jmp *%rdx */
	static const uint8_t code[] = {
		0x48, 0x83, 0xfe, 0xff, 0x77, 0x10, 0x48, 0x8d, 0x0d, 0x00, 0x10, 0x00, 0x00,
		0x48, 0x63, 0x14, 0xb1, 0x48, 0x01, 0xca, 0xff, 0xe2, 0xc3,
	};

	assert_no_table(code, sizeof(code));
}
END_TEST

START_TEST(test_a_jump_through_a_register_alone_is_no_table)
{
	static const uint8_t code[] = { 0x48, 0x89, 0xf8, 0xff, 0xe0 }; /* mov %rdi,%rax; jmp *%rax */

	assert_no_table(code, sizeof(code));
}
END_TEST

/* ------------------------------------------------------------------ the entries */

START_TEST(test_entries_inside_the_function_stay_in_it)
{
	static int32_t offsets[4];
	uintptr_t table = (uintptr_t)offsets;
	struct dacce_jump_table jt = { .table = table, .entries = 4, .entry_size = 4 };

	for (int i = 0; i < 4; i++)
		offsets[i] = -0x100 + 0x10 * i; /* targets table-0x100 .. table-0xd0 */
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, table - 0x100, table - 0xcf), 1);
	/* The last one past the end: a case that leaves the function. */
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, table - 0x100, table - 0xd0), 0);
	/* An entry far past the function. */
	offsets[3] = 0x10000;
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, table - 0x100, table - 0xcf), 0);
}
END_TEST

START_TEST(test_absolute_entries)
{
	static uintptr_t targets[3] = { 0x401000, 0x401040, 0x4010ff };
	struct dacce_jump_table jt = { .table = (uintptr_t)targets, .entries = 3, .entry_size = 8 };

	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0x401000, 0x401100), 1);
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0x401000, 0x4010ff), 0);
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0x401001, 0x401100), 0);
}
END_TEST

START_TEST(test_an_unreadable_table_fails_without_faulting)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);
	struct dacce_jump_table jt = { .entries = 8, .entry_size = 4 };

	ck_assert_ptr_ne(pages, MAP_FAILED);
	ck_assert_int_eq(mprotect(pages + page, page, PROT_NONE), 0);
	/* The last 16 bytes of the readable page, then the inaccessible one. */
	jt.table = (uintptr_t)(pages + page - 16);
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0, UINTPTR_MAX), -EFAULT);
	jt.table = (uintptr_t)(pages + page);
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0, UINTPTR_MAX), -EFAULT);
	jt.entries = 4;
	jt.table = (uintptr_t)(pages + page - 16);
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0, UINTPTR_MAX), 1);
	munmap(pages, 2 * page);
}
END_TEST

START_TEST(test_bad_tables_are_refused)
{
	struct dacce_jump_table jt = { .table = 0x1000, .entries = 0, .entry_size = 4 };

	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0, UINTPTR_MAX), -EINVAL);
	jt.entries = DACCE_JUMP_TABLE_MAX_ENTRIES + 1;
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0, UINTPTR_MAX), -EINVAL);
	jt.entries = 4;
	jt.entry_size = 2;
	ck_assert_int_eq(dacce_jump_table_stays_in(&jt, 0, UINTPTR_MAX), -EINVAL);
	ck_assert_int_eq(dacce_jump_table_stays_in(NULL, 0, UINTPTR_MAX), -EINVAL);
}
END_TEST

static Suite *jump_tables_suite(void)
{
	Suite *s = suite_create("rt_jump_tables");
	TCase *tc = tcase_create("shapes");

	tcase_add_test(tc, test_relative_table_after_a_32_bit_compare_and_mov);
	tcase_add_test(tc, test_relative_table_indexed_by_a_copy_made_before_the_compare);
	tcase_add_test(tc, test_absolute_table_after_jae);
	tcase_add_test(tc, test_relative_table_indexed_by_a_32_bit_copy_made_before_the_compare);
	tcase_add_test(tc, test_relative_table_after_a_byte_compare_and_movzbl);
	tcase_add_test(tc, test_a_byte_compare_then_a_32_bit_copy_bounds_nothing);
	tcase_add_test(tc, test_a_copy_of_another_register_bounds_nothing);
	tcase_add_test(tc, test_a_compare_of_a_high_byte_bounds_nothing);
	tcase_add_test(tc, test_a_compare_of_the_low_half_alone_bounds_nothing);
	tcase_add_test(tc, test_a_lea_writing_the_index_bounds_nothing);
	tcase_add_test(tc, test_another_instruction_in_between_bounds_nothing);
	tcase_add_test(tc, test_a_branch_landing_after_the_compare_bounds_nothing);
	tcase_add_test(tc, test_a_signed_compare_bounds_nothing);
	tcase_add_test(tc, test_a_compare_of_another_register_bounds_nothing);
	tcase_add_test(tc, test_a_negative_bound_bounds_nothing);
	tcase_add_test(tc, test_a_jump_through_a_register_alone_is_no_table);
	suite_add_tcase(s, tc);
	tc = tcase_create("entries");
	tcase_add_test(tc, test_entries_inside_the_function_stay_in_it);
	tcase_add_test(tc, test_absolute_entries);
	tcase_add_test(tc, test_an_unreadable_table_fails_without_faulting);
	tcase_add_test(tc, test_bad_tables_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(jump_tables_suite());
}
