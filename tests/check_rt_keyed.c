// SPDX-License-Identifier: MIT
/*
 * runtime/keyed.c: records under address keys (the aio request blocks,
 * coroutine contexts and TLS blocks the runtime keeps state for): made
 * zeroed on first use, found again after the table grew and moved them,
 * absent keys not made by a lookup, removed ones gone and the others found.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>

#include "check_main.h"
#include "keyed.h"

struct record {
	uint64_t key_copy;
	uint32_t visits;
	char pad[20];
};

START_TEST(test_records_are_made_zeroed_and_found_again_after_growth)
{
	struct dacce_keyed table = DACCE_KEYED_INIT(sizeof(struct record));
	enum { KEYS = 5000 };

	for (uint64_t k = 0; k < KEYS; k++) {
		/* Addresses 16 apart, as the blocks of a program's array would be. */
		struct record *r = dacce_keyed_get(&table, 0x7f0000001000ull + 16 * k, true);

		ck_assert_ptr_nonnull(r);
		ck_assert_uint_eq(r->key_copy, 0);
		ck_assert_uint_eq(r->visits, 0);
		r->key_copy = k;
		r->visits = 1;
	}
	ck_assert_uint_eq(table.n, KEYS);
	for (uint64_t k = 0; k < KEYS; k++) {
		struct record *r = dacce_keyed_get(&table, 0x7f0000001000ull + 16 * k, true);

		ck_assert_uint_eq(r->key_copy, k);
		r->visits++;
	}
	ck_assert_uint_eq(table.n, KEYS); /* nothing made twice */
	for (uint64_t k = 0; k < KEYS; k++)
		ck_assert_uint_eq(((struct record *)dacce_keyed_get(&table, 0x7f0000001000ull + 16 * k,
								      false))->visits,
				  2);
}
END_TEST

START_TEST(test_a_lookup_without_make_makes_nothing)
{
	struct dacce_keyed table = DACCE_KEYED_INIT(sizeof(struct record));

	ck_assert_ptr_null(dacce_keyed_get(&table, 42, false));
	ck_assert_uint_eq(table.n, 0);
	ck_assert_ptr_nonnull(dacce_keyed_get(&table, 42, true));
	ck_assert_ptr_null(dacce_keyed_get(&table, 43, false));
	ck_assert_uint_eq(table.n, 1);
}
END_TEST

START_TEST(test_removed_records_go_and_the_rest_stay_found)
{
	struct dacce_keyed table = DACCE_KEYED_INIT(sizeof(struct record));
	enum { KEYS = 300 };

	for (uint64_t k = 0; k < KEYS; k++)
		((struct record *)dacce_keyed_get(&table, 1000 + k, true))->key_copy = k;
	/* Every third, the last one among them: each removal moves the last record into the hole. */
	for (uint64_t k = 0; k < KEYS; k += 3)
		ck_assert_int_eq(dacce_keyed_remove(&table, 1000 + k), 0);
	ck_assert_int_eq(dacce_keyed_remove(&table, 1000), -ENOENT);
	ck_assert_uint_eq(table.n, KEYS - KEYS / 3);
	for (uint64_t k = 0; k < KEYS; k++) {
		struct record *r = dacce_keyed_get(&table, 1000 + k, false);

		if (k % 3 == 0) {
			ck_assert_ptr_null(r);
		} else {
			ck_assert_ptr_nonnull(r);
			ck_assert_uint_eq(r->key_copy, k);
		}
	}
	for (uint32_t i = 0; i < table.n; i++) {
		uint64_t key;
		struct record *r = dacce_keyed_at(&table, i, &key);

		ck_assert_uint_eq(key, 1000 + r->key_copy);
	}
}
END_TEST

static Suite *keyed_suite(void)
{
	Suite *s = suite_create("rt_keyed");
	TCase *tc = tcase_create("records");

	tcase_add_test(tc, test_records_are_made_zeroed_and_found_again_after_growth);
	tcase_add_test(tc, test_a_lookup_without_make_makes_nothing);
	tcase_add_test(tc, test_removed_records_go_and_the_rest_stay_found);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(keyed_suite());
}
