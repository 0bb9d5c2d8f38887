// SPDX-License-Identifier: MIT
/*
 * Direct calls given back: a hot direct call whose edge an epoch encodes at
 * 0 runs the program's own `call` from then on, and every later epoch must
 * keep that edge free, however the graph grows, since frames it entered
 * return with nothing to undo.
 *
 * 1. a -> b, one call in sixteen, while other calls are hot: the edge becomes
 *    free (b's only caller) at the first epoch, and its site native once it
 *    has made enough calls encoded (GIVE_BACK_CALLS).
 * 2. main -> c -> b, hotter: a plain encoding would give c -> b the free
 *    place in b, and a context entered through the native a -> b would read
 *    as main -> c -> b.
 * 3. a -> b -> d -> a ... twenty deep (main -> c comes first in the search,
 *    so a plain search would reach b through c and find a -> b closing the
 *    cycle: a back edge); at the bottom, hot calls of c through a new site
 *    keep epochs coming while the native frames live; probes at the bottom
 *    and in every a and d as the recursion returns.
 */
#include <time.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline, noclone))
#define DEPTH 20
#define PHASE_NS 150000000L

static volatile long sink;

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

NOINLINE static long a(long n, int deep);
NOINLINE static long c(long n);

NOINLINE static long d(long n)
{
	long r = a(n - 1, 1) + sink;
	char tag[32];

	snprintf(tag, sizeof(tag), "d %ld", n);
	probe(tag);
	return r;
}

/* Calls c through a site of its own, for a while: new edges, pushes, epochs. */
NOINLINE static long churn(void)
{
	long r = 0, end = now_ns() + PHASE_NS;

	for (long i = 0; now_ns() < end; i++)
		r += c(i);
	return r;
}

NOINLINE static long b(long n, int deep)
{
	if (!deep)
		return n * 3 + sink;
	if (n > 0)
		return d(n) + sink;
	probe("bottom before");
	sink += churn();
	probe("bottom after");
	return sink;
}

NOINLINE static long a(long n, int deep)
{
	long r = b(n, deep) + sink;

	if (deep) {
		char tag[32];

		snprintf(tag, sizeof(tag), "a %ld", n);
		probe(tag);
	}
	return r;
}

NOINLINE static long c(long n)
{
	long r = b(n, 0) + sink;

	if (n == 3)
		probe("c");
	return r;
}

/* Hot calls of their own: pushes that bring the first epoch, while a -> b is still cold. */
NOINLINE static long e(long n)
{
	return n ^ sink;
}

int main(void)
{
	long r = 0, end = now_ns() + PHASE_NS;

	for (long i = 0; now_ns() < end; i++)
		r += i % 16 ? e(i) : a(i, 0);
	probe("after a");
	end = now_ns() + PHASE_NS;
	for (long i = 0; now_ns() < end; i++)
		r += c(i);
	probe("after c");
	r += a(DEPTH, 1);
	probe("main");
	printf("done %d\n", r != 0);
	return 0;
}
