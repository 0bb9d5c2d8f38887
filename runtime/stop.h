/* SPDX-License-Identifier: MIT */
/*
 * Stopping every instrumented thread at a point where its context can be
 * translated (a re-encoding), and letting them go again.
 *
 * The stopper holds the registry lock and sends each thread a signal.  The
 * handler parks the thread unless it is running runtime code (its context
 * may be half updated there): then it answers "busy" and the stopper tries
 * again a little later.  Parked threads wait in the handler until the world
 * is resumed, and then continue at resume_pc when the stopper set one (a
 * thread parked at the entry of code that was replaced).
 *
 * Signals that interrupt a system call restart it when the kernel can
 * (SA_RESTART); the calls the kernel never restarts after a handler (sleeps,
 * poll, epoll_wait) are made again by their wrappers (waits.c).
 */
#ifndef DACCE_RT_STOP_H
#define DACCE_RT_STOP_H

#include <stdbool.h>

#include "thread_registry.h"

enum dacce_stop_answer {
	DACCE_STOP_ASKED,
	DACCE_STOP_PARKED,
	DACCE_STOP_BUSY,
};

/* Installs the stop signal's handler.  0 or -errno. */
int dacce_stop_init(void);

/* The signal the runtime keeps for itself. */
int dacce_stop_signal(void);

/*
 * With the registry locked (dacce_threads_lock) by a thread that is not
 * registered: parks every other registered thread.  Returns 0 when all are
 * parked, -EAGAIN when some stayed busy or did not answer (then none is).
 */
int dacce_stop_world(void);

/* A thread marked itself gone: a stopper waiting for its answer looks again. */
void dacce_stop_thread_gone(void);

/*
 * Whether threads are being stopped or are parked: nothing may then take a
 * lock they could hold (libc's malloc, stdio).
 */
bool dacce_world_stopping(void);
/* Lets every parked thread go on (each at its resume_pc, if set). */
void dacce_resume_world(void);

#endif
