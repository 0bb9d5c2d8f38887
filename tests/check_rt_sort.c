// SPDX-License-Identifier: MIT
/*
 * The runtime's sorts (runtime/sort.c), which take their buffer from the
 * runtime's heap instead of malloc: each result equals glibc's qsort's
 * (a stable merge sort whenever it gets its buffer) element for element,
 * equal keys in their first order, for every size from 0 to 700 and element
 * sizes of 1, 4, 12 and 40 bytes; qsort_r passes its argument through.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "sort.h"

struct wide {
	uint32_t key, order;
	uint8_t pad[32];
};

static int by_first_byte(const void *a, const void *b)
{
	return (int)*(const uint8_t *)a % 7 - (int)*(const uint8_t *)b % 7;
}

static int by_key_mod(const void *a, const void *b, void *arg)
{
	uint32_t m = *(const uint32_t *)arg;

	return (int)(*(const uint32_t *)a % m) - (int)(*(const uint32_t *)b % m);
}

static int by_key_mod_5(const void *a, const void *b)
{
	uint32_t m = 5;

	return by_key_mod(a, b, &m);
}

static void fill(uint8_t *p, size_t bytes, unsigned seed)
{
	for (size_t i = 0; i < bytes; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static void same_as_glibc(size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	uint8_t *ours = malloc(n * size + 1), *theirs = malloc(n * size + 1);

	fill(ours, n * size, (unsigned)(n * 31 + size));
	if (size == sizeof(struct wide))
		for (size_t i = 0; i < n; i++)
			((struct wide *)ours)[i].order = (uint32_t)i; /* tells equal keys apart */
	memcpy(theirs, ours, n * size);
	dacce_qsort(ours, n, size, cmp);
	qsort(theirs, n, size, cmp);
	ck_assert_msg(memcmp(ours, theirs, n * size) == 0, "%zu elements of %zu bytes differ", n, size);
	free(ours);
	free(theirs);
}

START_TEST(test_results_equal_glibc_qsort)
{
	for (size_t n = 0; n <= 700; n += n < 40 ? 1 : 37) {
		same_as_glibc(n, 1, by_first_byte);
		same_as_glibc(n, 4, by_key_mod_5);
		same_as_glibc(n, 12, by_key_mod_5);
		same_as_glibc(n, sizeof(struct wide), by_key_mod_5);
	}
}
END_TEST

START_TEST(test_equal_keys_keep_their_order)
{
	struct wide v[500];
	uint32_t m = 3;

	fill((uint8_t *)v, sizeof(v), 7);
	for (uint32_t i = 0; i < 500; i++)
		v[i].order = i;
	dacce_qsort_r(v, 500, sizeof(v[0]), by_key_mod, &m);
	for (size_t i = 1; i < 500; i++) {
		ck_assert_uint_le(v[i - 1].key % 3, v[i].key % 3);
		if (v[i - 1].key % 3 == v[i].key % 3)
			ck_assert_uint_lt(v[i - 1].order, v[i].order);
	}
}
END_TEST

static Suite *sort_suite(void)
{
	Suite *s = suite_create("rt_sort");
	TCase *tc = tcase_create("sort");

	tcase_add_test(tc, test_results_equal_glibc_qsort);
	tcase_add_test(tc, test_equal_keys_keep_their_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(sort_suite());
}
