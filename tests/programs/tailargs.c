// SPDX-License-Identifier: MIT
/*
 * Tail calls with arguments on the stack: nine integer arguments (three on
 * the stack), ten doubles (two on the stack), structs passed by value in
 * memory, relayed through chains of direct and indirect sibling calls (at -O2
 * the callee's stack arguments are rewritten in place, then jmp) mixed with
 * normal calls.  Every leaf checks every argument against what its caller
 * meant to pass, so a trampoline or return stub that moved %rsp or touched
 * an argument slot prints BAD; probes at the leaves show which frames the
 * sibling calls left.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static int bad;

struct big { long a, b, c, d; };      /* 32 bytes: passed in memory */
struct pair { int i; double d; };     /* passed in %rdi and %xmm0 */

static void expect(const char *what, long got, long want)
{
	if (got != want) {
		printf("BAD %s: %ld, expected %ld\n", what, got, want);
		bad++;
	}
}

NOINLINE static void leaf_probe(const char *what, long seed)
{
	char tag[64];

	if (seed % 16 == 0) {
		snprintf(tag, sizeof(tag), "%s seed %ld", what, seed);
		probe(tag);
	}
}

/* The leaf: arguments must be seed, seed+1, ..., seed+8. */
NOINLINE static long nine(long a, long b, long c, long d, long e, long f, long g, long h, long i)
{
	long args[9] = { a, b, c, d, e, f, g, h, i };

	for (int k = 0; k < 9; k++)
		expect("nine", args[k], a + k);
	leaf_probe("nine", a);
	return a * 9 + 36 + sink;
}

/* Rotates its arguments back into order: a sibling call with three stack arguments. */
NOINLINE static long rotate9(long i, long a, long b, long c, long d, long e, long f, long g, long h)
{
	return nine(a, b, c, d, e, f, g, h, i);
}

static long (*volatile rotate_ptr)(long, long, long, long, long, long, long, long, long) = rotate9;

/* An indirect sibling call. */
NOINLINE static long rotate9_indirect(long a, long b, long c, long d, long e, long f, long g, long h, long i)
{
	return rotate_ptr(i, a, b, c, d, e, f, g, h);
}

/* A normal call, then a tail call with the arguments it got. */
NOINLINE static long mixed9(long a, long b, long c, long d, long e, long f, long g, long h, long i)
{
	long first = rotate9(i, a, b, c, d, e, f, g, h);

	expect("mixed9 after call", first, a * 9 + 36);
	return rotate9_indirect(a, b, c, d, e, f, g, h, i);
}

/*
 * Mutual recursion by sibling calls, n levels down, then the leaf; every third
 * level of down9_a is a normal call instead, so the chain mixes both.
 */
NOINLINE static long down9_b(int n, long a, long b, long c, long d, long e, long f, long g, long h);

NOINLINE static long down9_a(int n, long a, long b, long c, long d, long e, long f, long g, long h)
{
	if (n == 0)
		return nine(a, b, c, d, e, f, g, h, a + 8);
	if (n % 3 == 0) {
		long r = down9_b(n - 1, a, b, c, d, e, f, g, h);

		expect("down9 after call", r, a * 9 + 36);
		return r;
	}
	return down9_b(n - 1, a, b, c, d, e, f, g, h);
}

NOINLINE static long down9_b(int n, long a, long b, long c, long d, long e, long f, long g, long h)
{
	if (n == 0)
		return nine(a, b, c, d, e, f, g, h, a + 8);
	return down9_a(n - 1, a, b, c, d, e, f, g, h);
}

/* Doubles: the leaf wants x, x+0.5, ..., x+4.5, two of them on the stack. */
NOINLINE static double ten_doubles(double a, double b, double c, double d, double e, double f,
				   double g, double h, double i, double j)
{
	double args[10] = { a, b, c, d, e, f, g, h, i, j };

	for (int k = 0; k < 10; k++)
		expect("ten_doubles", (long)(args[k] * 2), (long)(a * 2) + k);
	leaf_probe("doubles", (long)a);
	return a * 10 + 22.5;
}

NOINLINE static double swap_doubles(double j, double a, double b, double c, double d, double e,
				    double f, double g, double h, double i)
{
	return ten_doubles(a, b, c, d, e, f, g, h, i, j);
}

/* Structs by value: s must be {seed, 2 seed, 3 seed, 4 seed}. */
NOINLINE static long take_big(struct big s, struct pair p, long x, long y, long z, long w, long v)
{
	expect("big.a", s.a, x);
	expect("big.b", s.b, 2 * x);
	expect("big.c", s.c, 3 * x);
	expect("big.d", s.d, 4 * x);
	expect("pair.i", p.i, (int)x + 1);
	expect("pair.d", (long)p.d, x + 2);
	expect("y", y, x + 3);
	expect("z", z, x + 4);
	expect("w", w, x + 5);
	expect("v", v, x + 6);
	leaf_probe("big", x);
	return s.a + s.b + s.c + s.d + p.i + sink;
}

NOINLINE static long relay_big(struct big s, struct pair p, long x, long y, long z, long w, long v)
{
	struct big t = { s.d / 4, s.c * 2 / 3, s.b * 3 / 2, s.a * 4 };

	return take_big(t, p, x, y, z, w, v); /* a sibling call that rewrites the struct in place */
}

static long (*volatile big_ptr)(struct big, struct pair, long, long, long, long, long) = relay_big;

NOINLINE static long big_indirect(struct big s, struct pair p, long x, long y, long z, long w, long v)
{
	return big_ptr(s, p, x, y, z, w, v);
}

/* Returns a struct in memory (hidden pointer in %rdi), through a second function. */
NOINLINE static struct big make_big(long x)
{
	struct big s = { x, 2 * x, 3 * x, 4 * x };

	leaf_probe("make-big", x);
	return s;
}

NOINLINE static struct big make_big_via(long x)
{
	return make_big(x);
}

NOINLINE static long round_trip(long seed)
{
	long r = 0;
	struct big s = make_big_via(seed);
	struct pair p = { (int)seed + 1, (double)seed + 2 };

	r += rotate9(seed + 8, seed, seed + 1, seed + 2, seed + 3, seed + 4, seed + 5, seed + 6, seed + 7);
	r += rotate9_indirect(seed, seed + 1, seed + 2, seed + 3, seed + 4, seed + 5, seed + 6, seed + 7, seed + 8);
	r += mixed9(seed, seed + 1, seed + 2, seed + 3, seed + 4, seed + 5, seed + 6, seed + 7, seed + 8);
	r += down9_a((int)(seed % 9) + 1, seed, seed + 1, seed + 2, seed + 3, seed + 4, seed + 5, seed + 6, seed + 7);
	r += (long)swap_doubles(seed + 4.5, seed, seed + 0.5, seed + 1, seed + 1.5, seed + 2, seed + 2.5,
				seed + 3, seed + 3.5, seed + 4);
	r += big_indirect(s, p, seed, seed + 3, seed + 4, seed + 5, seed + 6);
	return r;
}

int main(void)
{
	long total = 0;

	for (long seed = 0; seed < 200; seed++)
		total += round_trip(seed);
	probe("main");
	printf("total %ld, %d bad\n", total, bad);
	return bad != 0;
}
