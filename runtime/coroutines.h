/* SPDX-License-Identifier: MIT */
/*
 * Coroutines on <ucontext.h>: each context made by makecontext has a
 * ccStack and tail-record stack of its own, and swapcontext and setcontext
 * switch the thread's block between them.
 */
#ifndef DACCE_RT_COROUTINES_H
#define DACCE_RT_COROUTINES_H

#include <stdbool.h>

/*
 * Whether some context's state is saved away from every thread (a
 * suspended coroutine, or the thread's own context while it runs one): an
 * epoch cannot translate it, so epochs wait until none is.
 */
bool dacce_contexts_suspended(void);

#endif
