// SPDX-License-Identifier: MIT
/*
 * pthread_cancel through patched frames: glibc unwinds the cancelled thread
 * from inside itself (libgcc_s's _Unwind_ForcedUnwind, runtime/cancel.h).
 * The destructors of the thread's frames must run as natively, with their
 * frames' contexts, whether the thread is cancelled blocked in a system
 * call (deferred) or at pthread_testcancel, and in a second thread after
 * the first (the hook stays).
 */
#include <pthread.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static pthread_barrier_t ready;

struct Noisy {
	const char *tag;
	~Noisy() { probe(tag); }
};

NOINLINE static void wait_forever(void)
{
	Noisy n{ "dtor-wait" };

	pthread_barrier_wait(&ready);
	for (;;)
		pause(); /* a cancellation point */
}

NOINLINE static void spin_until_cancelled(void)
{
	Noisy n{ "dtor-spin" };

	pthread_barrier_wait(&ready);
	for (;;) {
		sink++;
		pthread_testcancel();
		usleep(100);
	}
}

NOINLINE static void middle(int how)
{
	Noisy n{ "dtor-middle" };

	if (how == 0)
		wait_forever();
	else
		spin_until_cancelled();
	sink++;
}

static void *worker(void *arg)
{
	Noisy n{ "dtor-worker" };

	middle((int)(long)arg);
	return NULL;
}

NOINLINE static void cancel_one(long how)
{
	pthread_t t;
	void *result;

	pthread_barrier_init(&ready, NULL, 2);
	pthread_create(&t, NULL, worker, (void *)how);
	pthread_barrier_wait(&ready);
	pthread_cancel(t);
	pthread_join(t, &result);
	pthread_barrier_destroy(&ready);
	probe(result == PTHREAD_CANCELED ? "joined-cancelled" : "joined-other");
}

int main()
{
	cancel_one(0);
	cancel_one(1);
	probe("end");
	return 0;
}
