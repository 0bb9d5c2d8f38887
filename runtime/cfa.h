/* SPDX-License-Identifier: MIT */
/*
 * The canonical frame address rule at an address of a module, from its
 * .eh_frame: whether a jump there leaves a frame (a tail call: the CFA is
 * %rsp + 8, the return address on top) or stays inside a live one.
 * Lookups allocate nothing and take no lock (runtime/ehframe.h): they are
 * safe in a signal handler that interrupted malloc.
 */
#ifndef DACCE_RT_CFA_H
#define DACCE_RT_CFA_H

#include <stdint.h>

#include "modules.h"

struct dacce_cfa;
struct dacce_eh_frame_walk;

/* Opens the module's unwind information; NULL when it has none or cannot be read. */
struct dacce_cfa *dacce_cfa_open(const struct dacce_module_info *m);
void dacce_cfa_close(struct dacce_cfa *cfa);

/* 1: the CFA at addr is %rsp + 8; 0: it is something else; -1: unknown. */
int dacce_cfa_is_frameless_at(const struct dacce_cfa *cfa, uintptr_t addr);

/*
 * The same for questions asked in increasing address order (the tail sites
 * of the function being decoded): each goes on in the FDE from where the
 * last stopped (ehframe.h).  _new allocates (NULL: out of memory, or no
 * tables), so it is not for a signal handler; the walk must not outlive cfa.
 */
struct dacce_eh_frame_walk *dacce_cfa_walk_new(const struct dacce_cfa *cfa);
void dacce_cfa_walk_free(struct dacce_eh_frame_walk *walk);
int dacce_cfa_walk_is_frameless_at(struct dacce_eh_frame_walk *walk, uintptr_t addr);

/*
 * The CFA rule at addr when it is a register plus an offset (the DWARF
 * register number and the offset): 0, -ENOTSUP for any other rule (an
 * expression), -ENOENT where the module has no unwind information.
 */
int dacce_cfa_rule_at(const struct dacce_cfa *cfa, uintptr_t addr, int *reg, int64_t *offset);

/* How a register of the caller is found, in DWARF numbering (x86-64: 0-15, 16 the return address). */
enum dacce_cfa_rule_kind {
	DACCE_CFA_SAME,	     /* this frame left it alone */
	DACCE_CFA_UNDEFINED, /* lost (caller-saved), or a rule this file does not read */
	DACCE_CFA_AT,	     /* saved at CFA + offset */
	DACCE_CFA_IS,	     /* its value is CFA + offset */
	DACCE_CFA_IN_REG,    /* its value is in register reg */
};

#define DACCE_CFA_REGS 17

struct dacce_cfa_reg_rule {
	enum dacce_cfa_rule_kind kind;
	int reg;
	int64_t offset;
};

/* The whole row at an address: CFA = cfa_reg + cfa_offset, and each register's rule. */
struct dacce_cfa_row {
	int cfa_reg;
	int64_t cfa_offset;
	struct dacce_cfa_reg_rule regs[DACCE_CFA_REGS];
};

/*
 * The unwind row in effect at addr (what a debugger needs to step out of a
 * frame stopped there), and the addresses [*lo, *hi) it holds for: 0,
 * -ENOTSUP when the CFA or the return address is found by an expression,
 * -ENOENT where the module has no unwind information.
 */
int dacce_cfa_row_at(const struct dacce_cfa *cfa, uintptr_t addr, struct dacce_cfa_row *row,
		     uintptr_t *lo, uintptr_t *hi);

/* The same through a walk (dacce_cfa_walk_new): cheapest for addresses asked in increasing order. */
int dacce_cfa_walk_row_at(struct dacce_eh_frame_walk *walk, uintptr_t addr,
			  struct dacce_cfa_row *row, uintptr_t *lo, uintptr_t *hi);

#endif
