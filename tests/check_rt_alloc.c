// SPDX-License-Identifier: MIT
/*
 * The runtime's own heap (runtime/private_alloc.c): a freed block goes back
 * to the free list of its own size class and the next allocation of that
 * class takes it.  dacce_free read the block's class after writing the
 * free-list link over it, so every freed block landed in class 0 and was
 * never used again: the heap only grew (2 KiB for every thread started, a
 * third of CPython's start-up memory under the runtime), and freeing a
 * zero-byte block with class 0's list not empty wrote through the link as
 * an index.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "private_alloc.h"

static const size_t sizes[] = { 1, 16, 24, 100, 1000, 1152, 4000, 30000, 60000 };

START_TEST(test_a_freed_block_is_the_next_one_of_its_class)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *a = dacce_alloc(sizes[i]), *b;

		ck_assert_ptr_nonnull(a);
		dacce_free(a);
		b = dacce_alloc(sizes[i]);
		ck_assert_ptr_eq(a, b);
		dacce_free(b);
	}
}
END_TEST

START_TEST(test_freed_blocks_go_back_to_their_own_classes)
{
	void *big = dacce_alloc_zeroed(16, 72), *small = dacce_alloc(32);

	dacce_free(big);
	dacce_free(small);
	ck_assert_ptr_eq(dacce_alloc(32), small);
	ck_assert_ptr_eq(dacce_alloc_zeroed(16, 72), big);
	dacce_free(big);
	dacce_free(small);
}
END_TEST

START_TEST(test_churn_reuses_a_bounded_set_of_blocks)
{
	enum { LIVE = 8, ROUNDS = 20000 };
	void *live[LIVE] = { 0 };
	uintptr_t lowest = UINTPTR_MAX, highest = 0;

	for (int r = 0; r < ROUNDS; r++) {
		int k = r % LIVE;
		uintptr_t p;

		dacce_free(live[k]);
		live[k] = dacce_alloc(sizes[r % 6]);
		ck_assert_ptr_nonnull(live[k]);
		memset(live[k], 0xab, sizes[r % 6]);
		if (r < LIVE * 6)
			continue; /* the first blocks of each class are carved */
		p = (uintptr_t)live[k];
		lowest = p < lowest ? p : lowest;
		highest = p > highest ? p : highest;
	}
	/* 20,000 blocks carved instead of reused span far more than a slab. */
	ck_assert_uint_lt(highest - lowest, 1u << 20);
	for (int k = 0; k < LIVE; k++)
		dacce_free(live[k]);
}
END_TEST

START_TEST(test_zero_byte_blocks_free_safely)
{
	void *a = dacce_alloc(0), *b = dacce_alloc(0), *c = dacce_alloc_zeroed(0, 8);

	dacce_free(a);
	dacce_free(b);
	dacce_free(c);
	ck_assert_ptr_eq(dacce_alloc(0), c);
	ck_assert_ptr_eq(dacce_alloc(0), b);
}
END_TEST

START_TEST(test_a_grown_block_leaves_its_old_one_to_the_class)
{
	char *p = dacce_alloc(100), *grown;
	void *again;

	memset(p, 7, 100);
	grown = dacce_realloc(p, 3000);
	ck_assert_ptr_nonnull(grown);
	ck_assert_ptr_ne(grown, p);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(grown[i], 7);
	again = dacce_alloc(100);
	ck_assert_ptr_eq(again, p);
	dacce_free(again);
	dacce_free(grown);
}
END_TEST

static Suite *alloc_suite(void)
{
	Suite *s = suite_create("rt_alloc");
	TCase *tc = tcase_create("heap");

	tcase_add_test(tc, test_a_freed_block_is_the_next_one_of_its_class);
	tcase_add_test(tc, test_freed_blocks_go_back_to_their_own_classes);
	tcase_add_test(tc, test_churn_reuses_a_bounded_set_of_blocks);
	tcase_add_test(tc, test_zero_byte_blocks_free_safely);
	tcase_add_test(tc, test_a_grown_block_leaves_its_old_one_to_the_class);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(alloc_suite());
}
