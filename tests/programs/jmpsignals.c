// SPDX-License-Identifier: MIT
/*
 * setjmp under a hail of signals.  The runtime records a setjmp mark without
 * a lock and without blocking signals; a program handler arriving meanwhile
 * is put off until the mark is written, then runs.  Here the main thread
 * calls sigsetjmp and siglongjmp 60,000 times through a few frames while
 * another thread sends it SIGUSR1 and waits for each to be handled.  The
 * handler itself calls setjmp and longjmp (a mark written inside a handler,
 * for its own jmp_buf) and calls through the program.  Probes after the
 * jumps must read the context sigsetjmp saw, and every signal must be
 * handled: one kept blocked would hang the sender.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define ROUNDS 60000
#define SIGNALS 3000

static volatile int sink;
static sigjmp_buf env;
static atomic_int handled, sent;
static atomic_bool done;
static pthread_t main_thread;

NOINLINE static void in_handler(int depth)
{
	jmp_buf local;

	if (depth > 0) {
		in_handler(depth - 1);
		return;
	}
	if (setjmp(local) == 0)
		longjmp(local, 1);
	sink++;
}

static void on_usr1(int sig)
{
	(void)sig;
	in_handler(3);
	atomic_fetch_add(&handled, 1);
}

static void *sender(void *arg)
{
	(void)arg;
	while (!atomic_load(&done) && atomic_load(&sent) < SIGNALS) {
		int before = atomic_load(&handled);

		atomic_fetch_add(&sent, 1);
		pthread_kill(main_thread, SIGUSR1);
		while (atomic_load(&handled) == before)
			sched_yield();
	}
	return NULL;
}

NOINLINE static void jump_back(int round)
{
	sink += round;
	siglongjmp(env, 1);
}

NOINLINE static void leap(int round)
{
	jump_back(round);
	sink--; /* not reached */
}

NOINLINE static void rounds(void)
{
	for (int round = 0; round < ROUNDS; round++) {
		if (sigsetjmp(env, 0) == 0)
			leap(round);
		if (round % 10000 == 0)
			probe("after-siglongjmp");
	}
}

NOINLINE static void run(void)
{
	rounds();
	probe("after-rounds");
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	pthread_t thread;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();
	pthread_create(&thread, NULL, sender, NULL);
	run();
	atomic_store(&done, true);
	pthread_join(thread, NULL);
	printf("every signal handled: %s\n",
	       atomic_load(&handled) == atomic_load(&sent) ? "yes" : "no");
	probe("main");
	return 0;
}
