// SPDX-License-Identifier: MIT
/* Tail calls: direct and through pointers; at -O2 they are jmp, not call. */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static int end_of_chain(int x)
{
	probe("tail-end");
	return x * 7 + sink;
}

NOINLINE static int second(int x) { return end_of_chain(x + 2); }
NOINLINE static int first(int x) { return second(x + 1); }

static int (*volatile target)(int) = end_of_chain;

NOINLINE static int through_pointer(int x) { return target(x + 5); }

NOINLINE static int tail_recursive(int n, int acc)
{
	if (n == 0) {
		probe("tail-rec");
		return acc;
	}
	return tail_recursive(n - 1, acc + n);
}

NOINLINE static int after_tail(int x)
{
	/* A normal call after the tail-called function returned: the state must be back. */
	int r = first(x);

	probe("after-tail");
	return r + 1;
}

int main(void)
{
	int r = first(1) + through_pointer(2) + tail_recursive(50, 0) + after_tail(3);

	probe("main");
	printf("result %d\n", r);
	return 0;
}
