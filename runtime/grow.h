/* SPDX-License-Identifier: MIT */
/* Arrays that grow by doubling. */
#ifndef DACCE_RT_GROW_H
#define DACCE_RT_GROW_H

#include <errno.h>
#include <stdlib.h>

/* Makes *array (of *cap elements of size bytes) hold at least want: 0 or -ENOMEM (then unchanged). */
static inline int dacce_grow(void **array, size_t *cap, size_t want, size_t size)
{
	size_t cap2 = *cap ? *cap : 64;
	void *grown;

	if (want <= *cap)
		return 0;
	while (cap2 < want)
		cap2 *= 2;
	grown = realloc(*array, cap2 * size);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = cap2;
	return 0;
}

#endif
