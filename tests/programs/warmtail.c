// SPDX-License-Identifier: MIT
/*
 * A tail call that gets warm, not hot: as hottail.c, work() is first called
 * from via_call, then tail-called from via_tail past the policy's count
 * (10,000) and twice via_call's, but in one burst of 11,000 calls and never
 * again.  At 2 ns saved a call, such an epoch would not pay for its stop
 * (epoch.c, worth_a_stop): tests/trap-report.sh checks that none is made
 * for it, and the probes that contexts stay exact.
 */
#include <time.h>

#include "tailpair.h"

/* n calls through one of the two; counts results that are not x * 3 (+ 1). */
NOINLINE static long burst(int tail, int n)
{
	long wrong = 0;

	for (int i = 0; i < n; i++)
		wrong += tail ? via_tail(i) != i * 3 : via_call(i) != i * 3 + 1;
	return wrong;
}

int main(void)
{
	struct timespec rest = { 0, 300 * 1000 * 1000 };
	long wrong = 0, end;

	/* Every edge found first, so that no epoch for new edges comes after the tail calls. */
	via_call(-1);
	via_tail(-1);
	wrong += burst(1, 1);
	/*
	 * 2,000 calls through via_call, then a rest: an epoch (tests/trap-report.sh
	 * runs this with DACCE_EPOCH_HOT_PUSHES=1000) makes its edge free, counted
	 * 2,000 times, with a pause to weigh.
	 */
	wrong += burst(0, 2000);
	for (end = probe_now_ms() + 100; probe_now_ms() < end;)
		nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
	wrong += burst(1, 11000);
	via_tail(-1);
	/* Time for the policy to look, several times. */
	nanosleep(&rest, NULL);
	via_call(-1);
	printf("wrong results: %ld\n", wrong);
	return 0;
}
