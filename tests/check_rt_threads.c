// SPDX-License-Identifier: MIT
/*
 * The kernel's count of the process's threads (dacce_threads_in_process), on
 * which the policy thread decides whether patches take the int3 steps and
 * whether it is the last thread left: threads started and ended are counted
 * as they come and go, and a main thread gone by pthread_exit is still
 * counted (the policy thread only scans for zombies when two are left).
 */
#include <check.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "thread_registry.h"

#define WORKERS 5

static pthread_barrier_t started, release;

static void *waiting_worker(void *unused)
{
	(void)unused;
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&release);
	return NULL;
}

START_TEST(test_threads_are_counted_as_they_come_and_go)
{
	pthread_t workers[WORKERS];
	int before = dacce_threads_in_process();

	ck_assert_int_ge(before, 1);
	pthread_barrier_init(&started, NULL, WORKERS + 1);
	pthread_barrier_init(&release, NULL, WORKERS + 1);
	for (int i = 0; i < WORKERS; i++)
		ck_assert_int_eq(pthread_create(&workers[i], NULL, waiting_worker, NULL), 0);
	pthread_barrier_wait(&started);
	ck_assert_int_eq(dacce_threads_in_process(), before + WORKERS);
	pthread_barrier_wait(&release);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(workers[i], NULL);
	ck_assert_int_eq(dacce_threads_in_process(), before);
	pthread_barrier_destroy(&started);
	pthread_barrier_destroy(&release);
}
END_TEST

static pthread_t main_thread;

/* Waits for main's pthread_exit, then reports the count in its exit status. */
static void *outliving_worker(void *unused)
{
	(void)unused;
	pthread_join(main_thread, NULL);
	/* No exit handlers: a sanitizer's leak check would change the status. */
	_exit(dacce_threads_in_process());
}

START_TEST(test_main_gone_by_pthread_exit_is_still_counted)
{
	pid_t child = fork();
	int status;

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		pthread_t worker;

		main_thread = pthread_self();
		if (pthread_create(&worker, NULL, outliving_worker, NULL))
			_exit(100);
		pthread_exit(NULL);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 2);
}
END_TEST

static Suite *threads_suite(void)
{
	Suite *s = suite_create("rt_threads");
	TCase *tc = tcase_create("count");

	tcase_add_test(tc, test_threads_are_counted_as_they_come_and_go);
	tcase_add_test(tc, test_main_gone_by_pthread_exit_is_still_counted);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(threads_suite());
}
