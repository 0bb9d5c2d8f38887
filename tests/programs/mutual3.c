// SPDX-License-Identifier: MIT
/*
 * Mutual recursion of three functions in an irregular order: each level picks
 * the next function, the call site and how far to descend from a
 * pseudo-random sequence, so contexts repeat edges in runs of every length
 * (what ccStack compression folds) mixed with changes of direction.  Probes
 * at every bottom, at some levels on the way down and on the way back up.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static long walk_a(unsigned s, int n);
NOINLINE static long walk_b(unsigned s, int n);
NOINLINE static long walk_c(unsigned s, int n);

static unsigned step(unsigned s)
{
	return s * 1103515245u + 12345u;
}

/* Where a walk goes next: the same function (a run), or one of the two others. */
NOINLINE static long next(unsigned s, int n, int self)
{
	unsigned pick = (s >> 16) % 5; /* runs of the same function are likelier */
	int depth = n - 1 - (int)((s >> 20) & 1);

	if (depth < 0)
		depth = 0;
	if (pick >= 3)
		pick = (unsigned)self;
	switch (pick) {
	case 0: return walk_a(step(s), depth) + 1;
	case 1: return walk_b(step(s), depth) + 2;
	default: return walk_c(step(s), depth) + 3;
	}
}

NOINLINE static void at(const char *where, unsigned s, int n)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "%s %08x %d", where, s, n);
	probe(tag);
}

NOINLINE static long walk_a(unsigned s, int n)
{
	if (n == 0) {
		at("bottom-a", s, n);
		return 1;
	}
	if ((s & 0x3f) == 5)
		at("down-a", s, n);
	return next(s, n, 0) + sink;
}

NOINLINE static long walk_b(unsigned s, int n)
{
	long r;

	if (n == 0) {
		at("bottom-b", s, n);
		return 2;
	}
	/* Two sites for the same callee: different return addresses. */
	if (s & 0x100)
		r = next(s, n, 1) * 3;
	else
		r = next(s, n, 1) + 7;
	if ((s & 0x3f) == 9)
		at("up-b", s, n);
	return r + sink;
}

NOINLINE static long walk_c(unsigned s, int n)
{
	if (n == 0) {
		at("bottom-c", s, n);
		return 3;
	}
	/* Straight to a or b, skipping next(): a cycle of a different length. */
	if ((s & 0x7) == 0)
		return walk_a(step(s), n - 1) + 5 + sink;
	if ((s & 0x7) == 1)
		return walk_b(step(s), n - 1) - 5 + sink;
	return next(s, n, 2) + sink;
}

int main(void)
{
	unsigned s = 2024;
	long r = 0;

	for (int round = 0; round < 300; round++) {
		int depth = 1 + (int)((s >> 8) % 50); /* 1 to 50 levels: printed frame by frame */

		if (round % 100 == 99)
			depth = 3000 + round; /* deep: printed as a count and hash */
		switch (round % 3) {
		case 0: r += walk_a(s, depth); break;
		case 1: r += walk_b(s, depth); break;
		default: r += walk_c(s, depth); break;
		}
		s = step(step(s));
	}
	probe("main");
	printf("result %ld\n", r);
	return 0;
}
