// SPDX-License-Identifier: MIT
#include "plt.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sorted.h"

/* The sections a lookup needs, from one pass over the file. */
struct plt_file {
	Elf *elf;
	Elf_Data *versym;	   /* NULL: no symbol versions */
	Elf_Scn *verneed;	   /* NULL: no version references */
	GElf_Shdr verneed_sh;
	bool binds_early;	   /* BIND_NOW: no slot is lazy */
	bool symbolic;		   /* DT_SYMBOLIC: the module binds its own symbols first */
};

static void read_dynamic(struct plt_file *f, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Dyn dyn;

		if (!gelf_getdyn(data, (int)i, &dyn))
			break;
		if (dyn.d_tag == DT_SYMBOLIC || (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_SYMBOLIC)))
			f->symbolic = true;
		if (dyn.d_tag == DT_BIND_NOW || (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_BIND_NOW)) ||
		    (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_NOW)))
			f->binds_early = true;
	}
}

/* The name of version index ndx among the module's references, or NULL. */
static const char *needed_version(const struct plt_file *f, unsigned ndx)
{
	Elf_Data *data = f->verneed ? elf_getdata(f->verneed, NULL) : NULL;
	size_t offset = 0;

	for (size_t i = 0; data && i < f->verneed_sh.sh_info; i++) {
		GElf_Verneed need;
		size_t aux;

		if (!gelf_getverneed(data, (int)offset, &need))
			return NULL;
		aux = offset + need.vn_aux;
		for (unsigned k = 0; k < need.vn_cnt; k++) {
			GElf_Vernaux vna;

			if (!gelf_getvernaux(data, (int)aux, &vna))
				return NULL;
			if (vna.vna_other == ndx)
				return elf_strptr(f->elf, f->verneed_sh.sh_link, vna.vna_name);
			aux += vna.vna_next;
		}
		if (!need.vn_next)
			break;
		offset += need.vn_next;
	}
	return NULL;
}

/* The loader's binding of symbol index sym of the relocations' symbol table, or 0. */
static uintptr_t bind_as_loader(const struct plt_file *f, Elf_Data *syms, size_t strtab, size_t sym)
{
	GElf_Versym ver = 0;
	const char *name, *version = NULL;
	GElf_Sym s;

	/* Defined here too (an exported function the module calls itself): interposable. */
	if (!gelf_getsym(syms, (int)sym, &s))
		return 0;
	name = elf_strptr(f->elf, strtab, s.st_name);
	if (!name || !*name)
		return 0;
	if (f->versym && gelf_getversym(f->versym, (int)sym, &ver) && (ver & 0x7fff) >= 2) {
		version = needed_version(f, ver & 0x7fff);
		if (!version)
			return 0;
	}
	return (uintptr_t)(version ? dlvsym(RTLD_DEFAULT, name, version) : dlsym(RTLD_DEFAULT, name));
}

static int push(struct dacce_plt_names *out, size_t *cap, uintptr_t slot, uintptr_t callee)
{
	if (out->n == *cap) {
		size_t grown_cap = *cap ? *cap * 2 : 64;
		struct dacce_plt_name *grown = realloc(out->slots, grown_cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		out->slots = grown;
		*cap = grown_cap;
	}
	out->slots[out->n++] = (struct dacce_plt_name){ slot, callee };
	return 0;
}

static int collect(const struct plt_file *f, Elf_Scn *rela, const GElf_Shdr *sh,
		   const struct dacce_module_info *m, const struct dacce_funcs *funcs,
		   bool (*wanted)(uintptr_t, void *), void *ctx, struct dacce_plt_names *out,
		   size_t *cap)
{
	Elf_Scn *symtab = elf_getscn(f->elf, sh->sh_link);
	Elf_Data *data = elf_getdata(rela, NULL), *syms;
	size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	GElf_Shdr sym_sh;
	int err = 0;

	if (!symtab || !data || !gelf_getshdr(symtab, &sym_sh))
		return 0;
	syms = elf_getdata(symtab, NULL);
	for (size_t i = 0; syms && i < count && !err; i++) {
		uintptr_t slot, bound, callee;
		GElf_Rela r;

		if (!gelf_getrela(data, (int)i, &r))
			break;
		if (GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT)
			continue;
		slot = m->bias + r.r_offset;
		if (slot < m->start || slot + sizeof(uintptr_t) > m->end)
			continue;
		memcpy(&bound, (const void *)slot, sizeof(bound));
		if (!dacce_funcs_in_plt(funcs, bound))
			continue; /* bound already: the slot itself names the callee */
		callee = bind_as_loader(f, syms, sym_sh.sh_link, GELF_R_SYM(r.r_info));
		if (callee && wanted(callee, ctx))
			err = push(out, cap, slot, callee);
	}
	return err;
}

static int by_slot(const void *a, const void *b)
{
	uintptr_t x = ((const struct dacce_plt_name *)a)->slot;
	uintptr_t y = ((const struct dacce_plt_name *)b)->slot;

	return x < y ? -1 : x > y;
}

int dacce_plt_names_load(const struct dacce_module_info *m, const struct dacce_funcs *funcs,
			 bool (*wanted)(uintptr_t callee, void *ctx), void *ctx,
			 struct dacce_plt_names *out)
{
	struct plt_file f = { 0 };
	Elf_Scn *scn = NULL;
	size_t cap = 0;
	int fd, err = 0;

	memset(out, 0, sizeof(*out));
	if (!funcs->n_plt)
		return 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	fd = open(dacce_funcs_file_of(m), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f.elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!f.elf) {
		close(fd);
		return -EBADMSG;
	}
	while ((scn = elf_nextscn(f.elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNAMIC)
			read_dynamic(&f, scn, &sh);
		else if (sh.sh_type == SHT_GNU_versym)
			f.versym = elf_getdata(scn, NULL);
		else if (sh.sh_type == SHT_GNU_verneed) {
			f.verneed = scn;
			f.verneed_sh = sh;
		}
	}
	while (!f.symbolic && !f.binds_early && !err && (scn = elf_nextscn(f.elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			err = collect(&f, scn, &sh, m, funcs, wanted, ctx, out, &cap);
	}
	elf_end(f.elf);
	close(fd);
	if (err) {
		dacce_plt_names_fini(out);
		return err;
	}
	qsort(out->slots, out->n, sizeof(*out->slots), by_slot);
	out->slot_keys = malloc((out->n ? out->n : 1) * sizeof(*out->slot_keys));
	if (!out->slot_keys) {
		dacce_plt_names_fini(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < out->n; i++)
		out->slot_keys[i] = out->slots[i].slot;
	return 0;
}

void dacce_plt_names_fini(struct dacce_plt_names *names)
{
	if (!names)
		return;
	free(names->slots);
	free(names->slot_keys);
	memset(names, 0, sizeof(*names));
}

uintptr_t dacce_plt_names_callee(const struct dacce_plt_names *names, uintptr_t slot)
{
	size_t at = dacce_lower_bound_u64(names->slot_keys, names->n, slot);

	return at < names->n && names->slot_keys[at] == slot ? names->slots[at].callee : 0;
}
