/* SPDX-License-Identifier: MIT */
/*
 * The runtime's own heap.  A re-encoding runs with every program thread
 * stopped wherever it was, possibly inside malloc with an arena locked:
 * memory the runtime allocates or frees then must not come from the
 * program's allocator.  The Makefile includes this header first in every
 * runtime object (and the core library's copy linked into libdacce.so)
 * except the few that exchange memory with other libraries (libdw frees,
 * realpath): their malloc and free stay glibc's.
 */
#ifndef DACCE_PRIVATE_ALLOC_H
#define DACCE_PRIVATE_ALLOC_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void *dacce_alloc(size_t size);
void *dacce_alloc_zeroed(size_t count, size_t size);
void *dacce_realloc(void *p, size_t size);
void dacce_free(void *p);
/* realloc whose bytes from old_size to size are zero (a growing array's new room). */
void *dacce_realloc_zeroed(void *p, size_t old_size, size_t size);
/* For pthread_atfork: the heap's lock is not left held in the child. */
void dacce_alloc_before_fork(void);
void dacce_alloc_after_fork(void);

#include "sort.h"

#ifndef DACCE_PRIVATE_ALLOC_IMPL
#define malloc(n) dacce_alloc(n)
#define calloc(n, s) dacce_alloc_zeroed(n, s)
#define realloc(p, n) dacce_realloc(p, n)
#define free(p) dacce_free(p)
/* glibc's sorts take their buffer from malloc (sort.h). */
#define qsort(b, n, s, c) dacce_qsort(b, n, s, c)
#define qsort_r(b, n, s, c, a) dacce_qsort_r(b, n, s, c, a)
#endif

#endif
