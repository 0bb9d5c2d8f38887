// SPDX-License-Identifier: MIT
#include "cfa.h"

#include <dwarf.h>
#include <errno.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
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
