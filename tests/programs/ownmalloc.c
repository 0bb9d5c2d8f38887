// SPDX-License-Identifier: MIT
/*
 * A program with an allocator of its own (as programs linked with jemalloc
 * or mimalloc have): its malloc, free, calloc, realloc and the aligned ones
 * win over libc's for every module, the runtime and the libraries it uses
 * included.  The allocator's functions are instrumented program code, reached
 * from the program, from libc (stdio's buffers, thread start-up) and from
 * anything in the runtime that allocates with them.  The program must run as
 * natively, with exact contexts at every probe, from several threads, while
 * its allocator is called from everywhere.
 */
#include "probe.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define NOINLINE __attribute__((noinline))
#define ARENA_CHUNK (64u << 20)
#define ALIGNMENT 16

/* Each block: its size in the 16 bytes before it. */
struct header {
	size_t size;
	size_t pad;
};

static char *arena_next, *arena_end;
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long allocations;

NOINLINE static int arena_grow(size_t need)
{
	size_t len = need > ARENA_CHUNK ? need : ARENA_CHUNK;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -ENOMEM;
	arena_next = p;
	arena_end = arena_next + len;
	return 0;
}

/* A block of size bytes whose start is aligned to align (a power of two, at least 16). */
NOINLINE static void *arena_take(size_t size, size_t align)
{
	uintptr_t start;
	char *block = NULL;

	if (size > SIZE_MAX / 2)
		return NULL;
	pthread_mutex_lock(&arena_lock);
	for (int round = 0; round < 2 && !block; round++) {
		start = ((uintptr_t)arena_next + sizeof(struct header) + align - 1) & ~(align - 1);
		if (arena_next && start + size <= (uintptr_t)arena_end) {
			block = (char *)start;
			arena_next = block + ((size + ALIGNMENT - 1) & ~(size_t)(ALIGNMENT - 1));
		} else if (arena_grow(size + align + sizeof(struct header)) != 0) {
			break;
		}
	}
	if (block) {
		((struct header *)block)[-1].size = size;
		allocations++;
	}
	pthread_mutex_unlock(&arena_lock);
	if (!block)
		errno = ENOMEM;
	return block;
}

void *malloc(size_t size)
{
	return arena_take(size, ALIGNMENT);
}

void free(void *p)
{
	(void)p; /* a bump allocator: memory is not reused */
}

void *calloc(size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = arena_take(n * size, ALIGNMENT);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void *realloc(void *old, size_t size)
{
	void *p = arena_take(size, ALIGNMENT);
	size_t had;

	if (p && old) {
		had = ((struct header *)old)[-1].size;
		memcpy(p, old, had < size ? had : size);
	}
	return p;
}

static size_t fit_alignment(size_t align)
{
	return align < ALIGNMENT ? ALIGNMENT : align;
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (align & (align - 1) || align % sizeof(void *))
		return EINVAL;
	p = arena_take(size, fit_alignment(align));
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	return align & (align - 1) ? NULL : arena_take(size, fit_alignment(align));
}

void *memalign(size_t align, size_t size)
{
	return aligned_alloc(align, size);
}

size_t malloc_usable_size(void *p)
{
	return p ? ((struct header *)p)[-1].size : 0;
}

/* ------------------------------------------------------------ the program */

NOINLINE static char *make_words(int depth)
{
	char *s;

	if (depth == 0) {
		s = strdup("leaf"); /* libc's strdup, calling our malloc */
		probe("words-leaf");
		return s;
	}
	s = make_words(depth - 1);
	s = realloc(s, strlen(s) + 8);
	strcat(s, depth % 2 ? "-odd" : "-even");
	probe("words-up");
	return s;
}

static int by_value(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

NOINLINE static int sorted_sum(int n)
{
	int *v = calloc((size_t)n, sizeof(*v)), sum = 0;
	void *aligned = NULL;

	for (int i = 0; i < n; i++)
		v[i] = (i * 7919) % n;
	qsort(v, (size_t)n, sizeof(*v), by_value);
	if (posix_memalign(&aligned, 64, 256) == 0 && ((uintptr_t)aligned & 63) == 0)
		sum += 1;
	for (int i = 0; i < n; i++)
		sum += v[i] == i;
	probe("sorted");
	free(v);
	return sum;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len); /* stdio allocating through our realloc */

	for (int i = 0; i < 200; i++)
		fprintf(mem, "%ld:%d ", id, i);
	fclose(mem);
	probe("worker");
	free(make_words(3));
	return (void *)(long)(len > 0 && sorted_sum(500) == 501);
}

int main(void)
{
	pthread_t threads[3];
	void *ok;
	int good = 0;
	char *words = make_words(5);

	printf("%s %d\n", words, sorted_sum(1000));
	for (long i = 0; i < 3; i++)
		pthread_create(&threads[i], NULL, worker, (void *)i);
	for (int i = 0; i < 3; i++)
		if (pthread_join(threads[i], &ok) == 0 && ok)
			good++;
	printf("threads ok: %d, allocations made: %s\n", good, allocations > 20 ? "many" : "few");
	return 0;
}
