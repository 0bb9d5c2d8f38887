// SPDX-License-Identifier: MIT
/*
 * Size classes of powers of two from 16 bytes to 64 KiB, each with a free
 * list, carved from 1 MiB slabs; larger blocks are their own mappings.  A
 * 16-byte header before each block says which, and carries a mark that
 * tells a live block from a freed one and from memory this heap never
 * handed out: freeing either ends the process with a message (a block of
 * glibc's freed here would otherwise be handed out twice).  One lock;
 * whoever holds it counts as running runtime code, so no re-encoding parks
 * a thread holding it.
 *
 * DACCE_HEAP_CHECK=1 gives every block pages of its own that end at an
 * inaccessible page, makes a freed block inaccessible for good and fills a
 * new one (but calloc's) with 0xa5: a use after free or past the end faults
 * where it happens, and a field read before it is written reads garbage
 * rather than the zero a fresh page gives (slow; for finding bugs).
 */
#define DACCE_PRIVATE_ALLOC_IMPL
#include "private_alloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "env.h"
#include "lock.h"
#include "rt_state.h"
#include "thread_registry.h"

#define MIN_SHIFT 4
#define MAX_SHIFT 16
#define N_CLASSES (MAX_SHIFT - MIN_SHIFT + 1)
#define SLAB_SIZE (1u << 20)
#define HEADER 16
#define PAGE 4096
#define LIVE_MARK 0xdacce11eu
#define FREED_MARK 0xdacce0ffu
#define KIND_LARGE UINT32_MAX	    /* a mapping of its own */
#define KIND_CHECKED (UINT32_MAX - 1) /* DACCE_HEAP_CHECK's pages */

struct header {
	uint32_t mark; /* LIVE_MARK or FREED_MARK */
	uint32_t kind; /* size class, KIND_LARGE or KIND_CHECKED */
	union {
		uint64_t mapped;	 /* large and checked: bytes mapped, header included */
		struct header *next_free; /* small, freed: its class's free list */
	};
};

static struct {
	struct dacce_lock lock;
	struct header *free[N_CLASSES];
	uint8_t *slab;
	size_t slab_left;
} heap = { .lock = DACCE_LOCK_INIT };

static void lock_heap(void)
{
	dacce_runtime_enter();
	dacce_lock_acquire(&heap.lock);
}

static void unlock_heap(void)
{
	dacce_lock_release(&heap.lock);
	dacce_runtime_leave();
}

static struct header *header_of(void *p)
{
	return (struct header *)((uint8_t *)p - HEADER);
}

static void *block_of(struct header *h, uint32_t kind)
{
	h->mark = LIVE_MARK;
	h->kind = kind;
	return (uint8_t *)h + HEADER;
}

/* ------------------------------------------------------------------ DACCE_HEAP_CHECK */

/* Read at the first allocation: 1 on, 0 off, -1 not read yet. */
static int heap_check = -1;

static bool checking(void)
{
	if (heap_check < 0) {
		const char *v = dacce_env("DACCE_HEAP_CHECK");

		heap_check = v && *v && strcmp(v, "0") != 0;
	}
	return heap_check;
}

/*
 * Checked blocks are carved from one reservation, never mapped one by one:
 * the kernel would put such mappings in the gaps near code where the code
 * cache looks for room (between its reading /proc/self/maps and mapping the
 * place it found), and no address of the reservation is handed out twice.
 * A block: [header][bytes] placed so the bytes (rounded to 16) end where a
 * page that stays PROT_NONE begins.  mapped counts that guard page.
 */
#define CHECK_ARENA_SIZE ((size_t)1 << 38)

static struct {
	uint8_t *start, *next, *end;
} check_arena;

static void *alloc_checked(size_t size, bool zero)
{
	size_t rounded = (size + 15) & ~(size_t)15;
	size_t body = (rounded + HEADER + PAGE - 1) & ~(size_t)(PAGE - 1);
	uint8_t *base = NULL;
	struct header *h;

	lock_heap();
	if (!check_arena.start) {
		void *arena = mmap(NULL, CHECK_ARENA_SIZE, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (arena != MAP_FAILED) {
			check_arena.start = check_arena.next = arena;
			check_arena.end = check_arena.start + CHECK_ARENA_SIZE;
		}
	}
	if (check_arena.start && (size_t)(check_arena.end - check_arena.next) >= body + PAGE) {
		base = check_arena.next;
		check_arena.next += body + PAGE;
	}
	unlock_heap();
	if (!base || mprotect(base, body, PROT_READ | PROT_WRITE))
		return NULL;
	h = (struct header *)(base + body - rounded - HEADER);
	h->mapped = body + PAGE;
	if (!zero)
		memset((uint8_t *)h + HEADER, 0xa5, rounded);
	return block_of(h, KIND_CHECKED);
}

static uint8_t *checked_base(const struct header *h)
{
	return (uint8_t *)((uintptr_t)h & ~(uintptr_t)(PAGE - 1));
}

/* Never handed out again: the address stays a trap for whoever still holds it. */
static void free_checked(struct header *h)
{
	if ((uint8_t *)h < check_arena.start || (uint8_t *)h >= check_arena.next)
		rt_fatal("freeing a block the runtime's heap did not allocate", EINVAL);
	mprotect(checked_base(h), h->mapped - PAGE, PROT_NONE);
}

/* ------------------------------------------------------------------ the heap */

static int class_of(size_t size)
{
	int c = 0;

	while (((size_t)1 << (MIN_SHIFT + c)) < size + HEADER)
		c++;
	return c;
}

static void *alloc_large(size_t size)
{
	size_t mapped = (size + HEADER + PAGE - 1) & ~(size_t)(PAGE - 1);
	struct header *h = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);

	if (h == MAP_FAILED)
		return NULL;
	h->mapped = mapped;
	return block_of(h, KIND_LARGE);
}

static void *alloc_small(int c)
{
	size_t block = (size_t)1 << (MIN_SHIFT + c);
	struct header *h;

	if (heap.free[c]) {
		h = heap.free[c];
		heap.free[c] = h->next_free;
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
	return block_of(h, (uint32_t)c);
}

void *dacce_alloc(size_t size)
{
	void *p;

	if (checking())
		return alloc_checked(size, false);
	if (size > ((size_t)1 << MAX_SHIFT) - HEADER)
		return alloc_large(size);
	lock_heap();
	p = alloc_small(class_of(size));
	unlock_heap();
	return p;
}

static size_t usable(const struct header *h)
{
	if (h->kind == KIND_LARGE)
		return h->mapped - HEADER;
	if (h->kind == KIND_CHECKED)
		return (size_t)(checked_base(h) + h->mapped - PAGE - ((const uint8_t *)h + HEADER));
	return ((size_t)1 << (MIN_SHIFT + h->kind)) - HEADER;
}

void *dacce_alloc_zeroed(size_t count, size_t size)
{
	void *p;

	if (size && count > SIZE_MAX / size)
		return NULL;
	if (checking())
		return alloc_checked(count * size, true);
	p = dacce_alloc(count * size);
	/* A large block is a mapping of its own: its pages are zero, and clearing them would touch them all. */
	if (p && header_of(p)->kind != KIND_LARGE)
		memset(p, 0, count * size);
	return p;
}

void dacce_free(void *p)
{
	struct header *h;

	if (!p)
		return;
	h = header_of(p);
	if (h->mark != LIVE_MARK)
		rt_fatal(h->mark == FREED_MARK ? "freeing a block of the runtime's heap twice"
					       : "freeing a block the runtime's heap did not allocate",
			 EINVAL);
	if (h->kind == KIND_LARGE) {
		munmap(h, h->mapped);
		return;
	}
	if (h->kind == KIND_CHECKED) {
		free_checked(h);
		return;
	}
	if (h->kind >= N_CLASSES)
		rt_fatal("freeing a block the runtime's heap did not allocate", EINVAL);
	lock_heap();
	h->mark = FREED_MARK;
	h->next_free = heap.free[h->kind];
	heap.free[h->kind] = h;
	unlock_heap();
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
	/* A checked block always moves: a pointer kept to the old one faults. */
	if (size <= have && h->kind != KIND_CHECKED)
		return p;
	if (h->kind == KIND_LARGE) {
		/* The kernel moves the pages: no copy, no fault on the new ones. */
		size_t mapped = (size + HEADER + PAGE - 1) & ~(size_t)(PAGE - 1);
		struct header *moved = mremap(h, h->mapped, mapped, MREMAP_MAYMOVE);

		if (moved == MAP_FAILED)
			return NULL;
		moved->mapped = mapped;
		return (uint8_t *)moved + HEADER;
	}
	grown = dacce_alloc(size);
	if (!grown)
		return NULL;
	memcpy(grown, p, have < size ? have : size);
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
	if (header_of(grown)->kind == KIND_LARGE && had < size)
		dirty_end = had;
	if (dirty_end > old_size)
		memset(grown + old_size, 0, dirty_end - old_size);
	return grown;
}

void dacce_alloc_before_fork(void)
{
	dacce_lock_acquire(&heap.lock);
}

void dacce_alloc_after_fork(void)
{
	dacce_lock_release(&heap.lock);
}
