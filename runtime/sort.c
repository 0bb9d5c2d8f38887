// SPDX-License-Identifier: MIT
#include "sort.h"

#include <stdint.h>
#include <string.h>

#include "private_alloc.h"

typedef int (*cmp_r_fn)(const void *, const void *, void *);

/* Sorts n elements of base, using tmp (room for n) to merge. */
static void merge_sort(char *base, char *tmp, size_t n, size_t size, cmp_r_fn cmp, void *arg)
{
	size_t half = n / 2;
	char *a, *a_end, *b, *b_end, *out;

	if (n < 2)
		return;
	merge_sort(base, tmp, half, size, cmp, arg);
	merge_sort(base + half * size, tmp, n - half, size, cmp, arg);
	a = base;
	a_end = b = base + half * size;
	b_end = base + n * size;
	out = tmp;
	while (a < a_end && b < b_end) {
		/* The first run's element first when equal: stable. */
		char **from = cmp(b, a, arg) < 0 ? &b : &a;

		memcpy(out, *from, size);
		*from += size;
		out += size;
	}
	/* What is left of the second run is in place already; the first's goes before it. */
	memcpy(out, a, (size_t)(a_end - a));
	out += a_end - a;
	memcpy(base, tmp, (size_t)(out - tmp));
}

/* Moves the element at i down to j (j < i), shifting those between up: one byte at a time. */
static void rotate_down(char *base, size_t size, size_t j, size_t i)
{
	for (size_t k = i; k > j; k--) {
		char *x = base + (k - 1) * size, *y = base + k * size;

		for (size_t byte = 0; byte < size; byte++) {
			char t = x[byte];

			x[byte] = y[byte];
			y[byte] = t;
		}
	}
}

/* No memory for the merge: insertion sort in place, stable too. */
static void insertion_sort(char *base, size_t n, size_t size, cmp_r_fn cmp, void *arg)
{
	for (size_t i = 1; i < n; i++) {
		size_t j = i;

		while (j > 0 && cmp(base + i * size, base + (j - 1) * size, arg) < 0)
			j--;
		if (j < i)
			rotate_down(base, size, j, i);
	}
}

void dacce_qsort_r(void *base, size_t n, size_t size, cmp_r_fn cmp, void *arg)
{
	char *tmp;

	if (n < 2 || size == 0 || n > SIZE_MAX / size)
		return;
	tmp = dacce_alloc(n * size);
	if (!tmp) {
		insertion_sort(base, n, size, cmp, arg);
		return;
	}
	merge_sort(base, tmp, n, size, cmp, arg);
	dacce_free(tmp);
}

struct plain_cmp {
	int (*cmp)(const void *, const void *);
};

static int call_plain(const void *a, const void *b, void *arg)
{
	return ((const struct plain_cmp *)arg)->cmp(a, b);
}

void dacce_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	struct plain_cmp plain = { cmp };

	dacce_qsort_r(base, n, size, call_plain, &plain);
}
