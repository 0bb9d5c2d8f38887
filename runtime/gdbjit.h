/* SPDX-License-Identifier: MIT */
/*
 * gdb's JIT interface: names and unwind rules for the code the runtime
 * makes, so that a debugger without user/dacce-gdb.py still walks through
 * it.  Without them gdb's `bt` stops at the first return address in a
 * trampoline (`?? ()`).  With them it names the code after what it serves,
 * as the perf map does (`dacce:call@main+0x1f`), and steps out of a call's
 * trampoline or dispatch code with the rules of the caller at the call
 * site: that code runs on its caller's frame (it only uses the red zone), so
 * the caller's frame is found exactly as at the call.
 *
 * Each batch of code becomes a small ELF object in memory (sections with no
 * bytes covering the code, a symbol per piece, a .debug_frame with an FDE
 * per piece that has rules), linked into __jit_debug_descriptor's list;
 * gdb reads the list when it attaches and at each call of
 * __jit_debug_register_code, where it keeps a breakpoint.  Objects are
 * never unregistered: the code cache is never unmapped either.
 */
#ifndef DACCE_RT_GDBJIT_H
#define DACCE_RT_GDBJIT_H

#include <stddef.h>
#include <stdint.h>

#include "cfa.h"

/* gdb's declarations (its manual, "JIT Interface"): the layout gdb reads. */
enum { JIT_NOACTION, JIT_REGISTER_FN, JIT_UNREGISTER_FN };

struct jit_code_entry {
	struct jit_code_entry *next_entry;
	struct jit_code_entry *prev_entry;
	const char *symfile_addr;
	uint64_t symfile_size;
};

struct jit_descriptor {
	uint32_t version;
	uint32_t action_flag;
	struct jit_code_entry *relevant_entry;
	struct jit_code_entry *first_entry;
};

/* The runtime's list, under the name gdb looks for in libdacce.so's symbol table (not exported). */
extern struct jit_descriptor __jit_debug_descriptor;

struct dacce_gdbjit_object;

/*
 * A new, empty batch for about expected pieces (room is made for them at
 * once: growing by doubling left the runtime's heap with blocks of every
 * size), or NULL without memory.
 */
struct dacce_gdbjit_object *dacce_gdbjit_begin(size_t expected);

/*
 * Adds the piece [start, start + len) named name, with the unwind row that
 * holds over all of it (NULL: none, gdb then only names it).  group tells
 * which piece may share a section with which: pieces of one group lie in
 * memory the runtime owns from the first to the last (one code cache
 * region), so a section spanning them covers nobody else's code.
 * 0 or -ENOMEM.
 */
int dacce_gdbjit_add(struct dacce_gdbjit_object *o, uintptr_t start, size_t len, uint64_t group,
		     const char *name, const struct dacce_cfa_row *row);

/* The same with the piece's call frame instructions written by the caller (after the CIE's: alignment factors 1). */
int dacce_gdbjit_add_rules(struct dacce_gdbjit_object *o, uintptr_t start, size_t len,
			   uint64_t group, const char *name, const uint8_t *rules, size_t n_rules);

/* Pieces added so far. */
size_t dacce_gdbjit_count(const struct dacce_gdbjit_object *o);

/*
 * Builds the ELF image of the batch: *image (malloc'd, from the runtime's
 * heap in libdacce.so: private_alloc.h) and *size.
 * 0, -ENOMEM, or -E2BIG past ELF's section limit.  For tests; commit uses it.
 */
int dacce_gdbjit_image(const struct dacce_gdbjit_object *o, uint8_t **image, size_t *size);

/*
 * Registers the batch with a debugger, present or to come, and frees o
 * (also on error).  An empty batch registers nothing.  Callers serialise.
 */
int dacce_gdbjit_commit(struct dacce_gdbjit_object *o);

void dacce_gdbjit_discard(struct dacce_gdbjit_object *o);

#endif
