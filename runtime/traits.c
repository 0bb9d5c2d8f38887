// SPDX-License-Identifier: MIT
#include "traits.h"

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

static bool defines_unwinder(Elf *elf, Elf_Scn *symtab)
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

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (name && is_unwinder_entry(name))
			return true;
	}
	return false;
}

int dacce_module_has_own_unwinder(const struct dacce_module_info *m)
{
	const char *path = m->is_main ? "/proc/self/exe" : m->path;
	Elf_Scn *scn = NULL;
	int fd, found = 0;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		found = -EBADMSG;
		goto cleanup;
	}
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			found = defines_unwinder(elf, scn);
	}
cleanup:
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}
