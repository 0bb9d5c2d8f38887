/* SPDX-License-Identifier: MIT */
/*
 * Two ways into work(): a call from via_call, and a tail call from via_tail
 * (at -O2 and -O3).  hottail.c and warmtail.c make one hot, then the other,
 * and check the policy's epochs (tests/trap-report.sh); a negative x probes
 * the context in work().
 */
#ifndef TAILPAIR_H
#define TAILPAIR_H

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static int work(int x)
{
	if (x < 0)
		probe("work");
	return x * 3 + sink;
}

NOINLINE static int via_call(int x)
{
	int r = work(x);

	return r + 1 + sink;
}

NOINLINE static int via_tail(int x)
{
	return work(x + sink);
}

#endif
