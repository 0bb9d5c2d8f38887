/* SPDX-License-Identifier: MIT */
/*
 * Watching the entries of the program's functions that no instrumented code
 * has called yet.
 *
 * The runtime decodes a function when instrumented code first calls it.  A
 * function first reached some other way (a qsort comparator, an exit
 * handler, a callback from any library) would run with its calls unpatched,
 * and a sample in a library it calls would read as a sample in the library
 * the program called last: a wrong context.  So at start every function's
 * first byte becomes a trap byte (trap.h); whoever gets there first (a trap, or the
 * runtime decoding the callee of a first call) puts the byte back, and the
 * function is decoded before any of its instructions runs.
 *
 * Fragments split off other functions (foo.cold) are not watched: they are
 * decoded with the function that jumps to them.
 */
#ifndef DACCE_RT_ENTRIES_H
#define DACCE_RT_ENTRIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "funcs.h"

struct dacce_entry_watch {
	const struct dacce_funcs *funcs;
	/*
	 * By index in funcs->funcs: 0 not watched, else ENTRY_ARMED or, once
	 * put back, ENTRY_DISARMED, | the original first byte.
	 */
	uint16_t *state;
	size_t n_armed;
};

/*
 * Arms the entry of every function of funcs (fragments and PLT stubs
 * excepted) for which skip(fn, ctx) is false.  Writes each page of code
 * once, then makes every core fetch anew.  Returns 0 or a negative errno;
 * on error the entries armed so far stay armed and are handled as usual.
 */
int dacce_entries_arm(struct dacce_entry_watch *w, const struct dacce_funcs *funcs,
		      bool (*skip)(const struct dacce_func *fn, void *ctx), void *ctx);

/*
 * The function whose entry at addr is armed, or NULL.  Safe without any
 * lock: a function is armed once and only ever disarmed.
 */
const struct dacce_func *dacce_entries_armed_at(const struct dacce_entry_watch *w,
						uintptr_t addr);

/*
 * Puts fn's first byte back if it is armed (any thread, any number of
 * times: one of them writes it).  Returns 1 if this call disarmed it, 0 if
 * it was not armed, or a negative errno from the write.
 */
int dacce_entries_disarm(struct dacce_entry_watch *w, const struct dacce_func *fn);

/*
 * With a patch queue open (patch.h) and patches written whole: queues the
 * write of fn's first byte back, if it is armed, so that it goes out in one
 * write with the function's sites; dacce_entries_disarm after the queue is
 * closed then only marks it disarmed.  1 if queued, 0 if not, or a
 * negative errno.
 */
int dacce_entries_queue_disarm(const struct dacce_entry_watch *w, const struct dacce_func *fn);

/*
 * A trap met at addr, the entry of a function already disarmed, that does
 * not hold the function's own byte: a debugger's doing.  gdb removes its
 * breakpoints whenever the program stops, writing back the byte it saw when
 * it inserted them: the trap byte, for a breakpoint on a function not
 * decoded yet; and it may write a breakpoint of its own over the entry while
 * the trap is delivered.  Puts the original byte back.  Returns 1 if addr
 * was such an entry (the thread goes on there), 0 if not, or a negative
 * errno from the write.
 */
int dacce_entries_restore_stray(struct dacce_entry_watch *w, uintptr_t addr);

/*
 * The byte fn's entry had before it was armed: 1 and *byte while it is
 * armed, else 0 (then the byte in memory is the function's own).
 */
int dacce_entries_original(const struct dacce_entry_watch *w, const struct dacce_func *fn,
			   uint8_t *byte);

/* Frees the table (the bytes stay as they are); NULL-safe. */
void dacce_entries_fini(struct dacce_entry_watch *w);

#endif
