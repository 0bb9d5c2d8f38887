// SPDX-License-Identifier: MIT
/*
 * PENDING (a runtime bug, see README.md here): the smallest reproduction.  A
 * thread calls setjmp, recurses 50 levels with 4 KB frames (slow enough, with
 * the page faults of a fresh stack, for a re-encoding to land in between
 * under DACCE_EPOCH_STRESS=1) and longjmps back.  The context after longjmp
 * must be the one setjmp saw; under the runtime it reads "partial" in most
 * runs with DACCE_EPOCH_STRESS=1 (never with DACCE_EPOCHS=0), and stays
 * partial for every later round.
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
