// SPDX-License-Identifier: MIT
/*
 * A frame entered by a tail call while that call is free, which lives on
 * while another thread makes a hotter way into the same function: an
 * encoding that follows the frequencies would make the tail call cost
 * something, and the live frame would then need a tail record it never got
 * (decoder/translate.c).  The policy must keep that tail edge free instead of
 * putting off every epoch while the frame lives (runtime/epoch.c,
 * keep_tail_edges_free): tests/trap-report.sh counts the epochs put off.
 * The probes check that contexts stay exact throughout.
 */
#include <pthread.h>
#include <time.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define FRESH 48

static volatile int sink, stop;

/* Functions met one by one while the long frame lives: each is a new edge, so epochs are due. */
#define FRESH_FN(n) NOINLINE static int fresh##n(int x) { return x + n + sink; }
FRESH_FN(0) FRESH_FN(1) FRESH_FN(2) FRESH_FN(3) FRESH_FN(4) FRESH_FN(5) FRESH_FN(6) FRESH_FN(7)
FRESH_FN(8) FRESH_FN(9) FRESH_FN(10) FRESH_FN(11) FRESH_FN(12) FRESH_FN(13) FRESH_FN(14)
FRESH_FN(15) FRESH_FN(16) FRESH_FN(17) FRESH_FN(18) FRESH_FN(19) FRESH_FN(20) FRESH_FN(21)
FRESH_FN(22) FRESH_FN(23) FRESH_FN(24) FRESH_FN(25) FRESH_FN(26) FRESH_FN(27) FRESH_FN(28)
FRESH_FN(29) FRESH_FN(30) FRESH_FN(31) FRESH_FN(32) FRESH_FN(33) FRESH_FN(34) FRESH_FN(35)
FRESH_FN(36) FRESH_FN(37) FRESH_FN(38) FRESH_FN(39) FRESH_FN(40) FRESH_FN(41) FRESH_FN(42)
FRESH_FN(43) FRESH_FN(44) FRESH_FN(45) FRESH_FN(46) FRESH_FN(47)

static int (*const fresh[FRESH])(int) = {
	fresh0, fresh1, fresh2, fresh3, fresh4, fresh5, fresh6, fresh7, fresh8, fresh9, fresh10,
	fresh11, fresh12, fresh13, fresh14, fresh15, fresh16, fresh17, fresh18, fresh19, fresh20,
	fresh21, fresh22, fresh23, fresh24, fresh25, fresh26, fresh27, fresh28, fresh29, fresh30,
	fresh31, fresh32, fresh33, fresh34, fresh35, fresh36, fresh37, fresh38, fresh39, fresh40,
	fresh41, fresh42, fresh43, fresh44, fresh45, fresh46, fresh47,
};

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

/* Entered by the tail call (long: mode 1) and by the hot call (short: mode 0). */
NOINLINE static int target(int mode)
{
	long until;
	int r = 0;

	if (mode != 1)
		return mode + sink;
	probe("long frame begins");
	fprintf(stderr, "tailstall: long frame begins\n"); /* among the runtime's log lines */
	until = now_ms() + 1000;
	for (int i = 0; now_ms() < until; i++) {
		/* A new function every 20 ms or so, each called many times: new, hot edges. */
		int which = (int)((until - now_ms()) / 21) % FRESH;

		for (int k = 0; k < 2000; k++)
			r += fresh[which](i);
	}
	fprintf(stderr, "tailstall: long frame ends\n");
	probe("long frame ends");
	return r;
}

NOINLINE static int by_tail(int mode)
{
	return target(mode); /* a tail call from -O2 on */
}

NOINLINE static int by_call(int mode)
{
	int r = target(mode);

	return r + 1 + sink;
}

static void *hot_caller(void *unused)
{
	long n = 0;

	(void)unused;
	while (!stop)
		n += by_call(0);
	probe("hot caller done");
	return (void *)n;
}

/* Under the runtime: waits (2 s at most) until an epoch after the first is installed. */
static void wait_for_an_epoch(void)
{
	probe_context_get_fn get = probe_context_get();
	long until = now_ms() + 2000;
	struct dacce_context ctx;

	while (get && now_ms() < until && !(get(&ctx) == 0 && ctx.epoch >= 1)) {
		struct timespec moment = { 0, 5 * 1000 * 1000 };

		nanosleep(&moment, NULL);
	}
}

int main(void)
{
	pthread_t thread;

	/*
	 * The tail call alone first: 25,000 pushes (more than the 20,000 that make
	 * an epoch due) and an epoch that makes it free; the other thread's
	 * call gets more pushes than that within milliseconds.
	 */
	for (int i = 0; i < 25000; i++)
		sink += by_tail(2) & 0;
	wait_for_an_epoch();
	if (pthread_create(&thread, NULL, hot_caller, NULL))
		return 2;
	by_tail(1);
	stop = 1;
	pthread_join(thread, NULL);
	probe("main");
	return 0;
}
