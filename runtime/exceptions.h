/* SPDX-License-Identifier: MIT */
/*
 * Exceptions through patched frames (exceptions.c): the unwinder is shown the
 * stack as it would be without the runtime.
 */
#ifndef DACCE_RT_EXCEPTIONS_H
#define DACCE_RT_EXCEPTIONS_H

/*
 * Gives every return-address slot of this thread's stack that holds
 * generated code's address the original return address, recorded for
 * exception: an _Unwind_Exception, or DACCE_UNWIND_EXIT for the forced
 * unwinding pthread_exit is about to start (its exception is glibc's).
 */
void dacce_unwind_show_native(const void *exception);

extern const char dacce_unwind_exit_key;
#define DACCE_UNWIND_EXIT ((const void *)&dacce_unwind_exit_key)

/* Frees what the thread recorded (a thread left by pthread_exit leaves its records behind). */
void dacce_unwind_thread_end(void);

/* Where a landing pad is sent first (exceptions_landing.S). */
void dacce_unwind_landing(void);

#endif
