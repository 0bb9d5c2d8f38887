// SPDX-License-Identifier: MIT
#include "patch_runs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "patch.h"

/*
 * Bytes one write may cover.  A write to program text costs per page it
 * touches, not per call: gcc's cc1 re-pointed 24,000 sites in an epoch with
 * 4,800 writes of runs up to 512 bytes (8.8 ms of its 20 ms stop) or 1,400
 * of runs up to 4 KiB (6.5 ms).  On the stack of the thread that installs
 * the epoch (the policy thread's).
 */
#define RUN_MAX 4096

int dacce_patch_runs_add(struct dacce_patch_runs *runs, uintptr_t addr, const void *bytes,
			 size_t len)
{
	struct dacce_patch_write *w;

	if (!runs || !bytes || len == 0 || len > DACCE_PATCH_RUN_BYTES)
		return -EINVAL;
	if (runs->n == runs->cap) {
		size_t cap = runs->cap ? 2 * runs->cap : 256;
		struct dacce_patch_write *grown = realloc(runs->writes, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		runs->writes = grown;
		runs->cap = cap;
	}
	w = &runs->writes[runs->n];
	*w = (struct dacce_patch_write){ .addr = addr, .order = (uint32_t)runs->n,
					 .len = (uint8_t)len };
	memcpy(w->bytes, bytes, len);
	runs->n++;
	return 0;
}

static int by_order(const void *a, const void *b)
{
	const struct dacce_patch_write *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

static int by_address(const void *a, const void *b)
{
	const struct dacce_patch_write *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Heapsort: the writes are sorted with the world stopped, and glibc's qsort
 * takes a buffer from malloc past 1 KiB, whose lock a parked thread may hold
 * (an epoch with 90 writes hung bash under jemalloc that way).  Keys are
 * unique (the order breaks ties), so an unstable sort is enough.
 */
typedef int (*write_cmp)(const void *, const void *);

static void swap_writes(struct dacce_patch_write *a, struct dacce_patch_write *b)
{
	struct dacce_patch_write t = *a;

	*a = *b;
	*b = t;
}

static void sift_down(struct dacce_patch_write *v, size_t root, size_t n, write_cmp cmp)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && cmp(&v[child], &v[child + 1]) < 0)
			child++;
		if (cmp(&v[root], &v[child]) >= 0)
			return;
		swap_writes(&v[root], &v[child]);
	}
}

static void sort_writes(struct dacce_patch_write *v, size_t n, write_cmp cmp)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(v, i, n, cmp);
	for (size_t end = n; end-- > 1;) {
		swap_writes(&v[0], &v[end]);
		sift_down(v, 0, end, cmp);
	}
}

int dacce_patch_runs_write(struct dacce_patch_runs *runs, int mem)
{
	uint8_t run[RUN_MAX + DACCE_PATCH_RUN_BYTES];
	size_t i = 0;
	int err = 0;

	sort_writes(runs->writes, runs->n, by_address);
	while (i < runs->n && !err) {
		uintptr_t start = runs->writes[i].addr, end = start;
		size_t last = i;

		/* The run: writes starting within RUN_MAX of start. */
		while (last < runs->n && runs->writes[last].addr - start < RUN_MAX) {
			uintptr_t w_end = runs->writes[last].addr + runs->writes[last].len;

			if (w_end > end)
				end = w_end;
			last++;
		}
		memcpy(run, (const void *)start, end - start);
		/* Overlapping writes land in the order they were gathered. */
		sort_writes(runs->writes + i, last - i, by_order);
		for (size_t k = i; k < last; k++)
			memcpy(run + (runs->writes[k].addr - start), runs->writes[k].bytes,
			       runs->writes[k].len);
		err = dacce_patch_mem_write(mem, start, run, end - start);
		i = last;
	}
	runs->n = 0;
	return err;
}

void dacce_patch_runs_fini(struct dacce_patch_runs *runs)
{
	if (!runs)
		return;
	free(runs->writes);
	memset(runs, 0, sizeof(*runs));
}
