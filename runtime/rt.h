/* SPDX-License-Identifier: MIT */
/*
 * The runtime's process-wide state and its entry points for start-up code
 * (start.c).  Scope today (docs/runtime.md): the main program's code is
 * instrumented; calls out of it are edges to boundary nodes, always pushed,
 * so that code entered back from outside decodes as a partial context,
 * never as a wrong one.
 */
#ifndef DACCE_RT_RT_H
#define DACCE_RT_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"

/* Brings the runtime up for a program whose main is main_fn.  0 or -errno. */
int dacce_rt_start(uintptr_t main_fn);

bool dacce_rt_enabled(void);

/* After dacce_rt_start returned -ENOTSUP: why the program is left alone, one line. */
const char *dacce_rt_refusal(void);

/* The root edge of a thread (kind DACCE_ROOT_SITE_MAIN or _THREAD) starting in fn. */
int dacce_rt_root_edge(int root_kind, uintptr_t fn, uint32_t *edge);

/* Gives this thread its stacks and starts its context at the root edge. */
int dacce_rt_thread_begin(uint32_t root_edge);

/*
 * Starts a new context with root_edge on the stacks the thread's block
 * points at now (a coroutine's: coroutines.c), in runtime work.  0, or a
 * negative errno (-EINVAL: no stacks).
 */
int dacce_rt_context_begin(uint32_t root_edge);

/*
 * The thread leaves instrumented code for good (main returned, a thread
 * routine returned): whatever runs later on it decodes as partial.
 */
void dacce_rt_thread_outside(void);

/*
 * Undoes dacce_rt_thread_outside while the frames it left run code again
 * (C++ cleanups of a pthread_exit, exceptions.c): false when the thread
 * was not outside.
 */
bool dacce_rt_thread_inside_again(void);

/*
 * setjmp recorded this thread's context block for env; longjmp to env puts
 * it back.  A jump with no usable mark leaves the thread's context partial.
 * ret_slot holds setjmp's return address: mark_save may point it at a thunk
 * that sends a second return (from any longjmp, glibc's internal ones too)
 * to dacce_setjmp_again (setjmp_stubs.S), which calls dacce_rt_setjmp_again
 * with the original return address and the stack pointer there; that
 * rewinds the context and returns where to go on.
 */
void dacce_rt_mark_save(const void *env, uintptr_t *ret_slot, bool context);
void dacce_rt_mark_rewind(const void *env);
/*
 * getcontext marks its ucontext (context true) as setjmp its jmp_buf; when
 * setcontext or swapcontext enters a context no coroutine record knows,
 * this puts the mark back if ucp has one whose stack pointer is the one the
 * context holds (saved_sp): true then, with jump_sp (the caller's frame)
 * telling samplers that the frames are not the landing's yet.  False, with
 * nothing changed, for any other context (a signal handler's, one copied).
 */
bool dacce_rt_context_rewind(const void *ucp, uintptr_t saved_sp, uintptr_t jump_sp);
uintptr_t dacce_rt_setjmp_again(uintptr_t ret, uintptr_t sp);
void dacce_setjmp_again(void);

/*
 * A signal handler starts as a nested root on top of the interrupted
 * context (at pc).  Returns 1 when an entry was pushed (then leave it with
 * dacce_rt_signal_leave), 0 when the thread has no context.
 */
/*
 * The slots just above the tops of the two stacks, as the signal found
 * them: generated code interrupted half way through a push has written its
 * entry there without publishing it yet, and the handler's own pushes would
 * write over it.  Leave puts them back.
 */
struct dacce_rt_signal_save {
	struct dacce_cc_entry cc_slot;
	uint8_t tc_slot[48];
	bool over_code; /* it interrupted generated code half way (threads.h) */
	uint64_t jump_sp; /* a longjmp under way in the interrupted code (tls.h) */
};

/*
 * A handler's root on top of the interrupted context: *pc is where the
 * signal interrupted the thread, restorer where the handler returns (the
 * signal trampoline).  A pc on an instruction of a function's copy becomes
 * the original's same instruction (relocated.h): the handler and unwinders
 * then see the program's own code, and the thread resumes there.  1 when
 * pushed, 0 when the thread has no context.
 */
int dacce_rt_signal_enter(uint32_t root_edge, uintptr_t *pc, uintptr_t restorer,
			  struct dacce_rt_signal_save *save);
void dacce_rt_signal_leave(uint32_t root_edge, const struct dacce_rt_signal_save *save);

/*
 * A thread of the runtime's own that is about to run program code (the
 * exit handlers, when it is the last thread): stacks and a partial context.
 */
void dacce_rt_thread_partial(void);

/*
 * The main thread before main: constructors are program code, instrumented
 * like the rest, and run with a partial context (main then starts it anew).
 */
void dacce_rt_thread_before_main(void);

/* Frees the thread's stacks (at thread exit). */
void dacce_rt_thread_end(void);

/*
 * The return addresses of this thread's context, innermost first, as an
 * uninstrumented run would have them, from the function that called through
 * the boundary edge on top of the ccStack out to the root.  ret is the
 * caller's return address (__builtin_return_address(0) of the public entry
 * point): a caller that did not come through that edge (code the runtime
 * never instrumented) has a partial context.  Returns the count or a
 * negative errno (-ENODATA for a partial context).
 */
int dacce_rt_backtrace(void **buffer, int size, uintptr_t ret);

/* The snapshot API (include/dacce.h): 0 or a count, else a negative errno.  ret: as above. */
struct dacce_context;
int dacce_rt_context_get(struct dacce_context *ctx, uintptr_t ret);
int dacce_rt_context_decode(const struct dacce_context *ctx, void **buffer, int size);

/* Log a one-line message when DACCE_LOG is set (or always for errors). */
void dacce_rt_log(bool error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
