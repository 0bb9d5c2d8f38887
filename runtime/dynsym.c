// SPDX-License-Identifier: MIT
#include "dynsym.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>

struct dynamic_tables {
	uintptr_t bias;
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Half) *versym; /* NULL: no versions */
	const uint32_t *gnu_hash, *sysv_hash;
};

struct next_search {
	uintptr_t after;
	const char *name;
	bool passed; /* the module holding after was seen */
	uintptr_t found;
};

/*
 * The loader relocates most dynamic entries in place; a module whose
 * .dynamic is read-only (the vDSO) keeps link-time addresses.
 */
static const void *dynamic_pointer(uintptr_t bias, ElfW(Addr) value)
{
	return (const void *)(value < bias ? value + bias : value);
}

static const ElfW(Dyn) *dynamic_section(const struct dl_phdr_info *info)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	return NULL;
}

static bool read_tables(const struct dl_phdr_info *info, struct dynamic_tables *t)
{
	const ElfW(Dyn) *dyn = dynamic_section(info);

	memset(t, 0, sizeof(*t));
	t->bias = info->dlpi_addr;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		const void *p = dynamic_pointer(t->bias, dyn->d_un.d_ptr);

		switch (dyn->d_tag) {
		case DT_SYMTAB: t->symtab = p; break;
		case DT_STRTAB: t->strtab = p; break;
		case DT_VERSYM: t->versym = p; break;
		case DT_GNU_HASH: t->gnu_hash = p; break;
		case DT_HASH: t->sysv_hash = p; break;
		default: break;
		}
	}
	return t->symtab && t->strtab && (t->gnu_hash || t->sysv_hash);
}

/*
 * A definition dlsym would return the address of: defined, code or data, not
 * an IFUNC (whose address is its resolver's), the default version.
 */
static bool is_default_definition(const struct dynamic_tables *t, uint32_t index, const char *name)
{
	const ElfW(Sym) *sym = &t->symtab[index];
	unsigned type = ELF64_ST_TYPE(sym->st_info);

	if (sym->st_shndx == SHN_UNDEF || strcmp(t->strtab + sym->st_name, name) != 0)
		return false;
	if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE)
		return false;
	if (ELF64_ST_BIND(sym->st_info) == STB_LOCAL)
		return false;
	return !t->versym || !(t->versym[index] & 0x8000); /* hidden: an older version's */
}

static uint32_t gnu_hash_of(const char *name)
{
	uint32_t h = 5381;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	return h;
}

static uint32_t sysv_hash_of(const char *name)
{
	uint32_t h = 0, g;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
		h = (h << 4) + *c;
		g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* The symbol index of name's default definition, or 0 (index 0 is never a symbol). */
static uint32_t find_index(const struct dynamic_tables *t, const char *name)
{
	if (t->gnu_hash) {
		uint32_t n_buckets = t->gnu_hash[0], sym_offset = t->gnu_hash[1];
		uint32_t bloom_words = t->gnu_hash[2];
		const uint32_t *buckets = t->gnu_hash + 4 + bloom_words * (sizeof(ElfW(Addr)) / 4);
		const uint32_t *chain = buckets + n_buckets;
		uint32_t h = gnu_hash_of(name), i;

		if (!n_buckets)
			return 0;
		i = buckets[h % n_buckets];
		if (i == 0 || i < sym_offset) /* an empty bucket */
			return 0;
		for (;; i++) {
			uint32_t link = chain[i - sym_offset];

			if ((link | 1) == (h | 1) && is_default_definition(t, i, name))
				return i;
			if (link & 1)
				break;
		}
		return 0;
	}
	{
		uint32_t n_buckets = t->sysv_hash[0];
		const uint32_t *buckets = t->sysv_hash + 2, *chain = buckets + n_buckets;

		if (!n_buckets)
			return 0;
		for (uint32_t i = buckets[sysv_hash_of(name) % n_buckets]; i; i = chain[i])
			if (is_default_definition(t, i, name))
				return i;
		return 0;
	}
}

static bool holds(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= start && addr - start < ph->p_memsz)
			return true;
	}
	return false;
}

static int search_next(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct next_search *s = arg;
	struct dynamic_tables t;
	uint32_t index;

	(void)size;
	if (!s->passed) {
		s->passed = holds(info, s->after);
		return 0;
	}
	if (!read_tables(info, &t) || !(index = find_index(&t, s->name)))
		return 0;
	s->found = t.bias + t.symtab[index].st_value;
	return 1;
}

uintptr_t dacce_dynsym_next(uintptr_t after, const char *name)
{
	struct next_search s = { .after = after, .name = name };

	dl_iterate_phdr(search_next, &s);
	return s.found;
}
