// SPDX-License-Identifier: MIT
/*
 * C11 threads.  glibc's thrd_create starts its threads with its internal
 * pthread_create, which the runtime cannot interpose: their first pushed
 * call killed the program (a null ccStack) until thrd_create was
 * interposed (runtime/start.c).  Threads started one after another and four
 * at once race through the same first calls (without probing: their lines
 * would interleave); a thread starts another; one
 * leaves with thrd_exit from three calls deep.  Each ends running tss
 * destructors, which glibc calls after the start routine returned: the
 * runtime had freed the thread's stacks by then, and the destructors' first
 * pushed call killed the program too (runtime/thread_stacks.c).  Their
 * results are checked, not probed: a destructor is a callback from libc
 * whose context reads partial under the runtime.
 */
#include <stdatomic.h>
#include <threads.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define RACERS 4

static volatile int sink;
static atomic_int arrived, destructed;
static atomic_long destructor_sum;
static tss_t slot;

NOINLINE static int depth(int n)
{
	if (n == 0) {
		probe("depth");
		return 0;
	}
	return depth(n - 1) + 1 + sink;
}

static int (*const through_pointer)(int) = depth;

/* What racers and destructors call: they run at once, so they do not probe. */
NOINLINE static int count(int n)
{
	return n == 0 ? 0 : count(n - 1) + 1 + sink;
}

static int (*const counting)(int) = count;

NOINLINE static int by_value(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Runs after the thread's routine returned: calls, calls through a pointer, sorts. */
static void on_thread_end(void *value)
{
	int values[4] = { 4, 2, 3, 1 };
	long sum = (long)(intptr_t)value;

	for (int i = 0; i < 50; i++)
		sum += counting(i % 5) == i % 5 ? 1 : -1000;
	qsort(values, 4, sizeof(values[0]), by_value);
	atomic_fetch_add(&destructor_sum, sum + values[0] * 1000 + values[3] * 100);
	atomic_fetch_add(&destructed, 1);
}

NOINLINE static int work(int n)
{
	tss_set(slot, (void *)(intptr_t)n);
	return through_pointer(n) * 2;
}

static int sequential(void *arg)
{
	return work((int)(intptr_t)arg);
}

static int racer(void *arg)
{
	atomic_fetch_add(&arrived, 1);
	while (atomic_load(&arrived) < RACERS)
		thrd_yield();
	tss_set(slot, arg);
	return counting(5 + (int)(intptr_t)arg % 2) * 2;
}

NOINLINE static void leave(int n)
{
	if (n == 0) {
		probe("leaving");
		thrd_exit(42);
	}
	leave(n - 1);
	sink++;
}

static int exits_deep(void *arg)
{
	(void)arg;
	tss_set(slot, (void *)7);
	leave(3);
	return -1;
}

static int starts_another(void *arg)
{
	thrd_t child;
	int result;

	(void)arg;
	probe("parent");
	if (thrd_create(&child, sequential, (void *)2) != thrd_success ||
	    thrd_join(child, &result) != thrd_success)
		return -1;
	return result + 1;
}

NOINLINE static int check(thrd_start_t routine, intptr_t arg, int expected)
{
	thrd_t thread;
	int result;

	if (thrd_create(&thread, routine, (void *)arg) != thrd_success ||
	    thrd_join(thread, &result) != thrd_success || result != expected) {
		printf("thread with %ld returned %d, not %d\n", (long)arg, result, expected);
		return -1;
	}
	return 0;
}

int main(void)
{
	thrd_t racers[RACERS];
	int total = 0, result;

	probe("main");
	if (tss_create(&slot, on_thread_end) != thrd_success)
		return 1;
	for (int i = 1; i <= 3; i++)
		if (check(sequential, i, 2 * i) != 0)
			return 1;
	for (intptr_t i = 0; i < RACERS; i++)
		if (thrd_create(&racers[i], racer, (void *)i) != thrd_success)
			return 1;
	for (int i = 0; i < RACERS; i++) {
		if (thrd_join(racers[i], &result) != thrd_success)
			return 1;
		total += result;
	}
	if (check(exits_deep, 0, 42) != 0 || check(starts_another, 0, 5) != 0)
		return 1;
	probe("joined");
	printf("racers %d, destructors %d, their sum %ld\n", total, atomic_load(&destructed),
	       atomic_load(&destructor_sum));
	return 0;
}
