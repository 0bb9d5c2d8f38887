// SPDX-License-Identifier: MIT
/*
 * The runtime's lock (runtime/lock.c) keeps two threads apart while glibc
 * believes the process has one (__libc_single_threaded set, as the runtime
 * sets it after starting its policy thread: runtime/single_thread.h).
 * glibc's default mutex then takes its lock word without an atomic
 * instruction, and both threads get in: the runtime's locks were such
 * mutexes.  Two threads add to counters under the lock; a lost update or
 * two holders at once fails the test.
 */
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/single_threaded.h>

#include "check_main.h"
#include "lock.h"

#define ROUNDS 2000000

static struct dacce_lock lock = DACCE_LOCK_INIT;
static long counter;
static int inside, overlaps;

static void *add(void *unused)
{
	(void)unused;
	for (int i = 0; i < ROUNDS; i++) {
		dacce_lock_acquire(&lock);
		if (__atomic_fetch_add(&inside, 1, __ATOMIC_RELAXED) != 0)
			overlaps++;
		counter++;
		__atomic_fetch_sub(&inside, 1, __ATOMIC_RELAXED);
		dacce_lock_release(&lock);
	}
	return NULL;
}

/* glibc's own flag, which its locks read (this program's is a copy: single_thread.c). */
static char *glibc_flag(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	char *flag = libc ? dlsym(libc, "__libc_single_threaded") : NULL;

	ck_assert_ptr_nonnull(flag);
	dlclose(libc);
	return flag;
}

START_TEST(test_two_threads_never_hold_it_at_once)
{
	char *flag = glibc_flag(), was = *flag;
	pthread_t other;

	ck_assert_int_eq(pthread_create(&other, NULL, add, NULL), 0);
	*flag = 1; /* what glibc sees under the runtime */
	add(NULL);
	ck_assert_int_eq(pthread_join(other, NULL), 0);
	*flag = was;
	ck_assert_int_eq(overlaps, 0);
	ck_assert_int_eq(counter, 2L * ROUNDS);
}
END_TEST

START_TEST(test_reset_frees_a_held_lock)
{
	struct dacce_lock l = DACCE_LOCK_INIT;

	dacce_lock_acquire(&l);
	dacce_lock_reset(&l); /* a fork child whose other thread held it */
	dacce_lock_acquire(&l);
	dacce_lock_release(&l);
	ck_assert_uint_eq(l.word, 0);
}
END_TEST

static Suite *lock_suite(void)
{
	Suite *s = suite_create("rt_lock");
	TCase *tc = tcase_create("lock");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_threads_never_hold_it_at_once);
	tcase_add_test(tc, test_reset_frees_a_held_lock);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lock_suite());
}
