// SPDX-License-Identifier: MIT
/*
 * pthread_exit from six calls deep in a thread, with cleanup handlers pushed
 * (pthread_cleanup_push) at two of the levels; then a thread cancelled four
 * calls below its handler.  glibc runs each handler after
 * jumping back to the frame that pushed it with its own internal longjmp
 * (__libc_unwind_longjmp, which the runtime cannot interpose): the context
 * is rewound when that frame's __sigsetjmp returns the second time (the
 * runtime has it return through a thunk), so the handlers' probes are exact,
 * as natively.  (A cancelled thread's handler: cancelfirst.c.)
 */
#include <pthread.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static void in_cleanup(const char *tag)
{
	probe(tag);
}

static void cleanup_inner(void *arg)
{
	in_cleanup(arg);
}

static void cleanup_outer(void *arg)
{
	in_cleanup(arg);
}

NOINLINE static void leave(int n)
{
	if (n == 0) {
		probe("before-pthread-exit");
		if (sink >= 0) /* always: keeps the compiler from calling the recursion endless */
			pthread_exit((void *)7);
		return;
	}
	leave(n - 1);
	sink++;
}

NOINLINE static void inner(void)
{
	pthread_cleanup_push(cleanup_inner, "cleanup-inner");
	leave(3);
	sink++;
	pthread_cleanup_pop(0);
}

NOINLINE static void outer(void)
{
	pthread_cleanup_push(cleanup_outer, "cleanup-outer");
	inner();
	sink++;
	pthread_cleanup_pop(0);
}

static void *exiting(void *arg)
{
	(void)arg;
	outer();
	return NULL;
}

/* The same jump from a cancellation, which acts inside libc (pthread_testcancel). */
static pthread_barrier_t ready;

static void cleanup_cancel(void *arg)
{
	in_cleanup(arg);
}

NOINLINE static void wait_cancel(int n)
{
	if (n == 0) {
		pthread_barrier_wait(&ready);
		while (sink >= 0) /* always: cancelled in here */
			pthread_testcancel();
		return;
	}
	wait_cancel(n - 1);
	sink++;
}

NOINLINE static void cancelled(void)
{
	pthread_cleanup_push(cleanup_cancel, "cleanup-cancel");
	wait_cancel(3);
	sink++;
	pthread_cleanup_pop(0);
}

static void *waiting(void *arg)
{
	(void)arg;
	cancelled();
	return NULL;
}

int main(void)
{
	pthread_t thread;
	void *r, *c;

	pthread_create(&thread, NULL, exiting, NULL);
	pthread_join(thread, &r);
	probe("main");
	pthread_barrier_init(&ready, NULL, 2);
	pthread_create(&thread, NULL, waiting, NULL);
	pthread_barrier_wait(&ready);
	pthread_cancel(thread);
	pthread_join(thread, &c);
	probe("after-cancel");
	printf("exit value %ld, cancelled %d\n", (long)r, c == PTHREAD_CANCELED);
	return 0;
}
