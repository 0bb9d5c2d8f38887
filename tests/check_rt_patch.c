// SPDX-License-Identifier: MIT
/*
 * Patching a real call site of this program: the callee must see exactly
 * its native arguments and stack, the context block must hold the pushed
 * entry while it runs and be restored after, and threads running through the
 * site while it is rewritten back and forth must never notice.
 */
#include <check.h>
#include <stdbool.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "codecache.h"
#include "ops.h"
#include "patch.h"
#include "patch_runs.h"
#include "tls.h"
#include "tramp.h"

#define NOINLINE __attribute__((noinline, noipa))

/*
 * The program's allocator, counted while the flag is up: runs of writes go
 * out with the world stopped, when a parked thread may hold malloc's lock.
 * Not under ASan, whose allocator must see every block (the count stays 0).
 */
static atomic_int counting_mallocs;
static atomic_ulong mallocs;
#ifndef __SANITIZE_ADDRESS__
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

void *malloc(size_t size)
{
	if (atomic_load(&counting_mallocs))
		atomic_fetch_add(&mallocs, 1);
	return __libc_malloc(size);
}

void *calloc(size_t count, size_t size)
{
	if (atomic_load(&counting_mallocs))
		atomic_fetch_add(&mallocs, 1);
	return __libc_calloc(count, size);
}

void *realloc(void *p, size_t size)
{
	if (atomic_load(&counting_mallocs))
		atomic_fetch_add(&mallocs, 1);
	return __libc_realloc(p, size);
}

void free(void *p)
{
	__libc_free(p);
}
#endif

/* What the callee saw of the context block. */
static __thread uint64_t seen_id;
static __thread uint32_t seen_depth, seen_edge;
static __thread uintptr_t seen_stack_alignment;

static NOINLINE double callee(long a, long b, long c, long d, long e, long f, long g, long h,
			 double x, double y)
{
	struct dacce_tls *tls = dacce_tls_self();

	seen_id = tls->id;
	seen_depth = tls->cc_base ? (uint32_t)(tls->cc_top - tls->cc_base) : 0;
	seen_edge = seen_depth ? tls->cc_top[-1].edge : UINT32_MAX;
	seen_stack_alignment = (uintptr_t)__builtin_frame_address(0) % 16;
	return (double)(a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h) + x * y;
}

/* Two stack arguments, vector arguments, and work after the call (no tail call). */
static NOINLINE double caller(long base)
{
	return callee(base, 2, 3, 4, 5, 6, 7, 8, 1.5, 2.0) + 1.0;
}

static double native_result(long base)
{
	return (double)(base + 2 * 2 + 3 * 3 + 4 * 4 + 5 * 5 + 6 * 6 + 7 * 7 + 8 * 8) + 3.0 + 1.0;
}

/* The `call rel32` in caller that lands on callee. */
static uintptr_t find_call_site(void)
{
	const uint8_t *code = (const uint8_t *)(uintptr_t)&caller;

	for (int i = 0; i < 128; i++) {
		int32_t rel;

		if (code[i] != 0xe8)
			continue;
		memcpy(&rel, code + i + 1, sizeof(rel));
		if ((uintptr_t)(code + i + 5) + (intptr_t)rel == (uintptr_t)&callee)
			return (uintptr_t)(code + i);
	}
	return 0;
}

struct patched_site {
	struct dacce_codecache cache;
	uintptr_t site;
	uint8_t native[5], to_trampoline[5];
	struct dacce_cc_entry cc[64];
};

static void patched_site_init(struct patched_site *p, uint32_t edge, uint64_t reset_id)
{
	struct dacce_rt_op op = {
		.kind = DACCE_RT_OP_PUSH, .edge = edge, .compress = false, .reset_id = reset_id,
	};
	struct x86_buf b;
	uintptr_t exec;
	uint8_t *write;
	struct dacce_tls *tls = dacce_tls_self();

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(dacce_patch_init(), 0);
	p->site = find_call_site();
	ck_assert_msg(p->site != 0, "no call rel32 from caller to callee");
	memcpy(p->native, (const void *)p->site, 5);
	dacce_codecache_init(&p->cache);
	ck_assert_int_eq(dacce_codecache_alloc(&p->cache, p->site, p->site + 5,
					       DACCE_TRAMP_CALL_MAX, 16, &exec, &write), 0);
	uintptr_t entry, after_call;

	x86_init(&b, write, DACCE_TRAMP_CALL_MAX, exec);
	ck_assert_int_eq(dacce_tramp_build_call(&b, dacce_tls_tpoff(), &op, (uintptr_t)&callee,
						p->site + 5, &entry, &after_call), 0);
	ck_assert_int_eq(dacce_tramp_jmp_bytes(p->site, entry, p->to_trampoline), 0);
	tls->cc_base = tls->cc_top = p->cc;
	tls->id = 5;
	tls->reset_id = reset_id;
}

static void patched_site_fini(struct patched_site *p)
{
	struct dacce_patch back = {
		.addr = p->site, .bytes = p->native, .len = 5,
		.effect = DACCE_PATCH_CALL, .target = (uintptr_t)&callee, .return_to = p->site + 5,
	};

	ck_assert_int_eq(dacce_patch_apply(&back), 0);
	dacce_tls_self()->cc_base = dacce_tls_self()->cc_top = NULL;
	dacce_codecache_fini(&p->cache);
}

static struct dacce_patch to_trampoline(const struct patched_site *p)
{
	uintptr_t tramp = p->site + 5 + (uintptr_t)(intptr_t)(int32_t)(
		p->to_trampoline[1] | p->to_trampoline[2] << 8 | p->to_trampoline[3] << 16 |
		(uint32_t)p->to_trampoline[4] << 24);

	return (struct dacce_patch){
		.addr = p->site, .bytes = p->to_trampoline, .len = 5,
		.effect = DACCE_PATCH_JUMP, .target = tramp,
	};
}

START_TEST(test_patched_site_maintains_the_context)
{
	struct patched_site p;
	struct dacce_patch patch;
	struct dacce_tls *tls;

	patched_site_init(&p, 42, 1000);
	tls = dacce_tls_self();
	ck_assert(caller(1) == native_result(1));
	ck_assert_uint_eq(seen_depth, 0);
	ck_assert_uint_eq(seen_id, 5);

	patch = to_trampoline(&p);
	ck_assert_int_eq(dacce_patch_apply(&patch), 0);
	ck_assert_mem_eq((const void *)p.site, p.to_trampoline, 5);
	ck_assert(caller(10) == native_result(10));
	/* During the call: the entry <5, edge 42> and id = maxID + 1. */
	ck_assert_uint_eq(seen_depth, 1);
	ck_assert_uint_eq(seen_edge, 42);
	ck_assert_uint_eq(seen_id, 1000);
	ck_assert_uint_eq(seen_stack_alignment, 0);
	/* After it: restored. */
	ck_assert_uint_eq(tls->id, 5);
	ck_assert_ptr_eq(tls->cc_top, tls->cc_base);
	patched_site_fini(&p);
	ck_assert_mem_eq((const void *)p.site, p.native, 5);
	ck_assert(caller(3) == native_result(3));
}
END_TEST

static atomic_bool stop_racers;
static atomic_long racer_calls, racer_errors;

static void *racer(void *arg)
{
	struct dacce_cc_entry cc[64];
	struct dacce_tls *tls = dacce_tls_self();

	(void)arg;
	tls->cc_base = tls->cc_top = cc;
	tls->id = 9;
	tls->reset_id = 2000; /* as the site's push expects (see the test) */
	while (!atomic_load(&stop_racers)) {
		if (caller(7) != native_result(7) || tls->id != 9 || tls->cc_top != tls->cc_base)
			atomic_fetch_add(&racer_errors, 1);
		/* Inside the call the thread saw either the native or the patched site. */
		if (!(seen_depth == 0 && seen_id == 9) &&
		    !(seen_depth == 1 && seen_edge == 43 && seen_id == 2000))
			atomic_fetch_add(&racer_errors, 1);
		atomic_fetch_add(&racer_calls, 1);
	}
	tls->cc_base = tls->cc_top = NULL;
	return NULL;
}

/* Applies a patch at once, or as a queue of one (patch.h: what decoding a function does). */
static int apply_now(const struct dacce_patch *patch)
{
	return dacce_patch_apply(patch);
}

static int apply_queued(const struct dacce_patch *patch)
{
	int err;

	dacce_patch_queue_open();
	err = dacce_patch_submit(patch);
	return dacce_patch_queue_close() ?: err;
}

/* Two threads call through the site while it is rewritten back and forth 2,000 times. */
static void race_through_site(int (*apply)(const struct dacce_patch *))
{
	struct patched_site p;
	struct dacce_patch forth, back;
	pthread_t threads[2];

	patched_site_init(&p, 43, 2000);
	forth = to_trampoline(&p);
	back = (struct dacce_patch){
		.addr = p.site, .bytes = p.native, .len = 5,
		.effect = DACCE_PATCH_CALL, .target = (uintptr_t)&callee, .return_to = p.site + 5,
	};
	atomic_store(&stop_racers, false);
	atomic_store(&racer_calls, 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&threads[i], NULL, racer, NULL), 0);
	for (int i = 0; i < 2000; i++) {
		ck_assert_int_eq(apply(&forth), 0);
		ck_assert_int_eq(apply(&back), 0);
	}
	atomic_store(&stop_racers, true);
	for (int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	ck_assert_int_gt(atomic_load(&racer_calls), 0);
	ck_assert_int_eq(atomic_load(&racer_errors), 0);
	patched_site_fini(&p);
}

START_TEST(test_threads_racing_through_a_site_being_patched)
{
	race_through_site(apply_now);
}
END_TEST

/*
 * Sole-thread mode, but the writer is not the thread that runs the site (the
 * policy thread rebuilding dispatch code while the program runs): its patches
 * must still take the steps.  Written whole, a racer fetches the site half
 * written and jumps into the middle of nowhere.
 */
static int apply_from_another_thread(const struct dacce_patch *patch)
{
	int err;

	dacce_patch_sole_thread(true);
	dacce_patch_foreign_begin();
	err = dacce_patch_apply(patch);
	dacce_patch_foreign_end();
	dacce_patch_sole_thread(false);
	return err;
}

START_TEST(test_threads_racing_through_a_site_patched_by_a_foreign_writer)
{
	struct patched_site p;
	struct dacce_patch forth;
	unsigned long before;

	/* The steps, counted: trap byte, tail, first byte; a sole writer's patch is one write. */
	patched_site_init(&p, 43, 2000);
	forth = to_trampoline(&p);
	before = dacce_patch_writes();
	ck_assert_int_eq(apply_from_another_thread(&forth), 0);
	ck_assert_uint_eq(dacce_patch_writes() - before, 3);
	ck_assert_mem_eq((const void *)p.site, forth.bytes, 5);
	dacce_patch_sole_thread(true);
	before = dacce_patch_writes();
	ck_assert_int_eq(dacce_patch_apply(&forth), 0);
	ck_assert_uint_eq(dacce_patch_writes() - before, 1);
	dacce_patch_sole_thread(false);
	patched_site_fini(&p);
	race_through_site(apply_from_another_thread);
}
END_TEST

START_TEST(test_queued_patches_wait_for_the_outermost_close)
{
	struct patched_site p;
	struct dacce_patch forth;

	patched_site_init(&p, 44, 3000);
	forth = to_trampoline(&p);
	dacce_patch_queue_open();
	dacce_patch_queue_open();
	ck_assert_int_eq(dacce_patch_submit(&forth), 0);
	ck_assert_mem_eq((const void *)p.site, p.native, 5);
	ck_assert_int_eq(dacce_patch_queue_close(), 0);
	/* Still queued: the inner close does not apply. */
	ck_assert_mem_eq((const void *)p.site, p.native, 5);
	ck_assert(caller(2) == native_result(2));
	ck_assert_uint_eq(seen_depth, 0);
	ck_assert_int_eq(dacce_patch_queue_close(), 0);
	ck_assert_mem_eq((const void *)p.site, p.to_trampoline, 5);
	ck_assert(caller(2) == native_result(2));
	ck_assert_uint_eq(seen_depth, 1);
	ck_assert_uint_eq(seen_edge, 44);
	ck_assert_int_eq(dacce_patch_queue_close(), -EINVAL); /* not open */
	patched_site_fini(&p);
}
END_TEST

START_TEST(test_threads_racing_through_a_site_patched_from_a_queue)
{
	race_through_site(apply_queued);
}
END_TEST

/*
 * A queue is written in runs of nearby patches, the bytes between written
 * back as they were: patches close together, adjacent, far apart, across a
 * page boundary, of one byte; everything else on the pages must not move.
 */
static void patch_in_runs(bool sole)
{
	static const size_t at[] = { 16, 24, 40, 45, 300, 900, 4094, 5000, 5001, 8000 };
	size_t size = 8192;
	uint8_t *area = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *expect = malloc(size), *fill = malloc(size);
	uint8_t bytes[sizeof(at) / sizeof(at[0])][5];

	ck_assert_ptr_ne(area, MAP_FAILED);
	ck_assert_ptr_nonnull(expect);
	ck_assert_ptr_nonnull(fill);
	ck_assert_int_eq(dacce_patch_init(), 0);
	dacce_patch_sole_thread(sole);
	for (size_t i = 0; i < size; i++)
		fill[i] = (uint8_t)(i * 7 + 3);
	ck_assert_int_eq(dacce_patch_write_quiet((uintptr_t)area, fill, size), 0);
	memcpy(expect, fill, size);
	dacce_patch_queue_open();
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		/* 5001 follows the 1-byte patch at 5000. */
		size_t len = at[k] == 5000 ? 1 : 5;
		struct dacce_patch patch = {
			.addr = (uintptr_t)area + at[k], .bytes = bytes[k], .len = len,
			.effect = DACCE_PATCH_JUMP, .target = (uintptr_t)area,
		};

		for (size_t b = 0; b < len; b++)
			bytes[k][b] = (uint8_t)(0xe9 + k * 5 + b);
		memcpy(expect + at[k], bytes[k], len);
		ck_assert_int_eq(dacce_patch_submit(&patch), 0);
	}
	ck_assert_mem_eq(area, fill, size); /* nothing written before the close */
	ck_assert_int_eq(dacce_patch_queue_close(), 0);
	ck_assert_mem_eq(area, expect, size);
	dacce_patch_sole_thread(false);
	munmap(area, size);
	free(expect);
	free(fill);
}

START_TEST(test_queued_patches_written_in_runs_leave_the_bytes_between_alone)
{
	patch_in_runs(false);
}
END_TEST

/* With no other thread to run the code, patches are written whole: the same bytes in the end. */
/*
 * Writes gathered with the world stopped go out sorted, in runs: out of
 * order, overlapping (the later wins), adjacent, far apart, across a page.
 */
START_TEST(test_gathered_writes_land_in_runs)
{
	static const size_t at[] = { 900, 16, 20, 18, 4094, 8000, 40, 16 };
	size_t size = 8192;
	uint8_t *area = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *expect = malloc(size), *fill = malloc(size);
	struct dacce_patch_runs runs = { 0 };
	int mem;

	ck_assert_ptr_ne(area, MAP_FAILED);
	ck_assert_ptr_nonnull(expect);
	ck_assert_ptr_nonnull(fill);
	ck_assert_int_eq(dacce_patch_init(), 0);
	for (size_t i = 0; i < size; i++)
		fill[i] = (uint8_t)(i * 5 + 1);
	ck_assert_int_eq(dacce_patch_write_quiet((uintptr_t)area, fill, size), 0);
	memcpy(expect, fill, size);
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		uint8_t bytes[5];

		for (size_t b = 0; b < sizeof(bytes); b++)
			bytes[b] = (uint8_t)(0xa0 + k * 8 + b);
		memcpy(expect + at[k], bytes, sizeof(bytes));
		ck_assert_int_eq(dacce_patch_runs_add(&runs, (uintptr_t)area + at[k], bytes,
						      sizeof(bytes)),
				 0);
	}
	ck_assert_mem_eq(area, fill, size); /* nothing written yet */
	mem = dacce_patch_mem_open();
	ck_assert_int_ge(mem, -1);
	ck_assert_int_eq(dacce_patch_runs_write(&runs, mem), 0);
	if (mem >= 0)
		close(mem);
	ck_assert_mem_eq(area, expect, size);
	ck_assert_uint_eq(runs.n, 0);
	dacce_patch_runs_fini(&runs);
	munmap(area, size);
	free(expect);
	free(fill);
}
END_TEST

START_TEST(test_sole_thread_writes_whole_patches)
{
	patch_in_runs(true);
}
END_TEST

/*
 * With no other thread, a queue goes out in address order whatever the
 * order it was submitted in (a function's entry byte comes after its
 * sites): one write for patches close together.
 */
START_TEST(test_sole_thread_writes_out_of_order_in_one_run)
{
	static const size_t at[] = { 200, 40, 24, 16, 0 };
	uint8_t *area = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t expect[4096], bytes[sizeof(at) / sizeof(at[0])][5];
	unsigned long writes;

	ck_assert_ptr_ne(area, MAP_FAILED);
	ck_assert_int_eq(dacce_patch_init(), 0);
	dacce_patch_sole_thread(true);
	memset(expect, 0, sizeof(expect));
	dacce_patch_queue_open();
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		size_t len = at[k] == 0 ? 1 : 5;
		struct dacce_patch patch = { .addr = (uintptr_t)area + at[k], .bytes = bytes[k],
					     .len = len };

		for (size_t b = 0; b < len; b++)
			bytes[k][b] = (uint8_t)(0x40 + k * 5 + b);
		memcpy(expect + at[k], bytes[k], len);
		ck_assert_int_eq(dacce_patch_submit(&patch), 0);
	}
	ck_assert(dacce_patch_queue_covers((uintptr_t)area + 26));
	ck_assert(dacce_patch_queue_covers((uintptr_t)area));
	ck_assert(!dacce_patch_queue_covers((uintptr_t)area + 1));
	ck_assert(!dacce_patch_queue_covers((uintptr_t)area + 29));
	writes = dacce_patch_writes();
	ck_assert_int_eq(dacce_patch_queue_close(), 0);
	ck_assert_uint_eq(dacce_patch_writes() - writes, 1);
	ck_assert_mem_eq(area, expect, sizeof(expect));
	ck_assert(!dacce_patch_queue_covers((uintptr_t)area + 26));
	dacce_patch_sole_thread(false);
	munmap(area, 4096);
}
END_TEST

/* A read-only page, as program text is: writes reach it only through the runtime. */
static uint8_t *read_only_page(void)
{
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(page, MAP_FAILED);
	memset(page, 0x90, 4096);
	ck_assert_int_eq(mprotect(page, 4096, PROT_READ), 0);
	return page;
}

START_TEST(test_kept_descriptor_survives_the_program_closing_it)
{
	uint8_t *page = read_only_page();
	char path[] = "/tmp/dacce-patch-XXXXXX";
	int file = mkstemp(path);
	struct stat st;

	ck_assert_int_ge(file, 0);
	unlink(path);
	ck_assert_int_eq(dacce_patch_write_quiet((uintptr_t)page, "\x01", 1), 0);
	/* The program closes every descriptor, then reuses the numbers for a file of its own. */
	for (int fd = 3; fd < 1024; fd++)
		if (fd != file)
			close(fd);
	for (int fd = 500; fd < 540; fd++)
		ck_assert_int_eq(dup2(file, fd), fd);
	ck_assert_int_eq(dacce_patch_write_quiet((uintptr_t)page + 1, "\x02", 1), 0);
	ck_assert_int_eq(page[0], 1);
	ck_assert_int_eq(page[1], 2);
	/* Nothing was written into the program's file. */
	ck_assert_int_eq(fstat(file, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	for (int fd = 500; fd < 540; fd++)
		close(fd);
	close(file);
	dacce_patch_thread_exit();
	munmap(page, 4096);
}
END_TEST

START_TEST(test_fork_child_writes_its_own_memory)
{
	uint8_t *page = read_only_page();
	int status;
	pid_t child;

	ck_assert_int_eq(dacce_patch_write_quiet((uintptr_t)page, "\x01", 1), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		/* The kept descriptor names the parent's memory: the child must not use it. */
		int err = dacce_patch_write_quiet((uintptr_t)page, "\x07", 1);

		_exit(err == 0 && page[0] == 7 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(page[0], 1);
	dacce_patch_thread_exit();
	munmap(page, 4096);
}
END_TEST

/*
 * Thousands of writes, overlapping, in random order: they land as applied
 * one by one in the order gathered, and the sort allocates nothing (glibc's
 * qsort took a buffer from malloc, and an epoch hung bash under jemalloc).
 */
START_TEST(test_many_writes_sorted_without_malloc)
{
	const size_t size = 65536, n = 3000;
	uint8_t *area = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *expect = malloc(size);
	struct dacce_patch_runs runs = { 0 };
	unsigned seed = 5;
	int mem, err;

	ck_assert_ptr_ne(area, MAP_FAILED);
	ck_assert_ptr_nonnull(expect);
	ck_assert_int_eq(dacce_patch_init(), 0);
	memset(expect, 0, size);
	for (size_t k = 0; k < n; k++) {
		uint8_t bytes[DACCE_PATCH_RUN_BYTES];
		size_t at, len;

		seed = seed * 1103515245u + 12345u;
		at = (seed >> 8) % (size - DACCE_PATCH_RUN_BYTES);
		len = 1 + (seed >> 4) % DACCE_PATCH_RUN_BYTES;
		for (size_t b = 0; b < len; b++)
			bytes[b] = (uint8_t)(k * 7 + b + 1);
		memcpy(expect + at, bytes, len);
		ck_assert_int_eq(dacce_patch_runs_add(&runs, (uintptr_t)area + at, bytes, len), 0);
	}
	mem = dacce_patch_mem_open();
	ck_assert_int_ge(mem, -1);
	atomic_store(&mallocs, 0);
	atomic_store(&counting_mallocs, 1);
	err = dacce_patch_runs_write(&runs, mem);
	atomic_store(&counting_mallocs, 0);
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(atomic_load(&mallocs), 0);
	if (mem >= 0)
		close(mem);
	ck_assert_mem_eq(area, expect, size);
	dacce_patch_runs_fini(&runs);
	munmap(area, size);
	free(expect);
}
END_TEST

static Suite *patch_suite(void)
{
	Suite *s = suite_create("rt_patch");
	TCase *tc = tcase_create("live");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_patched_site_maintains_the_context);
	tcase_add_test(tc, test_threads_racing_through_a_site_being_patched);
	tcase_add_test(tc, test_queued_patches_wait_for_the_outermost_close);
	tcase_add_test(tc, test_threads_racing_through_a_site_patched_from_a_queue);
	tcase_add_test(tc, test_queued_patches_written_in_runs_leave_the_bytes_between_alone);
	tcase_add_test(tc, test_sole_thread_writes_out_of_order_in_one_run);
	tcase_add_test(tc, test_sole_thread_writes_whole_patches);
	tcase_add_test(tc, test_threads_racing_through_a_site_patched_by_a_foreign_writer);
	tcase_add_test(tc, test_gathered_writes_land_in_runs);
	tcase_add_test(tc, test_many_writes_sorted_without_malloc);
	tcase_add_test(tc, test_kept_descriptor_survives_the_program_closing_it);
	tcase_add_test(tc, test_fork_child_writes_its_own_memory);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(patch_suite());
}
