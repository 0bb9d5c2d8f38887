// SPDX-License-Identifier: MIT
/*
 * Hot free direct calls into functions that tail calls enter too.
 * cold_target() is called from a hot loop and entered by a tail call from
 * via_cold_tail once in 10,000 of those calls: its direct call gets the
 * program's own call back all the same (runtime/rt.c, rt_tail_calls_cold).
 * warm_target() is called from the same loop and entered by a tail call from
 * via_warm_tail once for every two direct calls: that tail call could yet
 * earn the free place (epoch.c, hot_tail_edge), so the direct call stays in
 * code of the runtime's.
 * With TAILCOLD_VERDICT set, it says on stderr where each target last
 * returned to from its direct call: the program's own code (its call given
 * back) or code of the runtime; tests/trap-report.sh requires cold_target's
 * native and warm_target's not.  Contexts stay exact throughout (the
 * probes, through the direct calls and the tail calls, before and after).
 */
#include <stdlib.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline, noclone))

static volatile int sink;
static void *direct_returns_to[2]; /* the last return address of each target's direct call */

/* Where a target's direct call returns to (slot 0: cold, 1: warm); a negative x probes. */
NOINLINE static void note(int slot, int direct, void *returns_to, int x, const char *where)
{
	if (direct)
		direct_returns_to[slot] = returns_to;
	if (x < 0)
		probe(where);
}

NOINLINE static int cold_target(int x, int direct)
{
	note(0, direct, __builtin_return_address(0), x, "cold_target");
	return x + 1 + sink;
}

NOINLINE static int warm_target(int x, int direct)
{
	note(1, direct, __builtin_return_address(0), x, "warm_target");
	return x + 2 + sink;
}

/* A sibling call at -O2 and -O3: `jmp cold_target`. */
NOINLINE static int via_cold_tail(int x)
{
	return cold_target(x + sink, 0);
}

NOINLINE static int via_warm_tail(int x)
{
	return warm_target(x + sink, 0);
}

NOINLINE static long loop(int rounds)
{
	long wrong = 0;

	for (int i = 0; i < rounds; i++) {
		wrong += cold_target(i, 1) != i + 1;
		wrong += warm_target(i, 1) != i + 2;
		if (i % 2 == 0)
			wrong += via_warm_tail(i) != i + 2;
		if (i == 0)
			wrong += via_cold_tail(i) != i + 1;
	}
	return wrong;
}

static void probe_all(void)
{
	cold_target(-1, 1);
	via_cold_tail(-2);
	warm_target(-1, 1);
	via_warm_tail(-2);
}

int main(void)
{
	long wrong = 0, end;
	void *cold, *warm;

	probe_all();
	end = probe_now_ms() + 600;
	while (probe_now_ms() < end)
		wrong += loop(10000);
	/* The hot calls' last returns, before the probes' own calls replace them. */
	cold = direct_returns_to[0];
	warm = direct_returns_to[1];
	probe_all();
	printf("wrong results: %ld\n", wrong);
	if (getenv("TAILCOLD_VERDICT"))
		fprintf(stderr, "tailcold: cold_target's call %s, warm_target's call %s\n",
			probe_in_program(cold) ? "native" : "instrumented",
			probe_in_program(warm) ? "native" : "instrumented");
	return 0;
}
