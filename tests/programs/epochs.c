// SPDX-License-Identifier: MIT
/*
 * Contexts across re-encodings: two threads run a long mix of indirect
 * calls, indirect tail calls, direct calls and recursion, meeting new edges
 * little by little, so that epochs are installed while their frames are
 * live (run-programs.sh also runs every program with an epoch every
 * millisecond).  Probes at the leaves check the context after each change.
 */
#include <pthread.h>

#include "probe.h"

#define N 24
#define ROUNDS 100000

typedef int (*fn_t)(int thread, int depth, int r);
static fn_t table[N];
static volatile int sink;

static __attribute__((noinline)) int leaf(int thread, int r)
{
	if (r % 1999 == 0) {
		char tag[48];

		snprintf(tag, sizeof(tag), "thread %d round %d", thread, r);
		probe(tag);
	}
	return r & 3;
}

static __attribute__((noinline)) int recurse(int thread, int n, int r)
{
	if (n == 0)
		return leaf(thread, r);
	return recurse(thread, n - 1, r) + sink + 1;
}

/* The functions an edge may reach widen as rounds go by: new edges keep appearing. */
#define FN(i)                                                                              \
	static __attribute__((noinline)) int fn##i(int thread, int depth, int r)           \
	{                                                                                  \
		int reach = 2 + (r / 5000) % (N - 1);                                      \
		int next = (i * 7 + r + depth) % reach;                                    \
		if (depth == 0)                                                            \
			return recurse(thread, r % 5, r);                                  \
		if ((r + i) % 3 == 0)                                                      \
			return table[next](thread, depth - 1, r); /* a tail call */        \
		return table[next](thread, depth - 1, r) + sink;                           \
	}
FN(0) FN(1) FN(2) FN(3) FN(4) FN(5) FN(6) FN(7) FN(8) FN(9) FN(10) FN(11)
FN(12) FN(13) FN(14) FN(15) FN(16) FN(17) FN(18) FN(19) FN(20) FN(21) FN(22) FN(23)

static __attribute__((noinline)) long run(int thread)
{
	long sum = 0;

	for (int r = 0; r < ROUNDS; r++)
		sum += table[r % N](thread, 4 + r % 5, r);
	return sum;
}

static void *second_thread(void *unused)
{
	(void)unused;
	printf("thread 1 sum %ld\n", run(1));
	return NULL;
}

int main(void)
{
	fn_t all[N] = { fn0,  fn1,  fn2,  fn3,	fn4,  fn5,  fn6,  fn7,	fn8,  fn9,  fn10, fn11,
			fn12, fn13, fn14, fn15, fn16, fn17, fn18, fn19, fn20, fn21, fn22, fn23 };
	pthread_t other;

	memcpy(table, all, sizeof(all));
	if (pthread_create(&other, NULL, second_thread, NULL))
		return 1;
	printf("thread 0 sum %ld\n", run(0));
	pthread_join(other, NULL);
	probe("main");
	return 0;
}
