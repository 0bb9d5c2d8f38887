// SPDX-License-Identifier: MIT
#include "traits.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

/* Defined symbols that mean "this module unwinds exceptions by itself". */
static const char *const unwinder_entries[] = {
	"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_Find_FDE", NULL,
};

static bool is_unwinder_entry(const char *name)
{
	for (int i = 0; unwinder_entries[i]; i++)
		if (strcmp(name, unwinder_entries[i]) == 0)
			return true;
	return false;
}

/*
 * libgcc's unwinder looks FDEs up with glibc's _dl_find_object: a program
 * that imports it carries that unwinder, even stripped (its own symbols
 * gone, the import stays in .dynsym).  It matters when exceptions from a
 * shared libstdc++ or libgcc_s can come through the program's frames, whose
 * cleanups then resume with that unwinder (gcc's cc1 carries one, but
 * imports nothing that throws).
 */
static const char *const exception_imports[] = {
	"__cxa_throw", "__cxa_rethrow", "__gxx_personality_v0", "__gcc_personality_v0", NULL,
};

struct unwinder_imports {
	bool lookup, exceptions;
};

static void note_import(const char *name, const GElf_Sym *sym, struct unwinder_imports *seen)
{
	if (sym->st_shndx != SHN_UNDEF)
		return;
	if (strcmp(name, "_dl_find_object") == 0)
		seen->lookup = true;
	for (int i = 0; exception_imports[i]; i++)
		if (strcmp(name, exception_imports[i]) == 0)
			seen->exceptions = true;
}

static bool defines_unwinder(Elf *elf, Elf_Scn *symtab, struct unwinder_imports *seen)
{
	GElf_Shdr sh;
	Elf_Data *data = elf_getdata(symtab, NULL);
	size_t n;

	if (!data || !gelf_getshdr(symtab, &sh) || sh.sh_entsize == 0)
		return false;
	n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) ||
		    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
			continue;
		note_import(name, &sym, seen);
		if (sym.st_shndx != SHN_UNDEF && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
		    is_unwinder_entry(name))
			return true;
	}
	return false;
}

/* The module's file, read (not mapped: a file truncated under us must not raise SIGBUS). */
static int open_module(const struct dacce_module_info *m, int *fd, Elf **elf)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	*fd = open(m->is_main ? "/proc/self/exe" : m->path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*elf = elf_begin(*fd, ELF_C_READ, NULL);
	if (!*elf) {
		close(*fd);
		return -EBADMSG;
	}
	return 0;
}

static void close_module(int fd, Elf *elf)
{
	elf_end(elf);
	close(fd);
}

int dacce_module_has_own_unwinder(const struct dacce_module_info *m)
{
	struct unwinder_imports seen = { false, false };
	Elf_Scn *scn = NULL;
	int fd, found;
	Elf *elf;

	found = open_module(m, &fd, &elf);
	if (found)
		return found;
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			found = defines_unwinder(elf, scn, &seen);
	}
	close_module(fd, elf);
	return found || (seen.lookup && seen.exceptions);
}

/* A DW_EH_PE-encoded pointer at field (run-time address at), or 0 when the encoding is unknown. */
static uintptr_t read_encoded(uint8_t encoding, const uint8_t *field, uintptr_t at)
{
	uintptr_t value;

	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8: {
		uint64_t v;

		memcpy(&v, field, sizeof(v));
		value = (uintptr_t)v;
		break;
	}
	case DW_EH_PE_udata4: {
		uint32_t v;

		memcpy(&v, field, sizeof(v));
		value = v;
		break;
	}
	case DW_EH_PE_sdata4: {
		int32_t v;

		memcpy(&v, field, sizeof(v));
		value = (uintptr_t)(intptr_t)v;
		break;
	}
	default:
		return 0;
	}
	switch (encoding & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		value += at;
		break;
	default:
		return 0;
	}
	/* Indirect: the address of a slot the dynamic linker filled in (DW.ref.__gxx_personality_v0). */
	if (value && (encoding & DW_EH_PE_indirect))
		value = *(const uintptr_t *)value;
	return value;
}

/* The personality routine a CIE names (0: none), from the module as it is mapped. */
static uintptr_t cie_personality(const Dwarf_CIE *cie, const Elf_Data *data, uintptr_t section_at)
{
	const uint8_t *aug = cie->augmentation_data;

	if (!cie->augmentation || cie->augmentation[0] != 'z' || !aug)
		return 0;
	for (const char *c = cie->augmentation + 1; *c; c++) {
		if (*c == 'P')
			return read_encoded(aug[0], aug + 1,
					    section_at + (uintptr_t)(aug + 1 - (const uint8_t *)data->d_buf));
		if (*c == 'L' || *c == 'R')
			aug++; /* one encoding byte each */
		else if (*c != 'S')
			return 0; /* an augmentation this reader does not know */
	}
	return 0;
}

static bool is_known(uintptr_t fn, const uintptr_t *known, size_t n_known,
		     const struct dacce_range *plt, size_t n_plt)
{
	for (size_t i = 0; i < n_known; i++)
		if (fn == known[i])
			return true;
	for (size_t i = 0; i < n_plt; i++)
		if (fn >= plt[i].start && fn < plt[i].end)
			return true;
	return false;
}

int dacce_module_foreign_personality(const struct dacce_module_info *m, const uintptr_t *known,
				     size_t n_known, const struct dacce_range *plt, size_t n_plt,
				     uintptr_t *foreign)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, found;
	Elf *elf;

	*foreign = 0;
	found = open_module(m, &fd, &elf);
	if (found)
		return found;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
		found = -EBADMSG;
		goto cleanup;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *data;
		GElf_Shdr sh;
		Dwarf_Off offset = 0, next;
		Dwarf_CFI_Entry entry;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".eh_frame") != 0 || !(data = elf_getdata(scn, NULL)))
			continue;
		while (!found && dwarf_next_cfi((const unsigned char *)elf_getident(elf, NULL), data, true, offset, &next,
						&entry) == 0) {
			uintptr_t fn = dwarf_cfi_cie_p(&entry)
					       ? cie_personality(&entry.cie, data, sh.sh_addr + m->bias)
					       : 0;

			if (fn && !is_known(fn, known, n_known, plt, n_plt)) {
				*foreign = fn;
				found = 1;
			}
			offset = next;
		}
		break;
	}
cleanup:
	close_module(fd, elf);
	return found;
}
