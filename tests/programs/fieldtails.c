// SPDX-License-Identifier: MIT
/*
 * Tail calls through a function pointer in a struct (`jmp *8(%rdi)` at -O2):
 * jump dispatch code compares its first targets without touching the flags
 * and goes straight to their trampolines.  Six operations, so that some are
 * met past those first compares, called in phases whose hot operation
 * changes (dispatch code is reordered as they do), under a 100 us timer
 * whose handler makes the same tail calls.  Every result is checked, and
 * probes in the operations read the context the tail call left.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline, noipa))
#define OPS 6

struct op {
	const char *name;
	long (*fn)(long x, int probe_now);
};

static volatile long handler_sum;
static volatile int handled;

#define OP(k, expr)                                        \
	NOINLINE static long op_##k(long x, int probe_now)  \
	{                                                   \
		if (probe_now)                              \
			probe("op" #k);                     \
		return (expr);                              \
	}
OP(0, x + 1)
OP(1, x * 3)
OP(2, x - 7)
OP(3, x ^ 0x55)
OP(4, x * x % 1000003)
OP(5, (x << 2) + 9)

/* Written at run time: the compiler must not see through the pointers. */
static struct op ops[OPS] = {
	{ "op0", op_0 }, { "op1", op_1 }, { "op2", op_2 },
	{ "op3", op_3 }, { "op4", op_4 }, { "op5", op_5 },
};

static long expected(int k, long x)
{
	switch (k) {
	case 0: return x + 1;
	case 1: return x * 3;
	case 2: return x - 7;
	case 3: return x ^ 0x55;
	case 4: return x * x % 1000003;
	default: return (x << 2) + 9;
	}
}

/* The tail call under test: through the struct's pointer, nothing after it. */
NOINLINE static long apply(const struct op *o, long x, int probe_now)
{
	return o->fn(x, probe_now);
}

NOINLINE static long through(const struct op *o, long x, int probe_now)
{
	long r = apply(o, x, probe_now);

	return r;
}

static void on_alarm(int sig)
{
	(void)sig;
	handler_sum += through(&ops[handled % OPS], handled, 0);
	handled++;
}

int main(void)
{
	struct sigaction action = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval every = { { 0, 100 }, { 0, 100 } };
	long bad = 0;

	__asm__ volatile("" : : "r"(ops) : "memory");
	sigemptyset(&action.sa_mask);
	sigaction(SIGALRM, &action, NULL);
	setitimer(ITIMER_REAL, &every, NULL);
	/* Each phase makes another operation hot; the others keep coming. */
	for (int phase = 0; phase < 12; phase++) {
		int hot = (phase * 5) % OPS;

		for (long i = 0; i < 400000; i++) {
			int k = i % 8 < 6 ? hot : (int)(i % OPS);

			if (through(&ops[k], i, 0) != expected(k, i))
				bad++;
		}
		for (int k = 0; k < OPS; k++)
			if (through(&ops[k], phase, 1) != expected(k, phase))
				bad++;
	}
	setitimer(ITIMER_REAL, &(struct itimerval){ 0 }, NULL);
	printf("wrong results: %ld, handler ran: %s\n", bad, handled > 0 ? "yes" : "no");
	return bad != 0;
}
