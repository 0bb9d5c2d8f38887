// SPDX-License-Identifier: MIT
/*
 * getcontext and setcontext used as setjmp and longjmp: a context taken by
 * getcontext alone (no makecontext) is entered again by setcontext from
 * frames deeper down (a plain call, recursion 20 deep, a call through a
 * pointer, a signal handler) and by swapcontext.  After each return the
 * probes must read the frames that are live, as natively (the runtime read
 * partial from the first jump on before getcontext left a mark).
 */
#include <signal.h>
#include <ucontext.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static ucontext_t back, left_behind;
static volatile int jumps;
static volatile int sink;

NOINLINE static void leave(void)
{
	setcontext(&back);
}

NOINLINE static void recurse(int depth)
{
	if (depth == 0)
		leave();
	recurse(depth - 1);
	sink++;
}

static void (*volatile through_pointer)(int) = recurse;

NOINLINE static void swap_back(void)
{
	swapcontext(&left_behind, &back);
}

static void on_usr1(int sig)
{
	(void)sig;
	leave();
}

NOINLINE static void after_return(int round)
{
	probe(round == 0 ? "after-first" : "after-again");
}

NOINLINE static void round_trip(int how)
{
	volatile int entered = 0;

	getcontext(&back);
	if (entered) {
		after_return(1);
		return;
	}
	entered = 1;
	after_return(0);
	switch (how) {
	case 0: leave(); break;
	case 1: recurse(20); break;
	case 2: through_pointer(7); break;
	case 3: swap_back(); break;
	default: raise(SIGUSR1); break;
	}
	printf("not reached\n");
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_NODEFER };

	sigaction(SIGUSR1, &sa, NULL);
	for (int round = 0; round < 4; round++) {
		for (int how = 0; how < 5; how++)
			round_trip(how);
		probe("main-loop");
	}
	printf("done\n");
	return 0;
}
