// SPDX-License-Identifier: MIT
#include "libraries.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"

/* File names (prefixes) of libraries left alone whatever they depend on. */
static const char *const system_libraries[] = {
	"libc.so", "libm.so", "libmvec.so", "libpthread.so", "libdl.so", "librt.so",
	"libutil.so", "libresolv.so", "libanl.so", "libnsl.so", "libBrokenLocale.so",
	"libnss_", "libthread_db.so", "libc_malloc_debug.so", "libmemusage.so",
	"libpcprofile.so", "libSegFault.so", "ld-linux", "libgcc_s.so", "libstdc++.so",
	"libasan.so", "libubsan.so", "libtsan.so", "liblsan.so", "libhwasan.so", "libdacce",
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool is_system_library(const char *path)
{
	const char *name = base_name(path);

	/* glibc's character set converters: glibc loads and unloads them itself, out of dlclose's sight. */
	if (strstr(path, "/gconv/"))
		return true;

	for (size_t i = 0; i < sizeof(system_libraries) / sizeof(system_libraries[0]); i++)
		if (strncmp(name, system_libraries[i], strlen(system_libraries[i])) == 0)
			return true;
	return false;
}

/* The loaded module whose file is named soname (libraries are found by their soname). */
static size_t module_named(const struct dacce_modules *mods, const char *soname)
{
	for (size_t i = 0; i < mods->n; i++)
		if (!mods->mods[i].is_vdso && strcmp(base_name(mods->mods[i].path), soname) == 0)
			return i;
	return mods->n;
}

/* The data of the next section after *scn of the given type, with *n entries; NULL at the end. */
static Elf_Data *next_section(Elf *elf, Elf_Scn **scn, Elf64_Word type, GElf_Shdr *sh, size_t *n)
{
	Elf_Data *data;

	while ((*scn = elf_nextscn(elf, *scn))) {
		if (!gelf_getshdr(*scn, sh) || sh->sh_type != type || !sh->sh_entsize)
			continue;
		data = elf_getdata(*scn, NULL);
		*n = sh->sh_size / sh->sh_entsize;
		if (data)
			return data;
	}
	return NULL;
}

/* Marks in dep[] module i and, through their DT_NEEDED entries, what it loads. */
static void mark_dependencies(const struct dacce_modules *mods, size_t i, bool *dep)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	size_t n;
	Elf *elf;
	int fd;

	if (i >= mods->n || dep[i])
		return;
	dep[i] = true;
	fd = open(mods->mods[i].path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (data = next_section(elf, &scn, SHT_DYNAMIC, &sh, &n))) {
		for (size_t k = 0; k < n; k++) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(data, (int)k, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED)
				continue;
			name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (name)
				mark_dependencies(mods, module_named(mods, name), dep);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
}

/* libc's allocator, as a library replacing it defines it. */
static const char *const allocator_functions[] = { "malloc", "free", "calloc", "realloc" };

static bool is_allocator_function(const char *name)
{
	for (size_t i = 0; i < sizeof(allocator_functions) / sizeof(allocator_functions[0]); i++)
		if (strcmp(name, allocator_functions[i]) == 0)
			return true;
	return false;
}

/*
 * Whether the library at path defines malloc, free, calloc or realloc for
 * others (jemalloc, tcmalloc, mimalloc): then it replaces libc's allocator,
 * which the runtime's own work reaches (libdw, libc's qsort, the loader).
 * Instrumented, it would take the runtime's lock in its first calls while
 * holding its own, and the runtime may call it holding its lock: each
 * would wait for the other.  Left alone, it is code without traps or slow
 * paths, as libc's allocator is.
 */
static bool defines_allocator(const char *path)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	bool found = false;
	GElf_Shdr sh;
	size_t n;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !found && (data = next_section(elf, &scn, SHT_DYNSYM, &sh, &n))) {
		for (size_t k = 0; k < n && !found; k++) {
			const char *name;
			GElf_Sym sym;

			if (!gelf_getsym(data, (int)k, &sym) || sym.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    GELF_ST_BIND(sym.st_info) == STB_LOCAL)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			found = name && is_allocator_function(name);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

static bool libraries_wanted(void)
{
	const char *v = dacce_env("DACCE_LIBS");

	return !v || strcmp(v, "0") != 0;
}

int dacce_libraries_choose(const struct dacce_modules *mods, uintptr_t self, bool *wanted)
{
	bool *runtime_dep;
	size_t own = mods->n;

	memset(wanted, 0, mods->n * sizeof(*wanted));
	if (!libraries_wanted() || mods->n == 0)
		return 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	runtime_dep = calloc(mods->n, sizeof(*runtime_dep));
	if (!runtime_dep)
		return -ENOMEM;
	for (size_t i = 0; i < mods->n; i++)
		if (self >= mods->mods[i].start && self < mods->mods[i].end)
			own = i;
	if (own == mods->n) {
		free(runtime_dep);
		return -ENOENT; /* without knowing our own dependencies, none is safe */
	}
	mark_dependencies(mods, own, runtime_dep);
	for (size_t i = 0; i < mods->n; i++) {
		const struct dacce_module_info *m = &mods->mods[i];

		wanted[i] = !m->is_main && !m->is_vdso && !m->is_loader && m->n_exec > 0 &&
			    !runtime_dep[i] && !is_system_library(m->path) &&
			    !defines_allocator(m->path);
	}
	free(runtime_dep);
	return 0;
}
