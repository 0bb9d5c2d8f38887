// SPDX-License-Identifier: MIT
/*
 * A thread is cancelled (deferred cancellation, the default) while it makes
 * first calls.  The first call of a site runs the runtime's slow path, which
 * holds the runtime lock while it writes code with open/pwrite/close:
 * cancellation points.  Were the cancellation to act there, it would unwind
 * the thread out of the runtime with the lock held, and the next first call
 * in any thread (the cleanup handler's, then main's after pthread_join)
 * would wait for it forever.  The runtime holds its lock with cancellation
 * disabled, so the thread is cancelled at its pthread_testcancel, as natively.
 */
#include <pthread.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static pthread_barrier_t started;

/* 512 functions, each one's call site new the first time round. */
#define F(i) NOINLINE static int f##i(int x) { return x + i + sink; }
#define F8(i) F(i##0) F(i##1) F(i##2) F(i##3) F(i##4) F(i##5) F(i##6) F(i##7)
#define F64(i) F8(i##1) F8(i##2) F8(i##3) F8(i##4) F8(i##5) F8(i##6) F8(i##7) F8(i##8)
F64(1) F64(2) F64(3) F64(4) F64(5) F64(6) F64(7) F64(8)
#define C(i) r += f##i(r);
#define C8(i) C(i##0) C(i##1) C(i##2) C(i##3) C(i##4) C(i##5) C(i##6) C(i##7)
#define C64(i) C8(i##1) C8(i##2) C8(i##3) C8(i##4) C8(i##5) C8(i##6) C8(i##7) C8(i##8)

NOINLINE static void after_cancel(void)
{
	probe("cleanup-handler");
}

static void cleanup(void *arg)
{
	(void)arg;
	after_cancel();
}

NOINLINE static int first_calls(void)
{
	int r = 0;

	C64(1) C64(2) C64(3) C64(4) C64(5) C64(6) C64(7) C64(8)
	return r;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_cleanup_push(cleanup, NULL);
	pthread_barrier_wait(&started);
	sink += first_calls(); /* pthread_cancel arrives meanwhile, most of the time */
	for (;;)
		pthread_testcancel();
	pthread_cleanup_pop(0);
	return NULL;
}

NOINLINE static void after_join(void)
{
	probe("after-join"); /* a first call: the slow path takes the runtime lock */
}

int main(void)
{
	pthread_t thread;
	void *result;

	pthread_barrier_init(&started, NULL, 2);
	pthread_create(&thread, NULL, worker, NULL);
	pthread_barrier_wait(&started);
	usleep(2000); /* under the runtime, the worker is in its first calls by now */
	pthread_cancel(thread);
	pthread_join(thread, &result);
	after_join();
	printf("cancelled %d\n", result == PTHREAD_CANCELED);
	return 0;
}
