// SPDX-License-Identifier: MIT
/*
 * Recursion 100,000 deep through function pointers, where every level is an
 * indirect call (a ccStack entry unless compressed): one function calling
 * itself through a pointer, a cycle of three functions through a table (no
 * two consecutive entries alike), and a run that switches between a direct
 * and an indirect call.  Probes at the bottoms, on the way back up, and
 * after each recursion returns.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define DEEP 100000

static volatile int sink;

typedef long (*step_fn)(int n, int which);
static step_fn volatile self_ptr;
static step_fn volatile cycle[3];

NOINLINE static void mark(const char *what, int which, int n)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "%s %d at %d", what, which, n);
	probe(tag);
}

NOINLINE static long self_step(int n, int which)
{
	long r;

	if (n == 0) {
		mark("self-bottom", which, n);
		return 0;
	}
	r = self_ptr(n - 1, which) + 1 + sink;
	if (n == 1 || n == 777 || n == DEEP / 2)
		mark("self-up", which, n);
	return r;
}

NOINLINE static long cycle_a(int n, int which);
NOINLINE static long cycle_b(int n, int which);
NOINLINE static long cycle_c(int n, int which);

NOINLINE static long cycle_a(int n, int which)
{
	if (n == 0) {
		mark("cycle-bottom-a", which, n);
		return 1;
	}
	return cycle[1](n - 1, which) + 1 + sink;
}

NOINLINE static long cycle_b(int n, int which)
{
	long r;

	if (n == 0) {
		mark("cycle-bottom-b", which, n);
		return 2;
	}
	r = cycle[2](n - 1, which) + 2 + sink;
	if (n == 30001)
		mark("cycle-up-b", which, n);
	return r;
}

NOINLINE static long cycle_c(int n, int which)
{
	if (n == 0) {
		mark("cycle-bottom-c", which, n);
		return 3;
	}
	return cycle[0](n - 1, which) + 3 + sink;
}

/* Direct for 1,000 levels, then through the pointer for 1,000, and so on. */
NOINLINE static long mixed(int n, int which)
{
	if (n == 0) {
		mark("mixed-bottom", which, n);
		return 0;
	}
	if ((n / 1000) % 2)
		return mixed(n - 1, which) + 1 + sink;
	return self_ptr(n - 1, which) + 2 + sink;
}

int main(void)
{
	long r = 0;

	self_ptr = self_step;
	cycle[0] = cycle_a;
	cycle[1] = cycle_b;
	cycle[2] = cycle_c;
	/* Twice each: the second time every edge is known (and, with epochs, re-encoded). */
	for (int which = 0; which < 2; which++) {
		r += self_step(DEEP, which);
		mark("after-self", which, 0);
		r += cycle_a(DEEP + which, which); /* ends in a different function each time */
		mark("after-cycle", which, 0);
	}
	self_ptr = mixed;
	r += mixed(DEEP / 10, 0);
	mark("after-mixed", 0, 0);
	printf("result %ld\n", r);
	return 0;
}
