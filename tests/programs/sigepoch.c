// SPDX-License-Identifier: MIT
/*
 * Signals arriving while the runtime re-encodes: a timer fires every 50 us
 * while the program keeps meeting new edges (run-programs.sh also runs it
 * with an epoch after every new edge), and the handler calls instrumented
 * code of its own.  The contexts probed in the main flow must stay exact.
 */
#include <signal.h>
#include <sys/time.h>

#include "probe.h"

#define N 16

typedef int (*fn_t)(int depth, int r);
static fn_t table[N];
static volatile long ticks, sink;

static __attribute__((noinline)) long in_handler(long x)
{
	return x * 3 + sink;
}

static void on_tick(int sig)
{
	(void)sig;
	ticks += in_handler(1) > 0;
}

static __attribute__((noinline)) int leaf(int r)
{
	if (r % 997 == 0) {
		char tag[32];

		snprintf(tag, sizeof(tag), "round %d", r);
		probe(tag);
	}
	return r & 1;
}

#define FN(i)                                                                              \
	static __attribute__((noinline)) int fn##i(int depth, int r)                       \
	{                                                                                  \
		int reach = 2 + (r / 3000) % (N - 1);                                      \
		if (depth == 0)                                                            \
			return leaf(r);                                                    \
		return table[(i * 5 + r + depth) % reach](depth - 1, r) + (int)sink;       \
	}
FN(0) FN(1) FN(2) FN(3) FN(4) FN(5) FN(6) FN(7) FN(8) FN(9) FN(10) FN(11) FN(12) FN(13)
FN(14) FN(15)

int main(void)
{
	fn_t all[N] = { fn0, fn1, fn2,	fn3,  fn4,  fn5,  fn6,	fn7,
			fn8, fn9, fn10, fn11, fn12, fn13, fn14, fn15 };
	struct itimerval fast = { { 0, 50 }, { 0, 50 } }, off = { { 0, 0 }, { 0, 0 } };
	long sum = 0;

	memcpy(table, all, sizeof(all));
	signal(SIGALRM, on_tick);
	setitimer(ITIMER_REAL, &fast, NULL);
	for (int r = 0; r < 60000; r++)
		sum += table[r % N](3 + r % 4, r);
	setitimer(ITIMER_REAL, &off, NULL);
	probe("main");
	printf("sum %ld ticked %d\n", sum, ticks > 0);
	return 0;
}
