// SPDX-License-Identifier: MIT
/*
 * An interpreter's cycle whose hot edge is found cold: interp() runs an op
 * through a table (exec_op), one op sorts (sort_op), and its comparisons
 * call back into interp() (compare), as lua's table.sort calls its Lua
 * comparator.  At first sort_op runs often with nothing to compare, so the
 * encoder leaves compare -> interp, the lightest edge of the cycle, to be
 * pushed.  Then one sort makes a million comparisons: the policy must
 * re-encode (epoch.c, hot_back_edge) and push the cold exec_op -> sort_op
 * instead; contexts stay exact before and after.  tests/trap-report.sh
 * checks the epoch.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

typedef long (*op_fn)(long);

NOINLINE static long interp(int op, long x);

NOINLINE static long add_op(long x)
{
	if (x < 0)
		probe("add_op");
	return x + 1 + sink;
}

NOINLINE static long compare(long x)
{
	return interp(0, x) + sink;
}

/* x comparisons; a negative x probes from inside one. */
NOINLINE static long sort_op(long x)
{
	long n = x < 0 ? 1 : x, sum = 0;

	for (long i = 0; i < n; i++)
		sum += compare(x < 0 ? -1 : i);
	return sum + sink;
}

static op_fn ops[2] = { add_op, sort_op };

NOINLINE static long exec_op(int op, long x)
{
	return ops[op](x) + sink;
}

NOINLINE static long interp(int op, long x)
{
	return exec_op(op, x) + sink;
}

/* Simple ops for ms milliseconds: edges all known, time for an epoch to come. */
NOINLINE static long settle(long ms)
{
	long end = probe_now_ms() + ms, sum = 0;

	while (probe_now_ms() < end)
		for (int i = 0; i < 1000; i++)
			sum += interp(0, i);
	return sum;
}

int main(void)
{
	long wrong = 0;

	interp(1, -1); /* every edge found, compare -> interp called once */
	for (int i = 0; i < 20000; i++)
		wrong += interp(1, 0) != 0;
	settle(300);
	/* The hot phase: a million calls through compare -> interp. */
	for (int round = 0; round < 10; round++) {
		long n = 100000;

		wrong += interp(1, n) != n * (n + 1) / 2;
		settle(20);
	}
	interp(1, -1);
	settle(100);
	interp(1, -1);
	interp(0, -1);
	printf("wrong results: %ld\n", wrong);
	return 0;
}
