/* SPDX-License-Identifier: MIT */
/*
 * What generated code is, told to the tools that meet it: perf (the perf
 * map, perfmap.h: every piece, at once) and debuggers (gdb's JIT interface,
 * gdbjit.h: the code return addresses point into, in batches, since each
 * batch stops a process under gdb).
 *
 * Each piece is named after what it serves (`dacce:call@main+0x1f`: the
 * call trampoline of the site at main+0x1f).  A return point runs on its
 * caller's frame (a call's trampoline only uses the red zone; a setjmp
 * return thunk runs just after the call returned), so it also gets the
 * unwind row of the caller at the call, from the module's .eh_frame: gdb
 * then walks from the callee through it to the caller's caller.  Code a
 * thread only passes through (first-call stubs, dispatch code, landings,
 * tail jumps) is for perf only: naming all of it for gdb doubled the work
 * and gdb meets it only with a thread stopped right there.
 *
 * All with rt.lock held.
 */
#ifndef DACCE_RT_CODE_NAMES_H
#define DACCE_RT_CODE_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* Reads DACCE_GDB_JIT (0: nothing for debuggers). */
void rt_code_names_start(void);

/* [start, start + len) is code of the given kind (a string for the life of the process) for site. */
void rt_code_named(const char *kind, uintptr_t start, size_t len, uintptr_t site);

/*
 * The same for code return addresses point into, which runs on the frame of
 * the program's instruction at row_at (0: no frame of the program's, as for
 * the tail stub; site 0: it serves no one site).  Perf and debuggers.
 */
void rt_code_returned_to(const char *kind, uintptr_t start, size_t len, uintptr_t site,
			 uintptr_t row_at);

/*
 * The same for code whose unwind rules its maker writes (DWARF call frame
 * instructions, gdbjit.h): rules must live as long as the process.
 */
void rt_code_returned_to_rules(const char *kind, uintptr_t start, size_t len,
			       const uint8_t *rules, size_t n_rules);

/* Tells a debugger about the return points named since the last time. */
void rt_code_names_flush(void);

/*
 * The same, for a process a debugger has run from the start: at once for the
 * first RT_CODE_NAMES_EAGER batches (a breakpoint soon after start finds
 * every return point named), then unless the last time was less than
 * RT_CODE_NAMES_SPACING_MS ago.  gdb takes longer over each batch as they
 * add up (it looks at every module again): one batch per first call made
 * CPython's start-up under gdb take minutes instead of a second.
 */
#define RT_CODE_NAMES_EAGER 128
#define RT_CODE_NAMES_SPACING_MS 20
void rt_code_names_flush_due(void);

/* The name of kind's code for site, as the perf map and gdb show it. */
void rt_code_name(const char *kind, uintptr_t site, char *name, size_t len);

#endif
