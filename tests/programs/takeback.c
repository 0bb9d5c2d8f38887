// SPDX-License-Identifier: MIT
/*
 * A call given back that is taken back while a frame it entered lives.
 * work() is called hot from via_call (given back: its tail call from
 * via_tail was made once, cold beside it), then a second thread enters
 * work() through that call and stays there while main makes the tail call
 * hot.  The epoch for the hot tail call takes the call back (runtime/epoch.c,
 * take_back_for_tail), but not while that frame lives: it returns to the
 * call's site, past any code that could undo an operation the new encoding
 * gave the call.  tests/trap-report.sh requires an attempt put off for it;
 * the probes, inside the held frame and after it returned, check that the
 * thread's context stays exact, and so do main's after the tail calls.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline, noclone))

static volatile int sink;
static atomic_int held, release;

static void sleep_ms(long ms)
{
	struct timespec t = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

	nanosleep(&t, NULL);
}

NOINLINE static int work(int x, int hold)
{
	if (hold) {
		probe("work held");
		atomic_store(&held, 1);
		while (!atomic_load(&release))
			sleep_ms(1);
		probe("work released");
	}
	if (x < 0)
		probe("work");
	return x * 3 + sink;
}

NOINLINE static int via_call(int x, int hold)
{
	int r = work(x, hold);

	return r + 1 + sink;
}

/* A sibling call at -O2 and -O3: `jmp work`. */
NOINLINE static int via_tail(int x)
{
	return work(x + sink, 0);
}

NOINLINE static void *holder(void *unused)
{
	(void)unused;
	via_call(0, 1);
	probe("holder returned");
	return NULL;
}

/* Calls through one of the two for ms milliseconds; counts results that are not x * 3 (+ 1). */
NOINLINE static long run(int tail, long ms)
{
	long end = probe_now_ms() + ms, wrong = 0;

	while (probe_now_ms() < end)
		for (int i = 0; i < 10000; i++)
			wrong += tail ? via_tail(i) != i * 3 : via_call(i, 0) != i * 3 + 1;
	return wrong;
}

int main(void)
{
	pthread_t thread;
	long wrong = 0;

	via_call(-1, 0);
	via_tail(-1);
	wrong += run(0, 400);
	if (pthread_create(&thread, NULL, holder, NULL) != 0)
		return 1;
	while (!atomic_load(&held))
		sleep_ms(1);
	wrong += run(1, 400);
	atomic_store(&release, 1);
	pthread_join(thread, NULL);
	wrong += run(1, 300);
	via_tail(-1);
	via_call(-1, 0);
	printf("wrong results: %ld\n", wrong);
	return 0;
}
