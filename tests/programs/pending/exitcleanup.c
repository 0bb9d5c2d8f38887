// SPDX-License-Identifier: MIT
/*
 * PENDING (a runtime gap, see README.md here): pthread_exit from six calls
 * deep in a thread, with cleanup handlers pushed (pthread_cleanup_push) at
 * two of the levels.  glibc runs each handler after jumping back to the
 * frame that pushed it with its own internal longjmp (__libc_unwind_longjmp,
 * which the runtime does not interpose): the runtime's context is not
 * rewound, and the return of that frame's setjmp site pops whatever entry
 * is on top.  The handlers' probes read "partial" under the runtime, where
 * natively they have exact stacks.  (A cancelled thread's handler:
 * cancelfirst.c.)
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

int main(void)
{
	pthread_t thread;
	void *r;

	pthread_create(&thread, NULL, exiting, NULL);
	pthread_join(thread, &r);
	probe("main");
	printf("exit value %ld\n", (long)r);
	return 0;
}
