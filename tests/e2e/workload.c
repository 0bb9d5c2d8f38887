// SPDX-License-Identifier: MIT
/*
 * The end-to-end workload of tests/e2e.sh: CPU-bound paths whose every
 * calling context is known in advance, so the check can demand that each
 * sampled context equals the one true path (expected-paths.txt).
 *
 *   workload [SECONDS] [EXIT_STATUS] [--fork] [--crash] [--until-file PATH]
 *
 * Each spin_* leaf is reached by exactly one path.  Threads carry their
 * creation context; the recursion is 40 deep; one path goes through a
 * function pointer and one ends in a tail call.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;
static double run_seconds = 1.5;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* About 20 us of work: long enough to be sampled, short enough to come back often. */
/* Each with its own constant: identical bodies would be folded into one (-fipa-icf). */
#define SPIN(name, k)                                               \
	NOINLINE void name(void)                                    \
	{                                                           \
		for (int i = 0; i < 20000; i++)                     \
			sink = sink * (k) + (uint64_t)i;            \
		__asm__ volatile("" ::: "memory");                  \
	}

SPIN(spin_main, 31)
SPIN(spin_deep, 37)
SPIN(spin_indirect, 41)
SPIN(spin_tail, 43)
SPIN(spin_worker_a, 47)
SPIN(spin_worker_b, 53)
SPIN(spin_child, 59)

NOINLINE void main_path_inner(void) { spin_main(); sink++; }
NOINLINE void main_path(void) { main_path_inner(); sink += 2; }

NOINLINE void recurse(int depth)
{
	if (depth == 0)
		spin_deep();
	else
		recurse(depth - 1);
	sink += (uint64_t)depth;
}

typedef void (*handler_fn)(void);
NOINLINE void dispatch(handler_fn fn) { fn(); sink += 3; }

/* A tail call: tail_caller's frame is gone when spin_tail runs. */
NOINLINE void tail_caller(void) { sink += 5; spin_tail(); }
NOINLINE void tail_path(void) { tail_caller(); sink += 7; }

NOINLINE void worker_a_step(void) { spin_worker_a(); sink++; }
NOINLINE void worker_b_step(void) { spin_worker_b(); sink += 9; }

static void *worker_a(void *arg)
{
	(void)arg;
	for (double end = now() + run_seconds; now() < end;)
		worker_a_step();
	return NULL;
}

static void *worker_b(void *arg)
{
	for (double end = now() + run_seconds; now() < end;)
		worker_b_step();
	return arg;
}

NOINLINE void start_workers(pthread_t *a, pthread_t *b)
{
	pthread_create(a, NULL, worker_a, NULL);
	pthread_create(b, NULL, worker_b, NULL);
}

NOINLINE void child_path(void)
{
	for (double end = now() + run_seconds / 2; now() < end;)
		spin_child();
}

/*
 * A setjmp through an instrumented call: the runtime then announces a setjmp
 * thunk, code of no call site, after the tail-call return stub; the
 * validator must still tell the stub (tail_path's samples go through it).
 */
NOINLINE void mark_setjmp(void)
{
	jmp_buf env;

	if (setjmp(env) == 0)
		sink++;
}

int main(int argc, char **argv)
{
	handler_fn volatile fn = spin_indirect;
	const char *until_file = NULL;
	int status = 0, do_fork = 0, crash = 0;
	pthread_t a, b;
	pid_t child = -1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--fork") == 0)
			do_fork = 1;
		else if (strcmp(argv[i], "--crash") == 0)
			crash = 1;
		else if (strcmp(argv[i], "--until-file") == 0 && i + 1 < argc)
			until_file = argv[++i];
		else if (i == 1)
			run_seconds = atof(argv[i]);
		else
			status = atoi(argv[i]);
	}
	if (do_fork) {
		child = fork();
		if (child == 0) {
			child_path();
			_exit(0);
		}
	}
	mark_setjmp();
	start_workers(&a, &b);
	for (double end = now() + run_seconds; now() < end || (until_file && access(until_file, F_OK));) {
		main_path();
		recurse(40);
		dispatch(fn);
		tail_path();
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	if (child > 0)
		waitpid(child, NULL, 0);
	if (crash)
		raise(SIGSEGV);
	printf("workload done %d\n", (int)(sink & 1) * 0);
	return status;
}
