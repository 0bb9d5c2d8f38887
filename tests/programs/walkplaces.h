/* SPDX-License-Identifier: MIT */
/*
 * The places where backtraces.c and unwsteps.c walk their own stacks: a deep
 * chain, recursion, a frame left by a tail call, a qsort comparator, a signal
 * handler and a thread; each followed by a probe (probe.h), so the contexts
 * after a walk are checked too.  The including program defines
 * walk_here(tag), which does its walks and prints them.
 */
#ifndef DACCE_WALKPLACES_H
#define DACCE_WALKPLACES_H

#include <pthread.h>
#include <signal.h>

#include "probe.h"

#define WALK_NOINLINE __attribute__((noinline))

static void walk_here(const char *tag);

static volatile int walk_sink;

WALK_NOINLINE static void chain3(void) { walk_here("chain"); walk_sink++; }
WALK_NOINLINE static void chain2(void) { chain3(); walk_sink++; }
WALK_NOINLINE static void chain1(void) { chain2(); walk_sink++; }

WALK_NOINLINE static int recurse(int n)
{
	if (n == 0) {
		walk_here("recursion");
		return 0;
	}
	return recurse(n - 1) + 1 + walk_sink;
}

WALK_NOINLINE static int tail_leaf(int x)
{
	walk_here("tail");
	return x + walk_sink;
}

/* A tail call at -O2: this frame is gone when tail_leaf runs (its slot holds the tail stub). */
WALK_NOINLINE static int tail_middle(int x) { return tail_leaf(x + 1); }

WALK_NOINLINE static int tail_top(int x) { return tail_middle(x) * 2; }

static int walked_in_compare;

WALK_NOINLINE static int compare(const void *a, const void *b)
{
	if (!walked_in_compare++)
		walk_here("comparator");
	return *(const int *)a - *(const int *)b;
}

WALK_NOINLINE static void sort(void)
{
	int v[] = { 5, 3, 9, 1, 7 };

	qsort(v, 5, sizeof(v[0]), compare);
	walk_sink += v[0];
}

WALK_NOINLINE static void on_signal(int sig)
{
	(void)sig;
	walk_here("handler");
}

WALK_NOINLINE static void signalled(void)
{
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	walk_sink++;
}

static void *thread_main(void *arg)
{
	(void)arg;
	chain1();
	return NULL;
}

WALK_NOINLINE static void threaded(void)
{
	pthread_t t;

	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
}

/* Every place in turn, recursing depth deep. */
static int walk_everywhere(int depth)
{
	chain1();
	probe("after-chain");
	walk_sink += recurse(depth);
	probe("after-recursion");
	walk_sink += tail_top(1);
	probe("after-tail");
	sort();
	probe("after-comparator");
	signalled();
	probe("after-handler");
	threaded();
	probe("after-thread");
	return 0;
}

#endif
