/* SPDX-License-Identifier: MIT */
/*
 * Functions run from copies with their calls' operations inline
 * (relocate.h), when DACCE_RELOCATE=1 asks for it.
 *
 * Each epoch, with the world stopped and the epoch's code in place, every
 * decoded function of a module loaded with the program that has a call
 * site able to go inline and called gets a copy for the epoch's
 * operations, and its entry a `jmp` to it (after an endbr64, kept).  The
 * copy an epoch replaces stays, disarmed: each of its inline calls jumps to
 * the original site instead, and each return point to where the site's
 * code for the new epoch returns (as an old trampoline's return point is
 * forwarded), so a frame entered through it undoes the new operation and
 * goes on in the original.  A thread parked on one of a copy's own
 * instructions is, for the epoch, at the original's; inside an inline
 * operation or at a return point not done yet, not at any (the epoch is
 * put off, as for one half way through a trampoline).
 *
 * All with rt.lock held, except rt_relocate_prebuild.
 */
#ifndef DACCE_RT_RELOCATED_H
#define DACCE_RT_RELOCATED_H

#include <stdbool.h>
#include <stdint.h>

#include "dict.h"
#include "funcs.h"
#include "ops.h"
#include "patch_runs.h"

/* Reads DACCE_RELOCATE (1: move functions; default 0); never under a debugger. */
void rt_relocate_start(bool debugged);
bool rt_relocate_wanted(void);

/*
 * fn (graph node node) was decoded from bytes, its original code, with
 * these sites (graph site indexes): kept for building its copies.
 */
int rt_relocate_keep(const struct dacce_func *fn, uint32_t node, const uint8_t *bytes,
		     const uint32_t *sites, uint32_t n_sites);

/* The operation of an edge in an epoch's dictionary (rt.c's op_for_edge_in). */
typedef int (*rt_relocate_op_fn)(const struct dacce_dict *dict, uint32_t edge,
				 struct dacce_rt_op *op);

/*
 * Before the stop, as rt_prebuild_code: builds the copies the functions
 * need for next's operations, a few functions per hold of rt.lock (takes
 * it itself).
 */
int rt_relocate_prebuild(const struct dacce_dict *next, rt_relocate_op_fn op_for);

/*
 * In the stop, once the new epoch's code is in place (rt_apply_code): each
 * copy in use whose operations changed is disarmed, and the entry pointed
 * at the one built ahead if it fits the epoch (writes to program text go
 * into writes); moved tells of each parked thread's pc that must go on
 * somewhere else.
 */
int rt_relocate_epoch(struct dacce_patch_runs *writes,
		      void (*moved)(uintptr_t from, uintptr_t to, void *ctx), void *ctx);

/*
 * Whether pc is in a copy; then *original is the original's address of the
 * instruction pc is on, or 0 when pc is inside code the copy adds (an inline
 * operation, a return point), and *node the function's graph node.
 */
bool rt_relocated_at(uintptr_t pc, uintptr_t *original, uint32_t *node);

/*
 * In the stop, after rt_relocate_epoch: where a thread parked at pc in a
 * moved function's original goes on, in its copy in use (the same
 * instruction: a loop that never returns runs from the copy too), or 0.
 */
uintptr_t rt_relocated_resume(uintptr_t pc);

#endif
