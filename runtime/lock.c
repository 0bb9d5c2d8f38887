// SPDX-License-Identifier: MIT
#include "lock.h"

#include <linux/futex.h>
#include <stdbool.h>
#include <sys/syscall.h>
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

void dacce_lock_release(struct dacce_lock *lock)
{
	if (__atomic_exchange_n(&lock->word, 0, __ATOMIC_RELEASE) == 2)
		syscall(SYS_futex, &lock->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void dacce_lock_reset(struct dacce_lock *lock)
{
	__atomic_store_n(&lock->word, 0, __ATOMIC_RELAXED);
}
