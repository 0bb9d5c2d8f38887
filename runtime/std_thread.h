/* SPDX-License-Identifier: MIT */
/*
 * std::thread: the thread's root is the program's routine (the state's
 * _M_run), not libstdc++'s execute_native_thread_routine that calls it.
 */
#ifndef DACCE_RT_STD_THREAD_H
#define DACCE_RT_STD_THREAD_H

#include <stdint.h>

/*
 * Called by the pthread_create wrapper with the argument it was given: when
 * libstdc++'s std::thread start is creating this thread, *arg (its state) is
 * replaced by a stand-in that runs the state's _M_run, then leaves the
 * thread's context, and the return is _M_run's address, the thread's root.
 * 0 otherwise (or when memory ran out: the thread's context is then partial,
 * as before).  Every stand-in given out is freed by the thread that runs it,
 * or by dacce_std_thread_unclaim when the thread was never made.
 */
uintptr_t dacce_std_thread_claim(void **arg);

/* The thread was not made: *arg is libstdc++'s state again. */
void dacce_std_thread_unclaim(void **arg);

#endif
