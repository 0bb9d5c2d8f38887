// SPDX-License-Identifier: MIT
/*
 * Size classes of powers of two from 16 bytes to 64 KiB, each with a free
 * list, carved from 1 MiB slabs; larger blocks are their own mappings.  A
 * 16-byte header before each block says which.  One lock; whoever holds it
 * counts as running runtime code, so no re-encoding parks a thread holding it.
 */
#define DACCE_PRIVATE_ALLOC_IMPL
#include "private_alloc.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "thread_registry.h"

#define MIN_SHIFT 4
#define MAX_SHIFT 16
#define N_CLASSES (MAX_SHIFT - MIN_SHIFT + 1)
#define SLAB_SIZE (1u << 20)
#define HEADER 16
#define LARGE UINT64_MAX

struct header {
	uint64_t class_or_large; /* size class, or LARGE */
	uint64_t mapped;	 /* LARGE: bytes mapped, header included */
};

struct free_block {
	struct free_block *next;
};

static struct {
	pthread_mutex_t lock;
	struct free_block *free[N_CLASSES];
	uint8_t *slab;
	size_t slab_left;
} heap = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int class_of(size_t size)
{
	int c = 0;

	while (((size_t)1 << (MIN_SHIFT + c)) < size + HEADER)
		c++;
	return c;
}

static void *alloc_large(size_t size)
{
	size_t mapped = (size + HEADER + 4095) & ~(size_t)4095;
	struct header *h = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);

	if (h == MAP_FAILED)
		return NULL;
	h->class_or_large = LARGE;
	h->mapped = mapped;
	return (uint8_t *)h + HEADER;
}

static void *alloc_small(int c)
{
	size_t block = (size_t)1 << (MIN_SHIFT + c);
	struct header *h;

	if (heap.free[c]) {
		h = (struct header *)heap.free[c];
		heap.free[c] = heap.free[c]->next;
	} else {
		if (heap.slab_left < block) {
			void *slab = mmap(NULL, SLAB_SIZE, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (slab == MAP_FAILED)
				return NULL;
			heap.slab = slab;
			heap.slab_left = SLAB_SIZE;
		}
		h = (struct header *)heap.slab;
		heap.slab += block;
		heap.slab_left -= block;
	}
	h->class_or_large = (uint64_t)c;
	return (uint8_t *)h + HEADER;
}

void *dacce_alloc(size_t size)
{
	void *p;

	if (size > ((size_t)1 << MAX_SHIFT) - HEADER)
		return alloc_large(size);
	dacce_runtime_enter();
	pthread_mutex_lock(&heap.lock);
	p = alloc_small(class_of(size));
	pthread_mutex_unlock(&heap.lock);
	dacce_runtime_leave();
	return p;
}

static struct header *header_of(void *p)
{
	return (struct header *)((uint8_t *)p - HEADER);
}

static size_t usable(const struct header *h)
{
	if (h->class_or_large == LARGE)
		return h->mapped - HEADER;
	return ((size_t)1 << (MIN_SHIFT + h->class_or_large)) - HEADER;
}

void *dacce_alloc_zeroed(size_t count, size_t size)
{
	void *p;

	if (size && count > SIZE_MAX / size)
		return NULL;
	p = dacce_alloc(count * size);
	/* A large block is a mapping of its own: its pages are zero, and clearing them would touch them all. */
	if (p && header_of(p)->class_or_large != LARGE)
		memset(p, 0, count * size);
	return p;
}

void dacce_free(void *p)
{
	struct header *h;

	if (!p)
		return;
	h = header_of(p);
	if (h->class_or_large == LARGE) {
		munmap(h, h->mapped);
		return;
	}
	dacce_runtime_enter();
	pthread_mutex_lock(&heap.lock);
	((struct free_block *)h)->next = heap.free[h->class_or_large];
	heap.free[h->class_or_large] = (struct free_block *)h;
	pthread_mutex_unlock(&heap.lock);
	dacce_runtime_leave();
}

void *dacce_realloc(void *p, size_t size)
{
	struct header *h;
	void *grown;
	size_t have;

	if (!p)
		return dacce_alloc(size);
	h = header_of(p);
	have = usable(h);
	if (size <= have)
		return p;
	if (h->class_or_large == LARGE) {
		/* The kernel moves the pages: no copy, no fault on the new ones. */
		size_t mapped = (size + HEADER + 4095) & ~(size_t)4095;
		struct header *moved = mremap(h, h->mapped, mapped, MREMAP_MAYMOVE);

		if (moved == MAP_FAILED)
			return NULL;
		moved->mapped = mapped;
		return (uint8_t *)moved + HEADER;
	}
	grown = dacce_alloc(size);
	if (!grown)
		return NULL;
	memcpy(grown, p, have);
	dacce_free(p);
	return grown;
}

void *dacce_realloc_zeroed(void *p, size_t old_size, size_t size)
{
	size_t had = p ? usable(header_of(p)) : 0, dirty_end;
	uint8_t *grown = dacce_realloc(p, size);

	if (!grown || size <= old_size)
		return grown;
	/*
	 * Of a large block only what was usable before can hold old bytes: the
	 * pages past it are fresh (mremap, or a new mapping the old block was
	 * copied into).
	 */
	dirty_end = size;
	if (header_of(grown)->class_or_large == LARGE && had < size)
		dirty_end = had;
	if (dirty_end > old_size)
		memset(grown + old_size, 0, dirty_end - old_size);
	return grown;
}

void dacce_alloc_before_fork(void)
{
	pthread_mutex_lock(&heap.lock);
}

void dacce_alloc_after_fork(void)
{
	pthread_mutex_unlock(&heap.lock);
}
