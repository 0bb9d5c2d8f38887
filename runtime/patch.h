/* SPDX-License-Identifier: MIT */
/*
 * Rewriting instructions that other threads may be executing.
 *
 * The protocol is the one the kernel uses for its own text: put a trap byte
 * (trap.h; the kernel uses int3) on the first byte, write the tail, then the
 * first byte, with every core made to serialise its instruction stream
 * between steps (membarrier SYNC_CORE).  A thread that meets the trap byte
 * meanwhile traps; the trap signal's handler moves it to where the new
 * instruction would have taken it.  Bytes are written
 * through /proc/thread-self/mem, so page protections never change: no page ever
 * becomes writable, and no executing page ever loses PROT_EXEC.
 */
#ifndef DACCE_RT_PATCH_H
#define DACCE_RT_PATCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a thread that traps on the patch site is made to do instead. */
enum dacce_patch_effect {
	DACCE_PATCH_JUMP, /* continue at target */
	DACCE_PATCH_CALL, /* push return_to, continue at target */
};

struct dacce_patch {
	uintptr_t addr;
	const uint8_t *bytes; /* the new instruction */
	size_t len;	      /* 1..15, all within one instruction */
	enum dacce_patch_effect effect;
	uintptr_t target;
	uintptr_t return_to; /* DACCE_PATCH_CALL only */
};

/*
 * A permanent trap byte (a site we emulate) met by a thread: the hook moves
 * the thread on by editing the context and returns 1, or returns 0 if the
 * address is not one of its sites.  It runs in the trap signal's handler.
 * It is also asked when the byte at trap_at is no longer the trap byte (a
 * debugger may have written its own breakpoint there since the fault).
 */
typedef int (*dacce_trap_hook)(void *ucontext, uintptr_t trap_at);
void dacce_patch_set_trap_hook(dacce_trap_hook hook);
/* Under DACCE_LOG a program dying of its own undefined instruction is told too (patch.c). */
void dacce_patch_set_verbose(bool verbose);

/*
 * Installs the trap signal's handler (trap.h) and registers for core
 * serialisation.
 * Returns 0, or a negative errno (the caller then must not patch live code).
 */
int dacce_patch_init(void);

/*
 * The program's own disposition of the trap signal: ours stays installed and passes
 * traps that are not ours to it.  old (may be NULL) gets the previous one.
 */
void dacce_patch_chain_trap_signal(const struct sigaction *act, struct sigaction *old);

/*
 * A handler of the trap signal installed past the interposed calls (a raw
 * rt_sigaction system call) takes the runtime's traps: ours is put back.
 * 1 when it had to (*theirs then holds the handler it displaced, for the
 * caller to chain), 0 when ours was in place, or a negative errno.
 */
int dacce_patch_reclaim_trap_signal(struct sigaction *theirs);

/* Applies one patch.  Callers serialise patches (one at a time). */
int dacce_patch_apply(const struct dacce_patch *patch);

/*
 * Queued patches: between open and close (nested pairs count as one),
 * dacce_patch_submit only queues; close applies the queue as one patch of
 * many sites (the same protocol, serialising every core three times in all),
 * as does a full queue.  The sites must not overlap, and nothing may count
 * on a queued patch being in place before close.  Outside a queue, submit
 * applies at once.  Close returns 0 or the first write's error (the sites
 * of the failed flush are left as they were).
 */
void dacce_patch_queue_open(void);
int dacce_patch_queue_close(void);
int dacce_patch_submit(const struct dacce_patch *patch);

/*
 * Whether the calling thread is the only one that runs the program's code
 * (no thread created yet; the runtime's own never run it).  Patches are
 * then written whole, one write per run of them and one core serialisation
 * per batch, with no int3 steps: nobody can fetch them half written.
 */
void dacce_patch_sole_thread(bool sole);

/* Whether this thread's patches are written whole now (the above, and not a foreign writer). */
bool dacce_patch_writes_whole(void);

/* Whether a patch of the open queue covers addr. */
bool dacce_patch_queue_covers(uintptr_t addr);
/*
 * Between begin and end, patches made by the calling thread take the int3
 * steps and serialise every core even in sole-thread mode: it is not the
 * thread that runs the program's code (the policy thread rebuilding dispatch
 * code while the program runs), so that thread may be fetching the very
 * instruction being written.
 */
void dacce_patch_foreign_begin(void);
void dacce_patch_foreign_end(void);
/* Writes to code made so far: one per patch written whole, three per patch in steps. */
unsigned long dacce_patch_writes(void);

/* Makes the instruction at addr trap (a permanent trap byte for the trap hook). */
int dacce_patch_trap(uintptr_t addr);

/* Writes bytes that no thread can be executing yet (fresh code, dead sites). */
int dacce_patch_write_quiet(uintptr_t addr, const void *bytes, size_t len);

/*
 * Many writes with the world stopped: open the process's memory once, write,
 * close it (when >= 0), then dacce_patch_sync_cores() before any thread runs
 * the code.  Open gives -1 when the process may not open its own memory (it
 * dropped privileges): writes then add write permission to the page for the
 * copy.  Other negative values are errors.
 */
int dacce_patch_mem_open(void);
/*
 * Around many writes on one thread (the runtime's lock held): the kept
 * descriptor of the process's memory is checked once between them.
 */
void dacce_patch_batch_begin(void);
void dacce_patch_batch_end(void);

/*
 * Opens the calling thread's kept descriptor of its memory now rather than
 * at its first write: for the policy thread, whose first write comes while
 * the program runs beside it (keptfd.h says why that matters).
 */
int dacce_patch_mem_prepare(void);

/* Closes the calling thread's kept descriptor of its memory (at thread exit). */
void dacce_patch_thread_exit(void);
int dacce_patch_mem_write(int mem, uintptr_t addr, const void *bytes, size_t len);

/* Every core serialises its instruction fetch (membarrier SYNC_CORE). */
void dacce_patch_sync_cores(void);

#endif
