/* SPDX-License-Identifier: MIT */
/*
 * The threads that run instrumented code, so that a re-encoding can stop
 * them all and translate each one's context.  A thread registers before its
 * context is first set (so no state escapes a re-encoding) and leaves when
 * it ends.  Each entry lives in the thread's own static TLS.
 */
#ifndef DACCE_RT_THREAD_REGISTRY_H
#define DACCE_RT_THREAD_REGISTRY_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "marks.h"
#include "tls.h"

#define DACCE_THUNK_CACHE 8
#define DACCE_HANDLER_PCS 8

struct dacce_thread {
	struct dacce_thread *next, *prev;
	pid_t tid;
	struct dacce_tls *tls;
	bool registered;
	atomic_bool gone;	/* ending: skip it, it runs no more instrumented code */
	/*
	 * Runtime code is running on the thread (slow paths, start-up, signal
	 * wrappers): its context may be half updated or not match its pc, so a
	 * stop must wait until it is out.  Only the thread itself changes it.
	 */
	volatile int in_runtime;
	/*
	 * Signal handlers running on the thread whose interrupted code is half
	 * way through generated code: its state is half updated, in registers
	 * and an unpublished slot the translation cannot see, so no epoch may
	 * change the operations it is carrying out (rt.c, signal enter/leave).
	 */
	int handlers_over_code;
	/* A thread of the runtime's own (the policy thread): never adopted (rt.c). */
	bool runtime_own;
	/*
	 * Signal handlers that ran on the thread: the stop signal's and the
	 * program's.  A blocking call the kernel does not restart (waits.c)
	 * is made again when only the first changed while it waited.
	 */
	volatile unsigned stops_taken, handlers_run;
	/*
	 * setjmp marks (marks.h, rt.c), and the thunks this thread's setjmp
	 * calls returned through: recorded without the runtime's lock.
	 */
	struct dacce_marks marks_at, marks_by_return;
	uintptr_t thunk_ret[DACCE_THUNK_CACHE], thunk[DACCE_THUNK_CACHE];
	/*
	 * setjmp is recording a mark: a program's signal handler arriving
	 * then is put off until it is done (signals.c), the signal kept
	 * pending and blocked in deferred.  A handler that cannot wait (a
	 * fault, SA_RESETHAND) and calls setjmp or longjmp meanwhile leaves
	 * the marks lost: longjmp then reads partial until setjmp starts
	 * afresh.
	 */
	volatile int marking;
	volatile bool marks_lost, has_deferred;
	sigset_t deferred;
	/*
	 * The trap signal sent to the thread (kill, tgkill) while it ran
	 * runtime work, where that signal is not blocked (trap.h): the
	 * program's handler gets it when the work is over (patch.c).
	 */
	volatile bool trap_signal_deferred;
	siginfo_t trap_signal_info;
	/* Parked by a stop (stop.c): nothing of the program may run on it then. */
	volatile bool parked;
	/* The stop protocol's fields (stop.c). */
	atomic_int answer;	/* enum dacce_stop_answer */
	atomic_uint answered_round;
	uintptr_t pc;		/* where the stop found it */
	uintptr_t resume_pc;	/* where it goes on (0: where it was) */
	/*
	 * Where the signal handlers running on the thread interrupted it, by
	 * the ccStack index of each one's root: dacce_backtrace shows, as
	 * glibc's backtrace() does, the signal trampoline and the interrupted
	 * pc below a handler's frames.  Entries at or above a new root's index
	 * are stale (a handler left by a jump); deeper nesting is not kept.
	 */
	struct dacce_handler_pc {
		uint32_t cc_index;
		uintptr_t pc, restorer;
	} handler_pcs[DACCE_HANDLER_PCS];
	uint32_t n_handler_pcs;
	/* A trap whose byte was gone, sent back to run the whole instruction (patch.c). */
	uintptr_t trap_rerun_at;
	unsigned long trap_rerun_writes;
};

/* Lets a program's signal handlers put off by a mark being recorded run now. */
void dacce_thread_release_deferred(struct dacce_thread *thread);

/*
 * Threads the kernel counts in the process (/proc/self/task), or -1.  The
 * first opens the directory for the call: for the program's threads.  The
 * second reads it through a descriptor kept open (keptfd.h): for the
 * runtime's own threads, which run beside the program's.
 */
int dacce_threads_in_process(void);
struct dacce_kept_fd;
int dacce_threads_in_process_kept(struct dacce_kept_fd *tasks);

/* This thread's entry (registered or not). */
struct dacce_thread *dacce_thread_self(void);

/* Adds this thread.  Takes the registry lock: never call it with the world stopped. */
void dacce_thread_register(void);

/* Marks this thread gone, then removes it (waits for a stop in progress to end). */
void dacce_thread_unregister(void);

/* The registry lock: held by whoever stops the world, for as long as it is stopped. */
void dacce_threads_lock(void);
void dacce_threads_unlock(void);

/* The first registered thread (lock held); follow ->next. */
struct dacce_thread *dacce_threads_first(void);

/* In a fork child: the registry holds only the calling thread. */
void dacce_threads_after_fork(void);

/* Sends the deferred trap signal (trap_signal_deferred) to the thread again. */
void dacce_thread_send_deferred_trap_signal(struct dacce_thread *self);

/* Runtime code entered / left on this thread (see in_runtime). */
/* The TLS block mirrors it for samplers (tls.h: runtime_depth). */
static inline void dacce_runtime_enter(void)
{
	dacce_thread_self()->in_runtime++;
	dacce_tls_self()->runtime_depth++;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void dacce_runtime_leave(void)
{
	struct dacce_thread *self = dacce_thread_self();

	atomic_signal_fence(memory_order_seq_cst);
	dacce_tls_self()->runtime_depth--;
	if (--self->in_runtime == 0 && self->trap_signal_deferred)
		dacce_thread_send_deferred_trap_signal(self);
}

#endif
