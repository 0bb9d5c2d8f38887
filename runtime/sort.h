/* SPDX-License-Identifier: MIT */
/*
 * qsort and qsort_r for the runtime and its copy of the core library
 * (private_alloc.h puts these in their place).  glibc's take their buffer
 * from malloc, which the runtime must not call: a re-encoding sorts while
 * the program's threads may be stopped inside malloc, and the policy thread
 * sorts beside a program thread that glibc believes alone (single_thread.h),
 * whose malloc then takes no lock.  A stable merge sort, as glibc's is when
 * it gets its buffer, so the order of equal elements is the same.
 */
#ifndef DACCE_RT_SORT_H
#define DACCE_RT_SORT_H

#include <stddef.h>

void dacce_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void dacce_qsort_r(void *base, size_t n, size_t size,
		   int (*cmp)(const void *, const void *, void *), void *arg);

#endif
