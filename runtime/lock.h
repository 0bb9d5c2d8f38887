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

#include <stdint.h>

struct dacce_lock {
	uint32_t word; /* 0 free, 1 held, 2 held with waiters */
};

#define DACCE_LOCK_INIT { 0 }

void dacce_lock_acquire(struct dacce_lock *lock);
void dacce_lock_release(struct dacce_lock *lock);
/* Free again: in a fork child, whose other threads (one may have held it) are gone. */
void dacce_lock_reset(struct dacce_lock *lock);

#endif
