/* SPDX-License-Identifier: MIT */
/*
 * The runtime's mutex: a futex word changed by atomic instructions, always.
 * glibc's default pthread mutex (and its internal locks) skip the atomics
 * while glibc believes the process has one thread (__libc_single_threaded),
 * and the runtime makes it believe so again after starting its policy
 * thread (single_thread.h): a pthread mutex shared by the policy thread and
 * the program's thread would then let both in.  Not recursive; taking it is
 * no cancellation point.
 */
#ifndef DACCE_RT_LOCK_H
#define DACCE_RT_LOCK_H

#include <stdbool.h>
#include <stdint.h>

struct dacce_lock {
	uint32_t word; /* 0 free, 1 held, 2 held with waiters */
};

#define DACCE_LOCK_INIT { 0 }

void dacce_lock_acquire(struct dacce_lock *lock);
/* Returns whether a waiter was woken. */
bool dacce_lock_release(struct dacce_lock *lock);
/*
 * After a release that woke a waiter: waits, briefly, until another thread
 * holds the lock, so that the caller's next acquire queues behind it instead
 * of taking the lock back before the woken thread runs.
 */
void dacce_lock_let_in(const struct dacce_lock *lock);

/* Whether a thread waits for the lock (its holder may then cut its work short). */
static inline bool dacce_lock_waited_for(const struct dacce_lock *lock)
{
	return __atomic_load_n(&lock->word, __ATOMIC_RELAXED) == 2;
}
/* Free again: in a fork child, whose other threads (one may have held it) are gone. */
void dacce_lock_reset(struct dacce_lock *lock);

#endif
