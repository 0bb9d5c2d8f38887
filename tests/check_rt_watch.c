// SPDX-License-Identifier: MIT
/*
 * What the policy thread reads of the process at every wake-up
 * (runtime/watch.c) through descriptors kept open (runtime/keptfd.c): once
 * opened, reading opens nothing (a program that just closed a number must
 * find it free), the descriptors sit at 512 or above, a fork child reads its
 * own process and not its parent's, a program that closed ours and took the
 * number for a file of its own keeps its file untouched, and a main thread
 * gone by pthread_exit is seen as gone.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "keptfd.h"
#include "watch.h"

#define FILLED_BELOW 64

static pthread_barrier_t started, release;

static void *waiting_worker(void *unused)
{
	(void)unused;
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&release);
	return NULL;
}

/* Runs FN in a child process and returns its exit status (-1 when it did not exit). */
static int in_child(int (*fn)(void))
{
	pid_t child = fork();
	int status;

	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(fn());
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Every number below FILLED_BELOW taken, and no more allowed: any open
 * fails with EMFILE.  The watch's reads must all succeed.
 */
static int reads_without_opening(void)
{
	struct rlimit none = { FILLED_BELOW, FILLED_BELOW };
	int threads, fd;

	dacce_watch_open();
	while ((fd = open("/dev/null", O_RDONLY)) >= 0 && fd < FILLED_BELOW - 1)
		;
	if (setrlimit(RLIMIT_NOFILE, &none) != 0)
		return 10;
	if (open("/dev/null", O_RDONLY) != -1)
		return 11; /* the test's own premise */
	for (int i = 0; i < 100; i++) {
		threads = dacce_watch_threads();
		if (threads != 1)
			return 12;
		if (dacce_watch_alone(threads))
			return 13; /* the main thread is right here */
	}
	return 0;
}

START_TEST(test_reading_opens_no_descriptor)
{
	ck_assert_int_eq(in_child(reads_without_opening), 0);
}
END_TEST

/* The numbers the watch holds: everything at DACCE_KEPT_FD_FLOOR or above that names /proc. */
static int kept_at_floor_or_above(void)
{
	struct stat proc, st;
	int below = 0, above = 0;

	if (stat("/proc/self", &proc) != 0)
		return 20;
	dacce_watch_open();
	for (int fd = 3; fd < 2 * DACCE_KEPT_FD_FLOOR; fd++) {
		if (fstat(fd, &st) != 0 || st.st_dev != proc.st_dev)
			continue;
		if (fd < DACCE_KEPT_FD_FLOOR)
			below++;
		else
			above++;
	}
	return below == 0 && above == 2 ? 0 : 21;
}

START_TEST(test_descriptors_sit_high)
{
	ck_assert_int_eq(in_child(kept_at_floor_or_above), 0);
}
END_TEST

static int child_counts_itself(void)
{
	/* The parent's descriptors, inherited: they list the parent's threads. */
	return dacce_watch_threads();
}

START_TEST(test_fork_child_reads_its_own_process)
{
	pthread_t workers[2];

	pthread_barrier_init(&started, NULL, 3);
	pthread_barrier_init(&release, NULL, 3);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&workers[i], NULL, waiting_worker, NULL), 0);
	pthread_barrier_wait(&started);
	dacce_watch_open();
	ck_assert_int_ge(dacce_watch_threads(), 3);
	ck_assert_int_eq(in_child(child_counts_itself), 1);
	pthread_barrier_wait(&release);
	for (int i = 0; i < 2; i++)
		pthread_join(workers[i], NULL);
	pthread_barrier_destroy(&started);
	pthread_barrier_destroy(&release);
}
END_TEST

/* Closes every kept descriptor and puts a pipe of its own at each number, as after closefrom. */
static int program_takes_the_numbers(void)
{
	int pipes[2][2], taken = 0;
	char byte = 0;

	dacce_watch_open();
	for (int fd = DACCE_KEPT_FD_FLOOR; fd < 2 * DACCE_KEPT_FD_FLOOR && taken < 2; fd++) {
		if (fcntl(fd, F_GETFD) == -1)
			continue;
		if (pipe(pipes[taken]) != 0 || dup2(pipes[taken][0], fd) != fd)
			return 30;
		close(pipes[taken][0]);
		pipes[taken][0] = fd;
		taken++;
	}
	if (taken != 2)
		return 31;
	if (dacce_watch_threads() != 1 || dacce_watch_alone(1))
		return 32;
	/* The program's pipes are still at their numbers, and still theirs. */
	for (int i = 0; i < 2; i++) {
		if (write(pipes[i][1], "x", 1) != 1 || read(pipes[i][0], &byte, 1) != 1 || byte != 'x')
			return 33;
	}
	return 0;
}

START_TEST(test_program_that_took_our_numbers_keeps_its_files)
{
	ck_assert_int_eq(in_child(program_takes_the_numbers), 0);
}
END_TEST

static pthread_t main_thread;

/* Waits for main's pthread_exit, then reports whether the watch saw it go. */
static void *outliving_worker(void *unused)
{
	int threads;

	(void)unused;
	pthread_join(main_thread, NULL);
	threads = dacce_watch_threads();
	/* No exit handlers: a sanitizer's leak check would change the status. */
	_exit(threads == 2 && dacce_watch_alone(threads) ? 0 : 40);
}

static int main_leaves_first(void)
{
	pthread_t worker;

	main_thread = pthread_self();
	dacce_watch_open();
	if (dacce_watch_alone(dacce_watch_threads()))
		return 41; /* alone while main runs: wrong */
	if (pthread_create(&worker, NULL, outliving_worker, NULL))
		return 42;
	pthread_exit(NULL);
}

START_TEST(test_main_gone_by_pthread_exit_leaves_the_other_alone)
{
	ck_assert_int_eq(in_child(main_leaves_first), 0);
}
END_TEST

static Suite *watch_suite(void)
{
	Suite *s = suite_create("rt_watch");
	TCase *tc = tcase_create("kept");

	tcase_add_test(tc, test_reading_opens_no_descriptor);
	tcase_add_test(tc, test_descriptors_sit_high);
	tcase_add_test(tc, test_fork_child_reads_its_own_process);
	tcase_add_test(tc, test_program_that_took_our_numbers_keeps_its_files);
	tcase_add_test(tc, test_main_gone_by_pthread_exit_leaves_the_other_alone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(watch_suite());
}
