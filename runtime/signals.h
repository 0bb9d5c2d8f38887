/* SPDX-License-Identifier: MIT */
#ifndef DACCE_RT_SIGNALS_H
#define DACCE_RT_SIGNALS_H

#include <signal.h>
#include <stdint.h>

/* The kernel's rt_sigaction argument on x86-64 (not glibc's struct sigaction). */
struct dacce_kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/*
 * The mask a program asks for (with how, as sigprocmask takes it), less
 * the runtime's trap signal (trap.h) and stop signal: set itself when it blocks neither,
 * else copy, filled in.
 */
const sigset_t *dacce_signals_program_mask(int how, const sigset_t *set, sigset_t *copy);

/*
 * Wraps the handlers installed before the runtime started (by constructors,
 * or by libraries as they loaded), as sigaction would have: a signal then
 * runs them as a nested root too.  Call once the runtime is enabled.
 */
void dacce_signals_adopt_installed(void);

/*
 * A handler of the trap signal installed past sigaction (a raw rt_sigaction
 * system call) would take the runtime's traps: the runtime's goes back and
 * chains to it, wrapped.  The policy thread asks every time it wakes up, so
 * the window is at most its interval.
 */
void dacce_signals_reclaim_trap(void);

#endif
