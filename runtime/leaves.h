/* SPDX-License-Identifier: MIT */
/*
 * Leaf library calls: calls out of the program to libc functions that cannot
 * call back into it (malloc, free, strlen, memcpy, ...).
 *
 * A call out is otherwise pushed on the ccStack in every epoch, because code
 * a library calls back could not be decoded through an encoded edge.  A call
 * to a leaf needs no such care: it is encoded (DACCE_EDGE_LEAF, graph.h) in
 * the leaf id space, a range of ids no other context uses, so a thread in
 * library code whose id is in that space is inside exactly the leaf call the
 * id names (DACCE_IN_LEAF).  In bash that is most calls out: 35 million
 * pushes of a 200,000-iteration loop.
 *
 * A call is a leaf call when it goes through one of the program's GOT slots
 * (a PLT entry's, or `call *slot(%rip)` with -fno-plt) whose relocation names
 * a function of the list in leaves.c, or straight to that function's address
 * in libc; and only when that name's definition in the global scope is
 * libc's own (a program or a preloaded library defining malloc is called
 * back into by libc's other functions, and is code we may not know).
 */
#ifndef DACCE_RT_LEAVES_H
#define DACCE_RT_LEAVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules.h"

struct dacce_leaves {
	uint64_t *slots;   /* instrumented modules' GOT slots naming leaves, sorted */
	size_t n_slots;
	uint64_t *targets; /* libc addresses of the leaves, sorted */
	size_t n_targets;
};

/*
 * Reads the relocations of the instrumented modules mods[0..n_mods) and asks
 * the dynamic linker where each leaf is defined.  Call before main, while one thread runs (dlsym may run IFUNC
 * resolvers).  Returns 0 or a negative errno; on error the set is empty
 * and every call out stays pushed.
 */
int dacce_leaves_load(const struct dacce_module_info *const *mods, size_t n_mods,
		      struct dacce_leaves *leaves);
void dacce_leaves_fini(struct dacce_leaves *leaves);

/* Whether a call through slot (0: none) to target calls a leaf. */
bool dacce_leaves_is_leaf_call(const struct dacce_leaves *leaves, uintptr_t slot,
			       uintptr_t target);

#endif
