/* SPDX-License-Identifier: MIT */
/*
 * Each thread's ccStack and tail-record stack, reserved the first time a
 * thread gets a context and kept with its TLS block ever after.
 */
#ifndef DACCE_RT_THREAD_STACKS_H
#define DACCE_RT_THREAD_STACKS_H

#include "tls.h"

/*
 * Gives tls its stacks (cc_base, tc_base), unless it has them: the ones a
 * thread that ended in the same TLS block had, else new reservations.
 * Their tops are left to the caller.  0, or -ENOMEM.
 */
int dacce_thread_stacks_get(struct dacce_tls *tls);

#endif
