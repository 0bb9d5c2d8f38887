// SPDX-License-Identifier: MIT
/*
 * What gdb reads for generated code (runtime/gdbjit.h): the ELF image read
 * back with libelf (sections over the code, one symbol per piece) and its
 * .debug_frame with libdw (each piece's row, exactly); the objects linked
 * into __jit_debug_descriptor's list; and the rows runtime/cfa.h reads from
 * a module's .eh_frame, on a function of known unwind rules.
 */
#include <check.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "cfa.h"
#include "check_main.h"
#include "gdbjit.h"
/* The runtime's objects allocate from its own heap: the image is freed there. */
#define DACCE_PRIVATE_ALLOC_IMPL
#include "private_alloc.h"

static struct dacce_cfa_row frame_pointer_row(void)
{
	struct dacce_cfa_row row = { .cfa_reg = 6, .cfa_offset = 16 };

	for (int r = 0; r < DACCE_CFA_REGS; r++)
		row.regs[r].kind = DACCE_CFA_UNDEFINED;
	row.regs[3] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_AT, .offset = -24 };
	row.regs[6] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_AT, .offset = -16 };
	row.regs[7] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_IS, .offset = 0 };
	row.regs[12] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_SAME };
	row.regs[13] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_IN_REG, .reg = 14 };
	row.regs[14] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_SAME };
	row.regs[15] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_SAME };
	row.regs[16] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_AT, .offset = -8 };
	return row;
}

static struct dacce_cfa_row stack_row(void)
{
	struct dacce_cfa_row row = frame_pointer_row();

	row.cfa_reg = 7;
	row.cfa_offset = 56;
	row.regs[3] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_SAME };
	row.regs[6] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_SAME };
	row.regs[13] = (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_AT, .offset = -16 };
	return row;
}

/* libdw's reading of a register's rule, as runtime/cfa.c reads it back. */
static void check_rule(Dwarf_Frame *frame, int reg, const struct dacce_cfa_reg_rule *want)
{
	Dwarf_Op ops_mem[3], *ops = NULL;
	size_t n = 0;

	ck_assert_int_eq(dwarf_frame_register(frame, reg, ops_mem, &ops, &n), 0);
	switch (want->kind) {
	case DACCE_CFA_SAME:
		ck_assert_msg(n == 0 && ops == NULL, "register %d: same value", reg);
		break;
	case DACCE_CFA_UNDEFINED:
		ck_assert_msg(n == 0 && ops != NULL, "register %d: undefined", reg);
		break;
	case DACCE_CFA_AT:
	case DACCE_CFA_IS: {
		int64_t offset = 0;

		ck_assert_msg(n >= 1 && ops[0].atom == DW_OP_call_frame_cfa, "register %d: CFA-based",
			      reg);
		if (n >= 2 && ops[1].atom == DW_OP_plus_uconst)
			offset = (int64_t)ops[1].number;
		else if (n >= 3 && ops[2].atom == DW_OP_plus)
			offset = (int64_t)ops[1].number;
		ck_assert_msg(offset == want->offset, "register %d: offset %ld, want %ld", reg,
			      (long)offset, (long)want->offset);
		ck_assert_int_eq(ops[n - 1].atom == DW_OP_stack_value, want->kind == DACCE_CFA_IS);
		break;
	}
	case DACCE_CFA_IN_REG:
		/* libdw spells "in register R" as the location DW_OP_regR. */
		ck_assert_uint_eq(n, 1);
		ck_assert_msg(ops[0].atom == DW_OP_reg0 + want->reg ||
				      (ops[0].atom == DW_OP_regx && ops[0].number == (Dwarf_Word)want->reg),
			      "register %d: in register %d, atom %#x", reg, want->reg, ops[0].atom);
		break;
	}
}

static void check_row_at(Dwarf_CFI *cfi, uintptr_t pc, uintptr_t start, size_t len,
			 const struct dacce_cfa_row *want)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr lo, hi;
	Dwarf_Op *ops;
	size_t n;
	bool signal;

	ck_assert_msg(dwarf_cfi_addrframe(cfi, pc, &frame) == 0, "no row at %#lx: %s",
		      (unsigned long)pc, dwarf_errmsg(-1));
	ck_assert_int_ge(dwarf_frame_info(frame, &lo, &hi, &signal), 0);
	ck_assert_uint_eq(lo, start);
	ck_assert_uint_eq(hi, start + len);
	ck_assert_int_eq(dwarf_frame_cfa(frame, &ops, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_msg(ops[0].atom == DW_OP_breg0 + want->cfa_reg ||
			      (ops[0].atom == DW_OP_bregx && ops[0].number == (Dwarf_Word)want->cfa_reg),
		      "CFA register");
	ck_assert_int_eq((int64_t)(ops[0].atom == DW_OP_bregx ? ops[0].number2 : ops[0].number),
			 want->cfa_offset);
	for (int reg = 0; reg < DACCE_CFA_REGS; reg++)
		check_rule(frame, reg, &want->regs[reg]);
	free(frame);
}

struct symbol_seen {
	const char *name;
	uintptr_t value;
	size_t size;
	uintptr_t section_addr;
};

static int find_symbol(Elf *elf, const char *name, struct symbol_seen *seen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			GElf_Shdr text;
			const char *s;

			gelf_getsym(data, (int)i, &sym);
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!s || strcmp(s, name) != 0)
				continue;
			ck_assert_uint_eq(GELF_ST_TYPE(sym.st_info), STT_FUNC);
			ck_assert(gelf_getshdr(elf_getscn(elf, sym.st_shndx), &text));
			ck_assert_uint_eq(text.sh_type, SHT_NOBITS);
			ck_assert(text.sh_flags & SHF_EXECINSTR);
			/* The section covers the piece. */
			ck_assert(sym.st_value >= text.sh_addr &&
				  sym.st_value + sym.st_size <= text.sh_addr + text.sh_size);
			*seen = (struct symbol_seen){ s, sym.st_value, sym.st_size, text.sh_addr };
			return 0;
		}
	}
	return -1;
}

START_TEST(test_image_names_each_piece_and_gives_its_row)
{
	struct dacce_cfa_row fp = frame_pointer_row(), sp = stack_row();
	struct dacce_gdbjit_object *o = dacce_gdbjit_begin(2);
	struct symbol_seen a, b, c;
	uint8_t *image;
	size_t size;
	Dwarf_CFI *cfi;
	Dwarf *dwarf;
	Elf *elf;

	ck_assert_ptr_nonnull(o);
	/* Two pieces in one region (one section spans both), one far away in another. */
	ck_assert_int_eq(dacce_gdbjit_add(o, 0x10000, 32, 1, "dacce:call@main+0x1f", &fp), 0);
	ck_assert_int_eq(dacce_gdbjit_add(o, 0x10020, 16, 1, "dacce:tail_call_return", NULL), 0);
	ck_assert_int_eq(dacce_gdbjit_add(o, 0x7f0000500000, 48, 2, "dacce:call@leaf+0x3", &sp), 0);
	ck_assert_uint_eq(dacce_gdbjit_count(o), 3);
	ck_assert_int_eq(dacce_gdbjit_image(o, &image, &size), 0);

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	ck_assert_ptr_nonnull(elf);
	{
		GElf_Ehdr eh;

		ck_assert(gelf_getehdr(elf, &eh));
		ck_assert_uint_eq(eh.e_machine, EM_X86_64);
	}
	ck_assert_int_eq(find_symbol(elf, "dacce:call@main+0x1f", &a), 0);
	ck_assert_int_eq(find_symbol(elf, "dacce:tail_call_return", &b), 0);
	ck_assert_int_eq(find_symbol(elf, "dacce:call@leaf+0x3", &c), 0);
	ck_assert_uint_eq(a.value, 0x10000);
	ck_assert_uint_eq(a.size, 32);
	ck_assert_uint_eq(b.value, 0x10020);
	ck_assert_uint_eq(a.section_addr, b.section_addr);
	ck_assert_uint_eq(c.value, 0x7f0000500000);
	ck_assert_uint_eq(c.section_addr, 0x7f0000500000);

	dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	ck_assert_msg(dwarf, "libdw: %s", dwarf_errmsg(-1));
	cfi = dwarf_getcfi(dwarf);
	ck_assert_ptr_nonnull(cfi);
	check_row_at(cfi, 0x10000, 0x10000, 32, &fp);
	check_row_at(cfi, 0x1001f, 0x10000, 32, &fp);
	check_row_at(cfi, 0x7f0000500010, 0x7f0000500000, 48, &sp);
	{
		Dwarf_Frame *frame = NULL;

		/* The tail stub has no row: it is not on anyone's frame. */
		ck_assert_int_ne(dwarf_cfi_addrframe(cfi, 0x10024, &frame), 0);
	}
	dwarf_end(dwarf);
	elf_end(elf);
	dacce_free(image);
	dacce_gdbjit_discard(o);
}
END_TEST

START_TEST(test_commits_are_linked_for_the_debugger_newest_first)
{
	struct jit_code_entry *before = __jit_debug_descriptor.first_entry, *first, *second;
	struct dacce_gdbjit_object *o;

	ck_assert_uint_eq(__jit_debug_descriptor.version, 1);
	o = dacce_gdbjit_begin(1);
	ck_assert_int_eq(dacce_gdbjit_add(o, 0x20000, 16, 0, "dacce:call@a+0x1", NULL), 0);
	ck_assert_int_eq(dacce_gdbjit_commit(o), 0);
	first = __jit_debug_descriptor.first_entry;
	ck_assert_ptr_ne(first, before);
	ck_assert_ptr_eq(first->next_entry, before);
	ck_assert_ptr_eq(__jit_debug_descriptor.relevant_entry, first);
	ck_assert_uint_eq(__jit_debug_descriptor.action_flag, 0); /* back to "no action" */
	ck_assert_uint_gt(first->symfile_size, 64);
	ck_assert_mem_eq(first->symfile_addr, "\177ELF", 4);

	/* An empty batch registers nothing. */
	ck_assert_int_eq(dacce_gdbjit_commit(dacce_gdbjit_begin(0)), 0);
	ck_assert_ptr_eq(__jit_debug_descriptor.first_entry, first);

	o = dacce_gdbjit_begin(1);
	ck_assert_int_eq(dacce_gdbjit_add(o, 0x30000, 16, 0, "dacce:call@b+0x2", NULL), 0);
	ck_assert_int_eq(dacce_gdbjit_commit(o), 0);
	second = __jit_debug_descriptor.first_entry;
	ck_assert_ptr_eq(second->next_entry, first);
	ck_assert_ptr_eq(first->prev_entry, second);
	ck_assert_ptr_null(second->prev_entry);
}
END_TEST

/*
 * A function with known unwind rules: %rbp pushed and made the CFA's base,
 * then %rbx pushed.  known_frame_body is past both.
 */
__asm__(".text\n"
	".globl known_frame\n"
	".type known_frame, @function\n"
	"known_frame:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"push %rbx\n"
	".cfi_offset %rbx, -24\n"
	".globl known_frame_body\n"
	"known_frame_body:\n"
	"nop\n"
	"pop %rbx\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size known_frame, .-known_frame\n");
void known_frame(void);
extern const char known_frame_body[];

START_TEST(test_cfa_reads_the_row_of_a_known_frame)
{
	struct dacce_modules mods;
	struct dacce_cfa_row row;
	struct dacce_cfa *cfa;
	uintptr_t lo, hi;

	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	cfa = dacce_cfa_open(dacce_modules_find(&mods, (uintptr_t)known_frame));
	ck_assert_ptr_nonnull(cfa);
	ck_assert_int_eq(dacce_cfa_row_at(cfa, (uintptr_t)known_frame_body, &row, &lo, &hi), 0);
	ck_assert_int_eq(row.cfa_reg, 6);
	ck_assert_int_eq(row.cfa_offset, 16);
	ck_assert_int_eq(row.regs[6].kind, DACCE_CFA_AT);
	ck_assert_int_eq(row.regs[6].offset, -16);
	ck_assert_int_eq(row.regs[3].kind, DACCE_CFA_AT);
	ck_assert_int_eq(row.regs[3].offset, -24);
	ck_assert_int_eq(row.regs[16].kind, DACCE_CFA_AT);
	ck_assert_int_eq(row.regs[16].offset, -8);
	ck_assert_int_eq(row.regs[12].kind, DACCE_CFA_SAME);
	/* The row holds from the push of %rbx to the pop of %rbp (nop, pop, pop). */
	ck_assert_uint_le(lo, (uintptr_t)known_frame_body);
	ck_assert_uint_gt(hi, (uintptr_t)known_frame_body);
	ck_assert_uint_eq(hi, (uintptr_t)known_frame_body + 3);
	/* At the entry the CFA is %rsp + 8: not the same row. */
	ck_assert_int_eq(dacce_cfa_row_at(cfa, (uintptr_t)known_frame, &row, &lo, &hi), 0);
	ck_assert_int_eq(row.cfa_reg, 7);
	ck_assert_int_eq(row.cfa_offset, 8);
	dacce_cfa_close(cfa);
	dacce_modules_fini(&mods);
}
END_TEST

static Suite *gdbjit_suite(void)
{
	Suite *s = suite_create("rt_gdbjit");
	TCase *tc = tcase_create("gdbjit");

	tcase_add_test(tc, test_image_names_each_piece_and_gives_its_row);
	tcase_add_test(tc, test_commits_are_linked_for_the_debugger_newest_first);
	tcase_add_test(tc, test_cfa_reads_the_row_of_a_known_frame);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(gdbjit_suite());
}
