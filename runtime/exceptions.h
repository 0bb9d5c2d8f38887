/* SPDX-License-Identifier: MIT */
/*
 * Exceptions through patched frames (exceptions.c): the unwinder is shown the
 * stack as it would be without the runtime.
 */
#ifndef DACCE_RT_EXCEPTIONS_H
#define DACCE_RT_EXCEPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <unwind.h>

/*
 * Gives every return-address slot of this thread's stack that holds
 * generated code's address the original return address, recorded for
 * exception: an _Unwind_Exception, or DACCE_UNWIND_EXIT for the forced
 * unwinding pthread_exit is about to start (its exception is glibc's).
 */
void dacce_unwind_show_native(const void *exception);

/*
 * Gives every slot shown for exception generated code's value back (the
 * frames are still there and return through it), and forgets them.
 */
void dacce_unwind_put_back(const void *exception);

/* What walking a stack takes from libgcc_s: NULL when it cannot be found. */
struct dacce_unwinder {
	_Unwind_Reason_Code (*backtrace)(_Unwind_Trace_Fn trace, void *arg);
	_Unwind_Ptr (*get_ip)(struct _Unwind_Context *);
	_Unwind_Word (*get_cfa)(struct _Unwind_Context *);
};
const struct dacce_unwinder *dacce_unwinder(void);

/* The personality routines the runtime stands in front of: their addresses, and how many. */
#define DACCE_UNWIND_PERSONALITIES 2
size_t dacce_unwind_personalities(uintptr_t out[DACCE_UNWIND_PERSONALITIES]);

extern const char dacce_unwind_exit_key;
#define DACCE_UNWIND_EXIT ((const void *)&dacce_unwind_exit_key)

/* Frees what the thread recorded (a thread left by pthread_exit leaves its records behind). */
void dacce_unwind_thread_end(void);

/* Where a landing pad is sent first (exceptions_landing.S). */
void dacce_unwind_landing(void);

#endif
