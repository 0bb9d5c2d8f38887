// SPDX-License-Identifier: MIT
/*
 * The code cache places regions from a snapshot of the address space, not
 * from /proc/self/maps each time.  The snapshot goes stale whenever anyone
 * else maps or unmaps: a place it shows free may be taken (the region must
 * go elsewhere, never over the other mapping), and a place it shows taken
 * may have been freed (a window page must find it once the snapshot is old).
 * Also: the runtime's heap keeps a large block's bytes when it grows it, and
 * a piece of code that came out shorter than its room gives the rest back.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "codecache.h"
#include "private_alloc.h"

#define PAGE 4096ul
#define LANDING 16

/*
 * Eight free pages walled in by a reservation of ours, far below where
 * mmap(NULL) puts things (the code cache's writable views, the heap's
 * slabs), so that nothing but the test maps into them.
 */
static uintptr_t free_pages(void)
{
	for (uintptr_t at = (uintptr_t)1 << 40; at < (uintptr_t)1 << 46; at += (uintptr_t)1 << 36) {
		void *p = mmap((void *)at, 64 * PAGE, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p == MAP_FAILED)
			continue;
		munmap((uint8_t *)p + 28 * PAGE, 8 * PAGE);
		return (uintptr_t)p + 28 * PAGE;
	}
	ck_abort_msg("no room for the test's pages");
	return 0;
}

static void *foreign_page(uintptr_t at)
{
	void *p = mmap((void *)at, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);

	ck_assert_ptr_eq(p, (void *)at);
	return p;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000 };

	nanosleep(&ts, NULL);
}

START_TEST(test_window_page_lands_in_its_window)
{
	struct dacce_codecache cache;
	uintptr_t base = free_pages(), exec;
	uint8_t *write;

	dacce_codecache_init(&cache);
	/* A window that only page base+PAGE can hold. */
	ck_assert_int_eq(dacce_codecache_alloc_window(&cache, base + PAGE + 100, base + PAGE + 200,
						      LANDING, &exec, &write),
			 0);
	ck_assert_uint_ge(exec, base + PAGE + 100);
	ck_assert_uint_lt(exec, base + PAGE + 200);
	/* Written through one view, read through the other. */
	memset(write, 0x90, LANDING);
	ck_assert_uint_eq(*(volatile uint8_t *)exec, 0x90);
	ck_assert_int_eq(dacce_codecache_contains(&cache, exec), 1);
	dacce_codecache_fini(&cache);
}
END_TEST

START_TEST(test_mapping_made_since_the_snapshot_is_left_alone)
{
	struct dacce_codecache cache;
	uintptr_t base = free_pages(), exec;
	uint8_t *write;
	void *theirs;

	dacce_codecache_init(&cache);
	/* The first window page reads maps: base+PAGE and base+2*PAGE are free then. */
	ck_assert_int_eq(dacce_codecache_alloc_window(&cache, base + PAGE + 8, base + PAGE + 16,
						      LANDING, &exec, &write),
			 0);
	/* Someone maps base+2*PAGE; a window over it and the page after must use the page after. */
	theirs = foreign_page(base + 2 * PAGE);
	ck_assert_int_eq(dacce_codecache_alloc_window(&cache, base + 2 * PAGE, base + 4 * PAGE - 64,
						      LANDING, &exec, &write),
			 0);
	ck_assert_uint_ge(exec, base + 3 * PAGE);
	ck_assert_uint_eq(*(volatile uint8_t *)theirs, 0); /* still theirs, still mapped */
	munmap(theirs, PAGE);
	dacce_codecache_fini(&cache);
}
END_TEST

START_TEST(test_a_page_freed_since_the_snapshot_is_found_again)
{
	struct dacce_codecache cache;
	uintptr_t base = free_pages(), exec;
	uint8_t *write;
	void *theirs = foreign_page(base + 2 * PAGE);

	dacce_codecache_init(&cache);
	ck_assert_int_eq(dacce_codecache_alloc_window(&cache, base + 8, base + 16, LANDING, &exec,
						      &write),
			 0);
	/* The snapshot has base+2*PAGE taken: no room in a window that only it can hold. */
	ck_assert_int_eq(dacce_codecache_alloc_window(&cache, base + 2 * PAGE + 8,
						      base + 2 * PAGE + 16, LANDING, &exec, &write),
			 -ENOSPC);
	munmap(theirs, PAGE);
	/* Once the snapshot is old, a failed search reads maps again. */
	sleep_ms(120);
	ck_assert_int_eq(dacce_codecache_alloc_window(&cache, base + 2 * PAGE + 8,
						      base + 2 * PAGE + 16, LANDING, &exec, &write),
			 0);
	ck_assert_uint_ge(exec, base + 2 * PAGE + 8);
	dacce_codecache_fini(&cache);
}
END_TEST

START_TEST(test_region_near_code_is_in_reach)
{
	struct dacce_codecache cache;
	uintptr_t near = (uintptr_t)&free_pages, exec[3];
	uint8_t *write;

	dacce_codecache_init(&cache);
	for (int i = 0; i < 3; i++) {
		/* The second asks for more than a region: a region of its own. */
		size_t len = i == 1 ? 2 * DACCE_CODE_REGION_SIZE : 64;

		ck_assert_int_eq(dacce_codecache_alloc(&cache, near, near + 16, len, 16, &exec[i],
						       &write),
				 0);
		ck_assert_uint_lt(exec[i] > near ? exec[i] - near : near - exec[i], INT32_MAX);
		memset(write, 0xc3, len);
	}
	ck_assert_uint_ne(exec[0], exec[2]);
	dacce_codecache_fini(&cache);
}
END_TEST

/*
 * A region placed at the top of the highest free gap, where the kernel puts
 * a mapping made without an address: the region's writable view is such a
 * mapping, so it must be made after the region's address is claimed (made
 * before, it took that very place and every retry failed with EEXIST).
 */
START_TEST(test_region_in_the_gap_the_kernel_fills_first)
{
	size_t size = DACCE_CODE_REGION_SIZE + 4 * PAGE;
	struct dacce_codecache cache;
	void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t top, exec;
	uint8_t *write;

	ck_assert_ptr_ne(p, MAP_FAILED);
	top = (uintptr_t)p + size;
	munmap(p, size);
	dacce_codecache_init(&cache);
	ck_assert_int_eq(dacce_codecache_alloc(&cache, top - 64, top - 48, 64, 16, &exec, &write), 0);
	ck_assert_uint_lt(exec > top ? exec - top : top - exec, INT32_MAX);
	memset(write, 0xc3, 64);
	dacce_codecache_fini(&cache);
}
END_TEST

START_TEST(test_large_block_keeps_its_bytes_when_grown)
{
	size_t before = 200 * 1024, after = 3 * 1024 * 1024;
	uint8_t *p = dacce_alloc(before);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < before; i++)
		p[i] = (uint8_t)(i * 7);
	p = dacce_realloc(p, after);
	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < before; i++)
		ck_assert_uint_eq(p[i], (uint8_t)(i * 7));
	memset(p + before, 1, after - before); /* the new part is there to write */
	p = dacce_realloc(p, 100); /* shrinking keeps the block */
	ck_assert_uint_eq(p[1], 7);
	dacce_free(p);
}
END_TEST

START_TEST(test_trim_gives_back_only_the_last_piece)
{
	struct dacce_codecache cache;
	uintptr_t near = (uintptr_t)&free_pages, a, b, c, d;
	uint8_t *write;

	dacce_codecache_init(&cache);
	ck_assert_int_eq(dacce_codecache_alloc(&cache, near, near + 16, 320, 16, &a, &write), 0);
	memset(write, 0x90, 40);
	dacce_codecache_trim(&cache, a, 320, 40);
	ck_assert_int_eq(dacce_codecache_alloc(&cache, near, near + 16, 320, 16, &b, &write), 0);
	ck_assert_uint_eq(b, a + 48); /* 40 bytes used, the next piece 16-aligned after them */
	/* What was given back is still int3, and what a is kept is a's. */
	ck_assert_uint_eq(dacce_codecache_writable(&cache, a)[39], 0x90);
	ck_assert_uint_eq(write[0], 0xcc);
	ck_assert_int_eq(dacce_codecache_alloc(&cache, near, near + 16, 64, 16, &c, &write), 0);
	/* b is no longer the last piece: trimming it would give c's bytes away. */
	dacce_codecache_trim(&cache, b, 320, 16);
	ck_assert_int_eq(dacce_codecache_alloc(&cache, near, near + 16, 64, 16, &d, &write), 0);
	ck_assert_uint_eq(c, b + 320);
	ck_assert_uint_eq(d, c + 64);
	dacce_codecache_fini(&cache);
}
END_TEST

/*
 * Regions mapped out of address order are each found by address (the
 * sorted index), with the writable view of their own, and the pages between
 * and around them, and the last byte past each, are not the cache's.
 */
START_TEST(test_regions_are_found_by_address_in_any_order)
{
	static const int order[] = { 5, 1, 7, 3, 0, 6, 2, 4 };
	struct dacce_codecache cache;
	uintptr_t base = free_pages(), exec[8];
	uint8_t *write[8];

	dacce_codecache_init(&cache);
	/* Every other page of the eight free ones (0, 2, 4, 6), in a scrambled order. */
	for (int k = 0; k < 8; k++) {
		int i = order[k];

		if (i % 2)
			continue;
		ck_assert_int_eq(dacce_codecache_alloc_window(&cache, base + i * PAGE + 8,
							      base + i * PAGE + 9, LANDING,
							      &exec[i], &write[i]),
				 0);
		ck_assert_uint_eq(exec[i], base + i * PAGE + 8);
		write[i][0] = (uint8_t)(0x40 + i);
	}
	ck_assert_uint_eq(cache.n, 4);
	for (int i = 0; i < 8; i += 2) {
		long r = dacce_codecache_region_index(&cache, exec[i]);

		ck_assert_int_ge(r, 0);
		ck_assert_uint_eq(cache.regions[r].exec, base + i * PAGE);
		ck_assert_ptr_eq(dacce_codecache_writable(&cache, exec[i]), write[i]);
		ck_assert_uint_eq(*(volatile uint8_t *)exec[i], 0x40 + i);
		ck_assert_int_eq(dacce_codecache_contains(&cache, base + i * PAGE), 1);
		ck_assert_int_eq(dacce_codecache_contains(&cache, base + (i + 1) * PAGE - 1), 1);
		ck_assert_int_eq(dacce_codecache_contains(&cache, base + (i + 1) * PAGE), 0);
		ck_assert_int_eq(dacce_codecache_region_index(&cache, base + (i + 1) * PAGE), -1);
	}
	ck_assert_int_eq(dacce_codecache_contains(&cache, base - 1), 0);
	ck_assert_int_eq(dacce_codecache_contains(&cache, 0), 0);
	ck_assert_int_eq(dacce_codecache_contains(&cache, UINTPTR_MAX), 0);
	dacce_codecache_fini(&cache);
}
END_TEST

/* Whether p[from, to) is all zero. */
static bool zero_between(const uint8_t *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (p[i])
			return false;
	return true;
}

START_TEST(test_grown_room_is_zero)
{
	/* Sizes that stay small, go from small to large, and stay large. */
	static const size_t steps[] = { 24, 100, 5000, 300 * 1024, 2 * 1024 * 1024 + 10 };
	size_t size = 0;
	uint8_t *p = NULL;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		/* Dirty blocks for the heap to hand out again. */
		uint8_t *dirty = dacce_alloc(steps[i]);

		memset(dirty, 0xa5, steps[i]);
		dacce_free(dirty);
		p = dacce_realloc_zeroed(p, size, steps[i]);
		ck_assert_ptr_nonnull(p);
		ck_assert_msg(zero_between(p, size, steps[i]), "grown to %zu: new room not zero",
			      steps[i]);
		memset(p, 0x5a, steps[i]); /* all of it dirty before the next step */
		size = steps[i];
	}
	dacce_free(p);
}
END_TEST

static Suite *codecache_suite(void)
{
	Suite *s = suite_create("rt_codecache");
	TCase *tc = tcase_create("placement");

	tcase_add_test(tc, test_window_page_lands_in_its_window);
	tcase_add_test(tc, test_mapping_made_since_the_snapshot_is_left_alone);
	tcase_add_test(tc, test_a_page_freed_since_the_snapshot_is_found_again);
	tcase_add_test(tc, test_region_near_code_is_in_reach);
	tcase_add_test(tc, test_region_in_the_gap_the_kernel_fills_first);
	tcase_add_test(tc, test_large_block_keeps_its_bytes_when_grown);
	tcase_add_test(tc, test_trim_gives_back_only_the_last_piece);
	tcase_add_test(tc, test_grown_room_is_zero);
	tcase_add_test(tc, test_regions_are_found_by_address_in_any_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(codecache_suite());
}
