// SPDX-License-Identifier: MIT
/*
 * getcontext and setcontext used as setjmp and longjmp: a context taken by
 * getcontext alone (no makecontext) is entered again from frames deeper
 * down, through a first call, recursion and a call through a pointer, and
 * from a signal handler.  After each return the probes must read the frames
 * that are live, as natively.
 */
#include <signal.h>
#include <ucontext.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static ucontext_t back;
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
	default: raise(SIGUSR1); break;
	}
	printf("not reached\n");
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_NODEFER };

	sigaction(SIGUSR1, &sa, NULL);
	for (int round = 0; round < 4; round++) {
		for (int how = 0; how < 4; how++)
			round_trip(how);
		probe("main-loop");
	}
	printf("done\n");
	return 0;
}
