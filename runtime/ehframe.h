/* SPDX-License-Identifier: MIT */
/*
 * The unwind rules of a loaded module, read straight from its mapped
 * .eh_frame_hdr and .eh_frame, as the C++ unwinder reads them.
 *
 * Why not libdw: its lookups allocate (an FDE cache in a tsearch tree, the
 * frame they return).  The runtime asks for rules while decoding a function
 * on its first entry, and that entry may come from a signal handler that
 * interrupted malloc with its arena locked: the lookup would wait for that
 * lock forever.  This reader allocates nothing, takes no lock, and never
 * reads outside the memory it was given, whatever the tables say.
 */
#ifndef DACCE_RT_EHFRAME_H
#define DACCE_RT_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "cfa.h"

struct dacce_eh_frame {
	uintptr_t hdr;		 /* .eh_frame_hdr, run-time address */
	uintptr_t lo, hi;	 /* every read stays in [lo, hi) */
	uintptr_t table;	 /* its sorted (start, FDE) pairs, 4-byte offsets from hdr */
	size_t n_entries;
};

/*
 * Checks the header at hdr (run-time address) whose module maps [lo, hi)
 * readable around it: 0, or -ENOENT when it has no search table this
 * reader can use (another encoding, or none).
 */
int dacce_eh_frame_init(struct dacce_eh_frame *eh, uintptr_t hdr, uintptr_t lo, uintptr_t hi);

/*
 * The row in effect at addr (run-time), and the addresses [*row_lo, *row_hi)
 * it holds for.  0; -ENOENT: no FDE covers addr; -ENOTSUP: the CFA is an
 * expression, or an instruction this reader does not know (rules of single
 * registers given by expressions read DACCE_CFA_UNDEFINED); -EINVAL: the
 * tables are malformed.
 */
int dacce_eh_frame_row(const struct dacce_eh_frame *eh, uintptr_t addr, struct dacce_cfa_row *row,
		       uintptr_t *row_lo, uintptr_t *row_hi);

/*
 * The same answers for questions asked in increasing address order (the
 * tail sites of one function, as it is decoded): each goes on in the FDE's
 * program from where the last one stopped, rather than from its start.
 * Any other order works too (the walk starts over).  The tables must stay
 * mapped while the walk is used.  _new returns NULL when out of memory.
 */
struct dacce_eh_frame_walk;
struct dacce_eh_frame_walk *dacce_eh_frame_walk_new(const struct dacce_eh_frame *eh);
void dacce_eh_frame_walk_free(struct dacce_eh_frame_walk *walk);
int dacce_eh_frame_walk_row(struct dacce_eh_frame_walk *walk, uintptr_t addr,
			    struct dacce_cfa_row *row, uintptr_t *row_lo, uintptr_t *row_hi);

#endif
