// SPDX-License-Identifier: MIT
#include "lock.h"

#include <linux/futex.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void futex_wait(uint32_t *word, uint32_t expected)
{
	/* Returns early on a signal or a changed word: the caller looks again. */
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void dacce_lock_acquire(struct dacce_lock *lock)
{
	uint32_t seen = 0;

	if (__atomic_compare_exchange_n(&lock->word, &seen, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return;
	/* Held: say there are waiters, and sleep until it is handed over free. */
	if (seen != 2)
		seen = __atomic_exchange_n(&lock->word, 2, __ATOMIC_ACQUIRE);
	while (seen != 0) {
		futex_wait(&lock->word, 2);
		seen = __atomic_exchange_n(&lock->word, 2, __ATOMIC_ACQUIRE);
	}
}

bool dacce_lock_release(struct dacce_lock *lock)
{
	if (__atomic_exchange_n(&lock->word, 0, __ATOMIC_RELEASE) != 2)
		return false;
	syscall(SYS_futex, &lock->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return true;
}

/*
 * A woken thread needs tens of microseconds to run; the lock is free all
 * that time, and a thread that releases and takes it again in a loop (the
 * policy thread's work in short holds) would take it back every time: gcc's
 * cc1 then waited up to 30 ms for a first call, 0.1 s in a run.  A short
 * spin, then short sleeps: the caller's work can wait, its CPU time
 * should not be spent on waiting (spinning until the woken thread ran took
 * 6 % of python3's start-up samples).  Never on the lock's futex: a wake
 * meant for a waiter could then go to this thread, and the waiter would
 * sleep on.
 */
#define LET_IN_SPINS 256
#define LET_IN_SLEEP_NS 50000
#define LET_IN_NAPS 40 /* a busy machine may take milliseconds to run the woken thread */

void dacce_lock_let_in(const struct dacce_lock *lock)
{
	struct timespec nap = { 0, LET_IN_SLEEP_NS };

	for (int i = 0; i < LET_IN_SPINS; i++) {
		if (__atomic_load_n(&lock->word, __ATOMIC_RELAXED) != 0)
			return;
		__builtin_ia32_pause();
	}
	for (int i = 0; i < LET_IN_NAPS && __atomic_load_n(&lock->word, __ATOMIC_RELAXED) == 0; i++)
		nanosleep(&nap, NULL);
}

void dacce_lock_reset(struct dacce_lock *lock)
{
	__atomic_store_n(&lock->word, 0, __ATOMIC_RELAXED);
}
