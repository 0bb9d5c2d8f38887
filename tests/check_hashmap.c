// SPDX-License-Identifier: MIT
/*
 * The open-addressing map, against a plain array as the reference: random
 * puts, removals and range removals (the runtime forgets an unloaded
 * library's addresses this way), every key looked up after each step.
 * Keys are drawn from a small set of addresses so that probe chains are
 * long and wrap around the table's end, which removal must keep whole.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "check_main.h"
#include "hashmap.h"

#define KEYS 512
#define STEPS 20000

struct reference {
	bool present[KEYS];
	uint32_t value[KEYS];
};

static uint64_t key_of(unsigned i)
{
	return 0x7f0000001000ULL + (uint64_t)i * 16;
}

static void check_all(const struct dacce_hashmap *map, const struct reference *ref)
{
	uint32_t count = 0;

	for (unsigned i = 0; i < KEYS; i++) {
		uint32_t value = 0;
		int err = dacce_hashmap_get(map, key_of(i), &value);

		if (ref->present[i]) {
			ck_assert_int_eq(err, 0);
			ck_assert_uint_eq(value, ref->value[i]);
			count++;
		} else {
			ck_assert_int_eq(err, -ENOENT);
		}
	}
	ck_assert_uint_eq(map->count, count);
}

START_TEST(test_random_puts_and_removals_match_the_reference)
{
	struct dacce_hashmap map;
	struct reference ref = { 0 };

	srand(12345);
	dacce_hashmap_init(&map);
	for (int step = 0; step < STEPS; step++) {
		unsigned i = (unsigned)rand() % KEYS, op = (unsigned)rand() % 10;

		if (op < 6) {
			uint32_t value = (uint32_t)rand();

			ck_assert_int_eq(dacce_hashmap_put(&map, key_of(i), value), 0);
			ref.present[i] = true;
			ref.value[i] = value;
		} else if (op < 9) {
			ck_assert_int_eq(dacce_hashmap_remove(&map, key_of(i)),
					 ref.present[i] ? 0 : -ENOENT);
			ref.present[i] = false;
		} else {
			unsigned span = (unsigned)rand() % 40, removed = 0;
			long n = dacce_hashmap_remove_range(&map, key_of(i), key_of(i + span));

			for (unsigned k = i; k < i + span && k < KEYS; k++) {
				removed += ref.present[k];
				ref.present[k] = false;
			}
			ck_assert_int_eq(n, (long)removed);
		}
		if (step % 50 == 0)
			check_all(&map, &ref);
	}
	check_all(&map, &ref);
	dacce_hashmap_fini(&map);
}
END_TEST

START_TEST(test_removing_from_an_empty_map)
{
	struct dacce_hashmap map;

	dacce_hashmap_init(&map);
	ck_assert_int_eq(dacce_hashmap_remove(&map, 42), -ENOENT);
	ck_assert_int_eq(dacce_hashmap_remove_range(&map, 0, UINT64_MAX), 0);
	ck_assert_int_eq(dacce_hashmap_put(&map, 42, 7), 0);
	ck_assert_int_eq(dacce_hashmap_remove_range(&map, 0, UINT64_MAX), 1);
	ck_assert_uint_eq(map.count, 0);
	ck_assert_int_eq(dacce_hashmap_put(&map, 42, 8), 0);
	ck_assert_int_eq(dacce_hashmap_remove(&map, 42), 0);
	ck_assert_int_eq(dacce_hashmap_remove(&map, 42), -ENOENT);
	dacce_hashmap_fini(&map);
}
END_TEST

static Suite *hashmap_suite(void)
{
	Suite *s = suite_create("hashmap");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_random_puts_and_removals_match_the_reference);
	tcase_add_test(tc, test_removing_from_an_empty_map);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(hashmap_suite());
}
