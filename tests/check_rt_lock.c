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

/*
 * The policy thread works in short holds, one after the other; a program
 * thread that waits for a first call must get in between two of them.
 * A releasing thread takes the lock back within nanoseconds, a woken one
 * runs microseconds later: without dacce_lock_let_in the waiter slept
 * through most of the worker's holds (gcc's cc1: up to 30 ms a first call).
 */
#define WORKER_HOLDS 50000
#define WAITS 50
/* 1 or 2 seen with it, up to 175 without */
#define HOLDS_WAITED_AT_MOST 16

static struct dacce_lock busy = DACCE_LOCK_INIT;
static long holds_done;

static void spin_a_while(void)
{
	for (volatile int i = 0; i < 2000; i++)
		;
}

static void *worker(void *unused)
{
	(void)unused;
	for (int i = 0; i < WORKER_HOLDS; i++) {
		dacce_lock_acquire(&busy);
		spin_a_while();
		__atomic_store_n(&holds_done, i + 1, __ATOMIC_RELAXED);
		if (dacce_lock_release(&busy))
			dacce_lock_let_in(&busy);
	}
	return NULL;
}

START_TEST(test_a_waiter_gets_in_between_short_holds)
{
	long worst = 0;
	pthread_t other;

	ck_assert_int_eq(pthread_create(&other, NULL, worker, NULL), 0);
	while (__atomic_load_n(&holds_done, __ATOMIC_RELAXED) < 100)
		;
	for (int round = 0; round < WAITS; round++) {
		long before = __atomic_load_n(&holds_done, __ATOMIC_RELAXED), waited;

		dacce_lock_acquire(&busy);
		waited = __atomic_load_n(&holds_done, __ATOMIC_RELAXED) - before;
		/* Told while it held: a waiter sleeps with the word at 2. */
		dacce_lock_release(&busy);
		if (waited > worst)
			worst = waited;
		if (__atomic_load_n(&holds_done, __ATOMIC_RELAXED) >= WORKER_HOLDS - 1000)
			break;
		for (int i = 0; i < 20; i++)
			spin_a_while();
	}
	ck_assert_int_eq(pthread_join(other, NULL), 0);
	ck_assert_msg(worst <= HOLDS_WAITED_AT_MOST, "a waiter slept through %ld holds", worst);
}
END_TEST

START_TEST(test_waited_for_tells_a_sleeping_waiter)
{
	struct dacce_lock l = DACCE_LOCK_INIT;

	dacce_lock_acquire(&l);
	ck_assert(!dacce_lock_waited_for(&l));
	l.word = 2; /* what a waiter writes before it sleeps */
	ck_assert(dacce_lock_waited_for(&l));
	ck_assert(dacce_lock_release(&l)); /* it wakes one */
	ck_assert(!dacce_lock_waited_for(&l));
	dacce_lock_acquire(&l);
	ck_assert(!dacce_lock_release(&l)); /* nobody to wake */
}
END_TEST

static Suite *lock_suite(void)
{
	Suite *s = suite_create("rt_lock");
	TCase *tc = tcase_create("lock");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_threads_never_hold_it_at_once);
	tcase_add_test(tc, test_reset_frees_a_held_lock);
	tcase_add_test(tc, test_a_waiter_gets_in_between_short_holds);
	tcase_add_test(tc, test_waited_for_tells_a_sleeping_waiter);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lock_suite());
}
