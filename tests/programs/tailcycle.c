// SPDX-License-Identifier: MIT
/*
 * Tail calls by the hundred thousand: four functions tail-call each other
 * through a table (and sometimes directly) for 100,000 steps, in two threads
 * at once.  Optimised, that is one frame whose tail-call record takes 100,000
 * replacements (and repeat counts) without growing; at -O0 it is a recursion
 * 100,000 deep.  Every 1,000 steps a normal call runs a short chain of tail
 * calls of its own and returns, so records come and go under the long one.
 * Probes in the middle of the cycle, at the end of it and of the side chains,
 * and in the callers after it returns.
 */
#include <pthread.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define STEPS 100000

struct walk {
	const char *who;
	long acc;
};

typedef long (*step_fn)(struct walk *, long);
static step_fn steps[4];
static volatile int sink;

NOINLINE static void mark(const struct walk *w, const char *what, long n)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "%s %s %ld", w->who, what, n);
	probe(tag);
}

/* The side chain: side_a -> side_b -> side_c, all tail calls. */
NOINLINE static long side_c(const struct walk *w, long k)
{
	if (k % 20 == 0)
		mark(w, "side-chain-end", k);
	return k * 3 + sink;
}

NOINLINE static long side_b(const struct walk *w, long k) { return side_c(w, k + 1); }
NOINLINE static long side_a(const struct walk *w, long k) { return side_b(w, k + 1); }

NOINLINE static long finish(struct walk *w, long n)
{
	mark(w, "cycle-end", n);
	return w->acc;
}

NOINLINE static long step_direct(struct walk *w, long n);

/* One step: tail-calls the next, chosen through the table, or step_direct every 7th. */
#define STEP(i)                                                                    \
	NOINLINE static long step##i(struct walk *w, long n)                       \
	{                                                                          \
		w->acc += n * (i + 1);                                             \
		if (n == 0)                                                        \
			return finish(w, n);                                       \
		if (n % 25000 == 0)                                                \
			mark(w, "cycle-middle", n);                                \
		if (n % 1000 == 0)                                                 \
			w->acc += side_a(w, n / 1000); /* a normal call */         \
		if (n % 7 == 0)                                                    \
			return step_direct(w, n - 1);                              \
		return steps[(n + i) % 4](w, n - 1);                               \
	}
STEP(0) STEP(1) STEP(2) STEP(3)

NOINLINE static long step_direct(struct walk *w, long n)
{
	w->acc ^= n;
	if (n == 0)
		return finish(w, n);
	return step2(w, n - 1); /* a direct tail call */
}

NOINLINE static long walk_from(struct walk *w, long n)
{
	long r = steps[0](w, n);

	mark(w, "after-cycle", n);
	return r;
}

static void *second(void *arg)
{
	struct walk w = { "thread", 0 };

	(void)arg;
	return (void *)walk_from(&w, STEPS - 1);
}

int main(void)
{
	struct walk w = { "main", 0 };
	pthread_t thread;
	void *other;
	long r;

	steps[0] = step0;
	steps[1] = step1;
	steps[2] = step2;
	steps[3] = step3;
	pthread_create(&thread, NULL, second, NULL);
	r = walk_from(&w, STEPS);
	pthread_join(thread, &other);
	r += walk_from(&w, 3000); /* again, every edge known */
	probe("main");
	printf("result %ld %ld\n", r, (long)other);
	return 0;
}
