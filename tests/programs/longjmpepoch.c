// SPDX-License-Identifier: MIT
/*
 * A re-encoding between setjmp and longjmp.  A thread calls setjmp, recurses
 * 50 levels with 4 KB frames (slow enough, with the page faults of a fresh
 * stack, for a re-encoding to land in between under DACCE_EPOCH_STRESS=1)
 * and longjmps back, three rounds.  The context after longjmp must be the one
 * setjmp saw: the runtime translates the setjmp mark with each epoch, from
 * the mark's own top entry (the call to setjmp, whose ccStack slot the
 * recursion's first call has reused by then).
 */
#include <pthread.h>
#include <setjmp.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define FRAME 4096

static volatile int sink;
static jmp_buf env;

NOINLINE static long dive(long n)
{
	volatile char frame[FRAME];

	if (n == 50) {
		if (sink >= 0) /* always: keeps the compiler from calling the recursion endless */
			longjmp(env, 1);
		return 0;
	}
	frame[0] = (char)n;
	frame[FRAME - 1] = (char)n;
	return dive(n + 1) + frame[0] + frame[FRAME - 1];
}

static void *thread_main(void *arg)
{
	(void)arg;
	for (int round = 0; round < 3; round++) {
		if (setjmp(env) == 0)
			sink += (int)dive(0);
		probe("after-longjmp");
	}
	return NULL;
}

int main(void)
{
	pthread_t thread;

	pthread_create(&thread, NULL, thread_main, NULL);
	pthread_join(thread, NULL);
	probe("main");
	return 0;
}
