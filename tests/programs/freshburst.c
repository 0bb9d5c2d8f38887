// SPDX-License-Identifier: MIT
/*
 * A burst of calls through edges found after an epoch, while the pause
 * budget keeps the next epoch far away: early() runs alone until the first
 * epoch, then burst() and its callee, never called before, are called
 * millions of times (pushed: their edges are new).  tests/trap-report.sh runs
 * it with DACCE_EPOCH_PAUSE_BUDGET=1000000 (after a pause of 100 us the next
 * epoch would wait 100 s) and requires a second epoch all the same: the
 * burst's pushes pay for the stop (runtime/epoch.c, fresh_pushes_pay).
 * Contexts stay exact throughout (the probes).
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline, noclone))

static volatile int sink;

/* A leaf: calls into it are encoded at once, whatever the epoch. */
NOINLINE static long step(long x)
{
	return x + sink;
}

NOINLINE static long early(long x)
{
	if (x < 0)
		probe("early");
	return step(x) + 1;
}

NOINLINE static long inner(long x)
{
	if (x < 0)
		probe("inner");
	return step(x) + 2;
}

NOINLINE static long burst(long x)
{
	return inner(x) + 3 + sink;
}

/*
 * Calls early(), or burst() whose edges no epoch has seen, for ms
 * milliseconds; counts the wrong results.
 */
NOINLINE static long calls_for(int in_burst, long ms)
{
	long end = probe_now_ms() + ms, wrong = 0;

	while (probe_now_ms() < end)
		for (long i = 0; i < 10000; i++)
			wrong += in_burst ? burst(i) != i + 5 : early(i) != i + 1;
	return wrong;
}

int main(void)
{
	long wrong = 0;

	early(-1);
	/* Time for the first epoch, which encodes early()'s edges. */
	wrong += calls_for(0, 200);
	early(-1);
	burst(-1);
	/* New edges, pushed until an epoch encodes them. */
	wrong += calls_for(1, 400);
	burst(-1);
	early(-1);
	printf("wrong results: %ld\n", wrong);
	return 0;
}
