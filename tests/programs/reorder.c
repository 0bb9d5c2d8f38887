// SPDX-License-Identifier: MIT
/*
 * Dispatch code reordered while the program runs: one call site meets 12
 * targets in order, then the last four get nearly all the calls, long enough
 * for the policy thread to move them to the front of the site's compares
 * (rt_reorder_dispatch), and then the first ones again.  Contexts must stay
 * exact in every target before, during and after; tests/trap-report.sh checks
 * that a reordering happened.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

#define H(n) NOINLINE static int h##n(int x) { if (x < 0) probe("h" #n); return x + n + sink; }
H(0) H(1) H(2) H(3) H(4) H(5) H(6) H(7) H(8) H(9) H(10) H(11)

struct op {
	/*
	 * A 6-byte call through memory: dispatch code reached by a jump written
	 * over the call itself, which the policy thread rewrites while this
	 * thread may be running it (a 3-byte call borrows the instruction before
	 * it instead, and only its landing's slot changes).
	 */
	char pad[0x100];
	int (*fn)(int);
};

static struct op ops[12] = {
	{ .fn = h0 }, { .fn = h1 }, { .fn = h2 }, { .fn = h3 }, { .fn = h4 }, { .fn = h5 },
	{ .fn = h6 }, { .fn = h7 }, { .fn = h8 }, { .fn = h9 }, { .fn = h10 }, { .fn = h11 },
};

__attribute__((noipa)) static int step(const struct op *o, int x)
{
	return o->fn(x) + 1;
}

/* Handler n returns x + n: step(&ops[n], x) is x + n + 1 when the call reached the right one. */
static long wrong;

/* Calls the handlers from first to first + count - 1, round after round, for ms milliseconds. */
NOINLINE static void run(int first, int count, long ms)
{
	long end = probe_now_ms() + ms;

	while (probe_now_ms() < end)
		for (int round = 0; round < 1000; round++) {
			int n = first + round % count;

			wrong += step(&ops[n], round) != round + n + 1;
		}
}

NOINLINE static void probe_all(void)
{
	for (int n = 0; n < 12; n++)
		wrong += step(&ops[n], -1) != n;
}

int main(void)
{
	probe_all();	  /* the targets in order, probed */
	run(8, 4, 400);	  /* the last four hot */
	probe_all();
	run(0, 3, 200);	  /* the first ones again */
	probe_all();
	printf("calls that reached another handler: %ld\n", wrong);
	return 0;
}
