// SPDX-License-Identifier: MIT
/*
 * A tail call that gets hot after its callee's free in-edge was chosen: work()
 * is first called (hot) from via_call, then tail-called (at -O2 and -O3) from
 * via_tail far more often.  The policy must re-encode to give the tail call
 * the free place (epoch.c, hot_tail_edge), and contexts stay exact before,
 * after, and once via_call is back; tests/trap-report.sh checks the epoch.
 */
#include "tailpair.h"

/* Calls through one of the two for ms milliseconds; counts results that are not x * 3 (+ 1). */
NOINLINE static long run(int tail, long ms)
{
	long end = probe_now_ms() + ms, wrong = 0;

	while (probe_now_ms() < end)
		for (int i = 0; i < 10000; i++)
			wrong += tail ? via_tail(i) != i * 3 : via_call(i) != i * 3 + 1;
	return wrong;
}

int main(void)
{
	long wrong = 0;

	/* Every edge found first, so that no epoch for new edges comes during the hot tail calls. */
	via_call(-1);
	via_tail(-1);
	wrong += run(1, 1);
	wrong += run(0, 300);
	wrong += run(1, 500);
	via_tail(-1);
	via_call(-1);
	wrong += run(0, 200);
	via_call(-1);
	via_tail(-1);
	printf("wrong results: %ld\n", wrong);
	return 0;
}
