// SPDX-License-Identifier: MIT
/*
 * Frameless functions whose switches compile to jump tables, which the
 * runtime leaves alone when every case lies in the function
 * (runtime/jump_tables.h): cases that compute, cases that call, cases that
 * tail-call other functions (each a tail call of its own the runtime must
 * still see), a switch on a byte, one on a value shifted into range first,
 * and a table of functions jumped through (never left alone: it leaves the
 * function).  Every case runs many times across re-encodings, with probes
 * in the callees, and every result is checked.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static long bad;

NOINLINE static int leaf_a(int x)
{
	if (x == 1000)
		probe("leaf_a");
	return x + 1 + sink;
}

NOINLINE static int leaf_b(int x)
{
	if (x == 2000)
		probe("leaf_b");
	return x * 2 + sink;
}

NOINLINE static int leaf_c(int x)
{
	if (x == 3001)
		probe("leaf_c");
	return x - 3 + sink;
}

/* Tail calls from cases, and cases that only compute. */
NOINLINE static int by_op(unsigned op, int x)
{
	switch (op) {
	case 0: return leaf_a(x);
	case 1: return leaf_b(x);
	case 2: return x * 3;
	case 3: return x - 7;
	case 4: return leaf_c(x + 1);
	case 5: return x ^ 0x55;
	case 6: return x << 2;
	case 7: return leaf_a(x + 10);
	default: return -1;
	}
}

/* A switch on a byte: no compare of the full register. */
NOINLINE static int by_byte(const unsigned char *code, int x)
{
	switch (*code) {
	case 'a': return leaf_a(x);
	case 'b': return x + 'b';
	case 'c': return leaf_b(x);
	case 'd': return x - 'd';
	case 'e': return x * 5;
	case 'f': return leaf_c(x);
	case 'g': return x / 3;
	default: return 0;
	}
}

/* Cases from 100 on: the index is shifted into range before the compare. */
NOINLINE static long by_range(long v)
{
	switch (v) {
	case 100: return v + 1;
	case 101: return leaf_a((int)v);
	case 102: return v * 7;
	case 103: return leaf_b((int)v);
	case 104: return v - 9;
	case 105: return v / 2;
	default: return 0;
	}
}

typedef int (*op_fn)(int);
static const op_fn ops[] = { leaf_a, leaf_b, leaf_c };

/* A tail call through a table of functions: it leaves the function, so it stays dispatched. */
NOINLINE static int through_table(unsigned i, int x)
{
	return ops[i % 3](x);
}

static int want_by_op(unsigned op, int x)
{
	static const int tab[] = { 0, 0, 0, 0, 0, 0, 0, 0 };

	(void)tab;
	switch (op) {
	case 0: return x + 1;
	case 1: return x * 2;
	case 2: return x * 3;
	case 3: return x - 7;
	case 4: return x + 1 - 3;
	case 5: return x ^ 0x55;
	case 6: return x << 2;
	case 7: return x + 10 + 1;
	default: return -1;
	}
}

static void check(const char *what, long got, long want)
{
	if (got != want && bad++ < 10)
		printf("BAD %s: %ld, expected %ld\n", what, got, want);
}

NOINLINE static void run_all(int round)
{
	static const unsigned char codes[] = "abcdefgz";

	for (int x = 0; x < 4000; x++) {
		unsigned op = (unsigned)(x + round) % 9;

		check("by_op", by_op(op, x), want_by_op(op, x));
		check("by_byte", by_byte(&codes[x % 8], x),
		      (const int[]){ x + 1, x + 'b', x * 2, x - 'd', x * 5, x - 3, x / 3, 0 }[x % 8]);
		check("by_range", by_range(99 + x % 8),
		      (const long[]){ 0, 101, 102, 714, 206, 95, 52, 0 }[x % 8]);
		check("through_table", through_table((unsigned)x, x),
		      (const int[]){ x + 1, x * 2, x - 3 }[x % 3]);
	}
}

int main(void)
{
	for (int round = 0; round < 20; round++)
		run_all(round);
	probe("done");
	printf("bad %ld\n", bad);
	return bad != 0;
}
