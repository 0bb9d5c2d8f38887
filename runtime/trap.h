/* SPDX-License-Identifier: MIT */
/*
 * The byte the runtime writes where a thread must stop and be moved on: a
 * site it emulates, an entry it watches, a live instruction half rewritten,
 * a target dispatch code does not know yet.
 *
 * It is 0xd6, an opcode undefined in 64-bit mode: the processor raises #UD
 * and the kernel sends SIGILL (ILL_ILLOPN) with the pc on the byte itself.
 * It used to be int3, whose SIGTRAP belongs to debuggers: gdb stops on it
 * and by default does not pass it on, so the thread went on past the int3,
 * inside an instruction, and the program crashed under gdb (attached too);
 * and `handle SIGTRAP pass` passes gdb's own breakpoint traps as well, which
 * killed the program at the loader's first one.  gdb passes SIGILL by
 * default: `handle SIGILL nostop noprint` makes it silent (docs/runtime.md).
 */
#ifndef DACCE_RT_TRAP_H
#define DACCE_RT_TRAP_H

#include <signal.h>

#define DACCE_TRAP_BYTE 0xd6
/* A debugger's software breakpoint (int3), which the runtime meets in code it reads. */
#define DACCE_INT3 0xcc
#define DACCE_TRAP_SIGNAL SIGILL

/*
 * Every signal but the trap signal, for the runtime's own blocking (its
 * lock, its threads, its handlers).  Runtime work may run the program's
 * code: a library the runtime uses calls a function the program defines in
 * libc's place (malloc), whose entry or sites may trap.  The kernel kills a
 * thread that meets a trap with its signal blocked.
 */
static inline void dacce_signals_but_trap(sigset_t *set)
{
	sigfillset(set);
	sigdelset(set, DACCE_TRAP_SIGNAL);
}

#endif
