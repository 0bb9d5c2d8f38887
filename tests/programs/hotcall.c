// SPDX-License-Identifier: MIT
/*
 * A direct call that gets hot after its callee's free place was chosen:
 * work() is first called 500 times from via_early, its only
 * caller at the first epoch (so that call is free), then tens of millions of
 * times from via_hot.  The program's own call must go back to via_hot's site,
 * not to the one that came first (runtime/rt.c, restore_native_calls: only a
 * call counted GIVE_BACK_CALLS times while free; epoch.c,
 * direct_call_to_give_back).
 * With HOTCALL_VERDICT set, it says on stderr where work() last returned to
 * from each caller: the program's own code (its call given back) or code of
 * the runtime; tests/trap-report.sh requires via_hot's call native and
 * via_early's not.  Contexts stay exact throughout (the probes).
 */
#include <stdlib.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline, noclone))

static volatile int sink;
static void *returns_to[2]; /* work()'s last return address, from via_early and via_hot */

NOINLINE static int work(int x, int from)
{
	returns_to[from] = __builtin_return_address(0);
	if (x < 0)
		probe("work");
	return x * 3 + sink;
}

NOINLINE static int via_early(int x)
{
	int r = work(x, 0);

	return r + 1 + sink;
}

NOINLINE static int via_hot(int x)
{
	int r = work(x, 1);

	return r + 2 + sink;
}

/* Hot calls of its own, which bring the first epoch while via_hot has not run. */
NOINLINE static int other(int x)
{
	return x ^ sink;
}

int main(void)
{
	long wrong = 0, end;

	for (int i = 0; i < 500; i++)
		wrong += via_early(i) != i * 3 + 1;
	via_early(-1);
	end = probe_now_ms() + 200;
	while (probe_now_ms() < end)
		for (int i = 0; i < 10000; i++)
			wrong += other(i) != (i ^ sink);
	end = probe_now_ms() + 600;
	while (probe_now_ms() < end)
		for (int i = 0; i < 10000; i++)
			wrong += via_hot(i) != i * 3 + 2;
	via_hot(-1);
	via_early(-1);
	printf("wrong results: %ld\n", wrong);
	if (getenv("HOTCALL_VERDICT"))
		fprintf(stderr, "hotcall: via_early's call %s, via_hot's call %s\n",
			probe_in_program(returns_to[0]) ? "native" : "instrumented",
			probe_in_program(returns_to[1]) ? "native" : "instrumented");
	return 0;
}
