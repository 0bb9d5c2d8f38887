/* SPDX-License-Identifier: MIT */
/*
 * The canonical frame address rule at an address of a module, from its
 * .eh_frame: whether a jump there leaves a frame (a tail call: the CFA is
 * %rsp + 8, the return address on top) or stays inside a live one.
 */
#ifndef DACCE_RT_CFA_H
#define DACCE_RT_CFA_H

#include <stdint.h>

#include "modules.h"

struct dacce_cfa;

/* Opens the module's unwind information; NULL when it has none or cannot be read. */
struct dacce_cfa *dacce_cfa_open(const struct dacce_module_info *m);
void dacce_cfa_close(struct dacce_cfa *cfa);

/* 1: the CFA at addr is %rsp + 8; 0: it is something else; -1: unknown. */
int dacce_cfa_is_frameless_at(const struct dacce_cfa *cfa, uintptr_t addr);

/*
 * The CFA rule at addr when it is a register plus an offset (the DWARF
 * register number and the offset): 0, -ENOTSUP for any other rule (an
 * expression), -ENOENT where the module has no unwind information.
 */
int dacce_cfa_rule_at(const struct dacce_cfa *cfa, uintptr_t addr, int *reg, int64_t *offset);

#endif
