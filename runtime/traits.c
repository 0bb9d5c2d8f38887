// SPDX-License-Identifier: MIT
#include "traits.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

/* Undefined dynamic symbols that mean "this code's frames take part in unwinding". */
static const char *const unwinding_imports[] = {
	"_Unwind_Resume", "__cxa_begin_catch", "__gxx_personality_v0", NULL,
};

static bool is_unwinding_import(const char *name)
{
	for (int i = 0; unwinding_imports[i]; i++)
		if (strcmp(name, unwinding_imports[i]) == 0)
			return true;
	return false;
}

static bool imports_unwinding(Elf *elf, Elf_Scn *dynsym)
{
	GElf_Shdr sh;
	Elf_Data *data = elf_getdata(dynsym, NULL);
	size_t n;

	if (!data || !gelf_getshdr(dynsym, &sh) || sh.sh_entsize == 0)
		return false;
	n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx != SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (name && is_unwinding_import(name))
			return true;
	}
	return false;
}

int dacce_module_unwinds_exceptions(const struct dacce_module_info *m)
{
	const char *path = m->is_main ? "/proc/self/exe" : m->path;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, found = 0;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) {
		found = -EBADMSG;
		goto cleanup;
	}
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".gcc_except_table") == 0 && sh.sh_size > 0)
			found = 1;
		else if (sh.sh_type == SHT_DYNSYM && imports_unwinding(elf, scn))
			found = 1;
	}
cleanup:
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}
