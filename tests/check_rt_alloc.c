// SPDX-License-Identifier: MIT
/*
 * The runtime's own heap (runtime/private_alloc.c): a freed block goes back
 * to the free list of its own size class and the next allocation of that
 * class takes it.  dacce_free read the block's class after writing the
 * free-list link over it, so every freed block landed in class 0 and was
 * never used again: the heap only grew (2 KiB for every thread started, a
 * third of CPython's start-up memory under the runtime), and freeing a
 * zero-byte block with class 0's list not empty wrote through the link as
 * an index.  Freeing a block twice, or memory it never handed out, ends
 * the process.
 * Under DACCE_HEAP_CHECK (run in a child that re-executes this program with
 * it set) a use after free or past a block's end faults on the spot and new
 * bytes read 0xa5.
 */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "private_alloc.h"

static const size_t sizes[] = { 1, 16, 24, 100, 1000, 1152, 4000, 30000, 60000 };

START_TEST(test_a_freed_block_is_the_next_one_of_its_class)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *a = dacce_alloc(sizes[i]), *b;

		ck_assert_ptr_nonnull(a);
		dacce_free(a);
		b = dacce_alloc(sizes[i]);
		ck_assert_ptr_eq(a, b);
		dacce_free(b);
	}
}
END_TEST

START_TEST(test_freed_blocks_go_back_to_their_own_classes)
{
	void *big = dacce_alloc_zeroed(16, 72), *small = dacce_alloc(32);

	dacce_free(big);
	dacce_free(small);
	ck_assert_ptr_eq(dacce_alloc(32), small);
	ck_assert_ptr_eq(dacce_alloc_zeroed(16, 72), big);
	dacce_free(big);
	dacce_free(small);
}
END_TEST

START_TEST(test_churn_reuses_a_bounded_set_of_blocks)
{
	enum { LIVE = 8, ROUNDS = 20000 };
	void *live[LIVE] = { 0 };
	uintptr_t lowest = UINTPTR_MAX, highest = 0;

	for (int r = 0; r < ROUNDS; r++) {
		int k = r % LIVE;
		uintptr_t p;

		dacce_free(live[k]);
		live[k] = dacce_alloc(sizes[r % 6]);
		ck_assert_ptr_nonnull(live[k]);
		memset(live[k], 0xab, sizes[r % 6]);
		if (r < LIVE * 6)
			continue; /* the first blocks of each class are carved */
		p = (uintptr_t)live[k];
		lowest = p < lowest ? p : lowest;
		highest = p > highest ? p : highest;
	}
	/* 20,000 blocks carved instead of reused span far more than a slab. */
	ck_assert_uint_lt(highest - lowest, 1u << 20);
	for (int k = 0; k < LIVE; k++)
		dacce_free(live[k]);
}
END_TEST

START_TEST(test_zero_byte_blocks_free_safely)
{
	void *a = dacce_alloc(0), *b = dacce_alloc(0), *c = dacce_alloc_zeroed(0, 8);

	dacce_free(a);
	dacce_free(b);
	dacce_free(c);
	ck_assert_ptr_eq(dacce_alloc(0), c);
	ck_assert_ptr_eq(dacce_alloc(0), b);
}
END_TEST

START_TEST(test_a_grown_block_leaves_its_old_one_to_the_class)
{
	char *p = dacce_alloc(100), *grown;
	void *again;

	memset(p, 7, 100);
	grown = dacce_realloc(p, 3000);
	ck_assert_ptr_nonnull(grown);
	ck_assert_ptr_ne(grown, p);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(grown[i], 7);
	again = dacce_alloc(100);
	ck_assert_ptr_eq(again, p);
	dacce_free(again);
	dacce_free(grown);
}
END_TEST

/* ------------------------------------------------------------------ misuse */

/* How a child running fn ended: its signal, or 0 if it returned. */
static int signal_of(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void free_twice(void)
{
	void *p = dacce_alloc(40);

	dacce_free(p);
	dacce_free(p);
}

/*
 * Memory the heap never handed out, as a block of glibc's malloc would be
 * (whose own header, or a sanitizer's, would make the test about them).
 */
static void free_foreign_memory(void)
{
	static uint64_t foreign[8];

	dacce_free(&foreign[2]);
}

START_TEST(test_freeing_twice_ends_the_process)
{
	ck_assert_int_eq(signal_of(free_twice), SIGABRT);
}
END_TEST

START_TEST(test_freeing_foreign_memory_ends_the_process)
{
	ck_assert_int_eq(signal_of(free_foreign_memory), SIGABRT);
}
END_TEST

/* ------------------------------------------------------------------ DACCE_HEAP_CHECK */

#define REQUIRE(cond)                                                            \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			_exit(1);                                                \
		}                                                                \
	} while (0)

static void checked_use_after_free(void)
{
	volatile char *p = dacce_alloc(100);

	p[0] = 1;
	dacce_free((void *)p);
	p[0] = 2;
}

static void checked_write_past_the_end(void)
{
	volatile char *p = dacce_alloc(100);

	p[111] = 1; /* rounded to 16: still the block's */
	p[112] = 1;
}

static void checked_bytes_and_moves(void)
{
	unsigned char *p = dacce_alloc(40), *z = dacce_alloc_zeroed(5, 8), *grown, *shrunk;
	void *seen[64];

	for (int i = 0; i < 40; i++)
		REQUIRE(p[i] == 0xa5 && z[i] == 0);
	memset(p, 7, 40);
	grown = dacce_realloc(p, 5000);
	REQUIRE(grown && grown != p);
	for (int i = 0; i < 40; i++)
		REQUIRE(grown[i] == 7);
	shrunk = dacce_realloc(grown, 10);
	REQUIRE(shrunk && shrunk != grown && shrunk[9] == 7);
	z = dacce_realloc_zeroed(z, 40, 80);
	for (int i = 0; i < 80; i++)
		REQUIRE(z[i] == 0);
	/* No address is handed out twice. */
	for (int i = 0; i < 64; i++) {
		seen[i] = dacce_alloc(24);
		dacce_free(seen[i]);
		for (int j = 0; j < i; j++)
			REQUIRE(seen[i] != seen[j]);
	}
}

static const struct {
	const char *name;
	void (*fn)(void);
} checked_cases[] = {
	{ "use-after-free", checked_use_after_free },
	{ "write-past-the-end", checked_write_past_the_end },
	{ "bytes-and-moves", checked_bytes_and_moves },
};

/* Runs the case in this program, executed again with DACCE_HEAP_CHECK=1; its signal or exit status. */
static int run_checked(const char *name)
{
	char *argv[] = { "check_rt_alloc", "--checked-case", (char *)name, NULL };
	/* A sanitizer's SEGV handler would turn the fault into an exit status. */
	char *envp[] = { "DACCE_HEAP_CHECK=1", "ASAN_OPTIONS=handle_segv=0", NULL };
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

START_TEST(test_checked_use_after_free_faults)
{
	ck_assert_int_eq(run_checked("use-after-free"), -SIGSEGV);
}
END_TEST

START_TEST(test_checked_write_past_the_end_faults)
{
	ck_assert_int_eq(run_checked("write-past-the-end"), -SIGSEGV);
}
END_TEST

START_TEST(test_checked_blocks_read_garbage_and_always_move)
{
	ck_assert_int_eq(run_checked("bytes-and-moves"), 0);
}
END_TEST

static Suite *alloc_suite(void)
{
	Suite *s = suite_create("rt_alloc");
	TCase *tc = tcase_create("heap");

	tcase_add_test(tc, test_a_freed_block_is_the_next_one_of_its_class);
	tcase_add_test(tc, test_freed_blocks_go_back_to_their_own_classes);
	tcase_add_test(tc, test_churn_reuses_a_bounded_set_of_blocks);
	tcase_add_test(tc, test_zero_byte_blocks_free_safely);
	tcase_add_test(tc, test_a_grown_block_leaves_its_old_one_to_the_class);
	tcase_add_test(tc, test_freeing_twice_ends_the_process);
	tcase_add_test(tc, test_freeing_foreign_memory_ends_the_process);
	suite_add_tcase(s, tc);
	tc = tcase_create("heap_check");
	tcase_add_test(tc, test_checked_use_after_free_faults);
	tcase_add_test(tc, test_checked_write_past_the_end_faults);
	tcase_add_test(tc, test_checked_blocks_read_garbage_and_always_move);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--checked-case") == 0) {
		for (size_t i = 0; i < sizeof(checked_cases) / sizeof(checked_cases[0]); i++)
			if (strcmp(argv[2], checked_cases[i].name) == 0) {
				checked_cases[i].fn();
				return 0;
			}
		return 2;
	}
	return run_suite(alloc_suite());
}
