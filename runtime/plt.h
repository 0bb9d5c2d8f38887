/* SPDX-License-Identifier: MIT */
/*
 * Where a call through a PLT entry goes.  A slot already bound holds its
 * callee; a lazily bound one still points back into the PLT until the first
 * call through it runs the dynamic loader's resolver, too late for the
 * runtime, which names the edge of a site on that first call.  So the
 * callees of a module's lazily bound slots are looked up once, at start
 * (one thread, no loader lock held), in the global scope as the loader will
 * bind them (dlvsym with the reference's version).  Only callees inside
 * instrumented modules are kept: the rest are boundary nodes either way.
 */
#ifndef DACCE_RT_PLT_H
#define DACCE_RT_PLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "funcs.h"
#include "modules.h"

struct dacce_plt_name {
	uintptr_t slot;	  /* run-time address of the GOT slot */
	uintptr_t callee; /* what the loader will bind it to */
};

struct dacce_plt_names {
	struct dacce_plt_name *slots; /* sorted by slot */
	uint64_t *slot_keys;	      /* slots[i].slot, for the lookup (sorted.h) */
	size_t n;
};

/*
 * The lazily bound slots of module m (its PLT sections in funcs) whose
 * callee wanted(callee, ctx) accepts.  A module that binds its own symbols
 * first (DT_SYMBOLIC) or binds everything at load (BIND_NOW) gets none.
 * 0, or a negative errno (the table is then empty).
 */
int dacce_plt_names_load(const struct dacce_module_info *m, const struct dacce_funcs *funcs,
			 bool (*wanted)(uintptr_t callee, void *ctx), void *ctx,
			 struct dacce_plt_names *out);
void dacce_plt_names_fini(struct dacce_plt_names *names);

/* The callee the loader will bind slot to (looked up at start), or 0 when unknown. */
uintptr_t dacce_plt_names_callee(const struct dacce_plt_names *names, uintptr_t slot);

#endif
