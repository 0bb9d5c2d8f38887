// SPDX-License-Identifier: MIT
#include "cfa.h"

#include <dwarf.h>
#include <errno.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

struct dacce_cfa {
	int fd;
	Elf *elf;
	Dwarf_CFI *cfi;
	uintptr_t bias;
};

struct dacce_cfa *dacce_cfa_open(const struct dacce_module_info *m)
{
	struct dacce_cfa *cfa = calloc(1, sizeof(*cfa));

	if (!cfa || elf_version(EV_CURRENT) == EV_NONE)
		goto fail;
	cfa->fd = open(m->is_main ? "/proc/self/exe" : m->path, O_RDONLY | O_CLOEXEC);
	if (cfa->fd < 0)
		goto fail;
	/* Read, not mapped: a file truncated under us must not raise SIGBUS in the target. */
	cfa->elf = elf_begin(cfa->fd, ELF_C_READ, NULL);
	cfa->cfi = cfa->elf ? dwarf_getcfi_elf(cfa->elf) : NULL;
	if (!cfa->cfi)
		goto fail;
	/*
	 * dwarf_getcfi_elf read the unwind tables into memory.  The descriptor is
	 * let go: programs close every one they did not open (ssh's closefrom),
	 * and a number closed behind our back may name another file by the next
	 * read.  Anything libelf would still read now fails instead.
	 */
	elf_cntl(cfa->elf, ELF_C_FDDONE);
	close(cfa->fd);
	cfa->fd = -1;
	cfa->bias = m->bias;
	return cfa;
fail:
	dacce_cfa_close(cfa);
	return NULL;
}

void dacce_cfa_close(struct dacce_cfa *cfa)
{
	if (!cfa)
		return;
	if (cfa->cfi)
		dwarf_cfi_end(cfa->cfi);
	if (cfa->elf)
		elf_end(cfa->elf);
	if (cfa->fd >= 0)
		close(cfa->fd);
	free(cfa);
}

int dacce_cfa_is_frameless_at(const struct dacce_cfa *cfa, uintptr_t addr)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Op *ops = NULL;
	size_t n_ops = 0;
	int result = -1;

	if (!cfa || dwarf_cfi_addrframe(cfa->cfi, addr - cfa->bias, &frame) != 0)
		return -1;
	/* libdw spells "CFA = %rsp + 8" as DW_OP_bregx 7, 8 (or DW_OP_breg7 8). */
	if (dwarf_frame_cfa(frame, &ops, &n_ops) == 0 && n_ops == 1)
		result = (ops[0].atom == DW_OP_bregx && ops[0].number == 7 && ops[0].number2 == 8) ||
			 (ops[0].atom == DW_OP_breg7 && ops[0].number == 8);
	free(frame);
	return result;
}

int dacce_cfa_rule_at(const struct dacce_cfa *cfa, uintptr_t addr, int *reg, int64_t *offset)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Op *ops = NULL;
	size_t n_ops = 0;
	int err = -ENOTSUP;

	if (!cfa || dwarf_cfi_addrframe(cfa->cfi, addr - cfa->bias, &frame) != 0)
		return -ENOENT;
	if (dwarf_frame_cfa(frame, &ops, &n_ops) == 0 && n_ops == 1) {
		if (ops[0].atom == DW_OP_bregx) {
			*reg = (int)ops[0].number;
			*offset = (int64_t)ops[0].number2;
			err = 0;
		} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
			*reg = ops[0].atom - DW_OP_breg0;
			*offset = (int64_t)ops[0].number;
			err = 0;
		}
	}
	free(frame);
	return err;
}

/* A register operand of DW_OP_breg0..31 or DW_OP_bregx: 0 and its number and offset. */
static int breg_of(const Dwarf_Op *op, int *reg, int64_t *offset)
{
	if (op->atom == DW_OP_bregx) {
		*reg = (int)op->number;
		*offset = (int64_t)op->number2;
		return 0;
	}
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*offset = (int64_t)op->number;
		return 0;
	}
	return -ENOTSUP;
}

/* CFA-relative forms: DW_OP_call_frame_cfa, optionally plus a constant. */
static int cfa_plus(const Dwarf_Op *ops, size_t n_ops, int64_t *offset)
{
	if (n_ops == 0 || ops[0].atom != DW_OP_call_frame_cfa)
		return -ENOTSUP;
	*offset = 0;
	if (n_ops == 1)
		return 0;
	if (n_ops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*offset = (int64_t)ops[1].number;
		return 0;
	}
	if (n_ops == 3 && ops[2].atom == DW_OP_plus &&
	    (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu ||
	     ops[1].atom == DW_OP_const1s || ops[1].atom == DW_OP_const2s ||
	     ops[1].atom == DW_OP_const4s || ops[1].atom == DW_OP_const8s)) {
		*offset = (int64_t)ops[1].number;
		return 0;
	}
	if (n_ops == 3 && ops[2].atom == DW_OP_minus && ops[1].atom == DW_OP_constu) {
		*offset = -(int64_t)ops[1].number;
		return 0;
	}
	return -ENOTSUP;
}

/* libdw's location description of a register, read back as a rule. */
static void rule_of(Dwarf_Op *ops, size_t n_ops, struct dacce_cfa_reg_rule *rule)
{
	bool value = n_ops > 0 && ops[n_ops - 1].atom == DW_OP_stack_value;
	int64_t offset;

	*rule = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_UNDEFINED };
	if (n_ops == 0) {
		/* libdw: no operations and no array is "same value"; its own array, "undefined". */
		rule->kind = ops ? DACCE_CFA_UNDEFINED : DACCE_CFA_SAME;
		return;
	}
	if (value)
		n_ops--;
	if (cfa_plus(ops, n_ops, &offset) == 0) {
		rule->kind = value ? DACCE_CFA_IS : DACCE_CFA_AT;
		rule->offset = offset;
	} else if (!value && n_ops == 1 && ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31) {
		/* DW_CFA_register: the location is the other register itself. */
		rule->kind = DACCE_CFA_IN_REG;
		rule->reg = ops[0].atom - DW_OP_reg0;
	} else if (!value && n_ops == 1 && ops[0].atom == DW_OP_regx) {
		rule->kind = DACCE_CFA_IN_REG;
		rule->reg = (int)ops[0].number;
	} else if (value && n_ops == 1 && breg_of(&ops[0], &rule->reg, &offset) == 0 &&
		   offset == 0) {
		rule->kind = DACCE_CFA_IN_REG;
	}
}

int dacce_cfa_row_at(const struct dacce_cfa *cfa, uintptr_t addr, struct dacce_cfa_row *row,
		     uintptr_t *lo, uintptr_t *hi)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Op *ops = NULL, ops_mem[3];
	Dwarf_Addr start, end;
	size_t n_ops = 0;
	bool signal;
	int err = -ENOTSUP;

	if (!cfa || dwarf_cfi_addrframe(cfa->cfi, addr - cfa->bias, &frame) != 0)
		return -ENOENT;
	if (dwarf_frame_info(frame, &start, &end, &signal) < 0)
		goto cleanup;
	*lo = start + cfa->bias;
	*hi = end + cfa->bias;
	if (dwarf_frame_cfa(frame, &ops, &n_ops) != 0 || n_ops != 1 ||
	    breg_of(&ops[0], &row->cfa_reg, &row->cfa_offset) != 0)
		goto cleanup;
	for (int reg = 0; reg < DACCE_CFA_REGS; reg++) {
		if (dwarf_frame_register(frame, reg, ops_mem, &ops, &n_ops) != 0)
			goto cleanup;
		rule_of(ops, n_ops, &row->regs[reg]);
	}
	/* Without the return address nothing above the frame can be found. */
	if (row->regs[DACCE_CFA_REGS - 1].kind == DACCE_CFA_AT)
		err = 0;
cleanup:
	free(frame);
	return err;
}
