// SPDX-License-Identifier: MIT
/*
 * Why .eh_frame is walked entry by entry (dwarf_next_cfi) rather than read
 * through .eh_frame_hdr's search table: the table gives each FDE's start but
 * not its length, and the header is optional.  dwarf_next_cfi() does the
 * framing (lengths, CIE or FDE, bounds, the terminator) and the CIE's
 * augmentation; we decode only what bounds need: the FDE's pc_begin and
 * pc_range, in the pointer encoding its CIE names with 'R'.
 */
#include "funcs.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ehframe.h"
#include "sort.h"

#define SELF_EXE "/proc/self/exe"

/* What a section is to us; indexed by section number. */
struct section {
	GElf_Addr start, end; /* link-time; 0, 0 for sections not loaded */
	bool exec;
	bool plt; /* stubs, not functions: calls through them are told by the GOT slot */
};

struct elf_file {
	int fd;
	Elf *elf;
	struct section *sections;
	size_t n_sections;
	Elf_Scn *symtab, *dynsym, *eh_frame;
};

enum candidate_kind { CANDIDATE_SYMBOL, CANDIDATE_FDE };

/* A possible function, in link-time addresses, before the merge. */
struct candidate {
	GElf_Addr start, end;
	const char *name; /* into the ELF file's data; NULL for FDEs and unnamed symbols */
	unsigned flags;	  /* DACCE_FUNC_* */
	uint8_t kind;	  /* enum candidate_kind */
	uint8_t binding;  /* preference among aliases: global 0, weak 1, other 2 */
};

struct candidates {
	struct candidate *v;
	size_t n, cap;
};

static int push_candidate(struct candidates *c, const struct candidate *cand)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		struct candidate *grown = realloc(c->v, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		c->v = grown;
		c->cap = cap;
	}
	c->v[c->n++] = *cand;
	return 0;
}

/* ------------------------------------------------------------ the file */

/* The main program is read through /proc/self/exe when that is the file we ran. */
static bool is_running_program(const struct dacce_module_info *m)
{
	char buf[PATH_MAX];
	ssize_t len;

	if (!m->is_main)
		return false;
	len = readlink(SELF_EXE, buf, sizeof(buf) - 1);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	return strcmp(buf, m->path) == 0;
}

const char *dacce_funcs_file_of(const struct dacce_module_info *m)
{
	return is_running_program(m) ? SELF_EXE : m->path;
}

static int open_elf(const struct dacce_module_info *m, struct elf_file *f)
{
	const char *path = dacce_funcs_file_of(m);
	size_t n_sections;
	GElf_Ehdr ehdr;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	/* Read, not mapped: a file truncated under us must not raise SIGBUS in the target. */
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || gelf_getclass(f->elf) != ELFCLASS64)
		return -ENOEXEC;
	/* Only loadable files have symbol values that are addresses. */
	if (!gelf_getehdr(f->elf, &ehdr) || (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN))
		return -ENOEXEC;
	if (elf_getshdrnum(f->elf, &n_sections) != 0)
		return -EBADMSG;
	if (n_sections == 0)
		return -ENODATA;
	f->sections = calloc(n_sections, sizeof(*f->sections));
	if (!f->sections)
		return -ENOMEM;
	f->n_sections = n_sections;
	return 0;
}

static void close_elf(struct elf_file *f)
{
	free(f->sections);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
}

static void add_range(struct dacce_range *ranges, size_t *n, size_t max, uintptr_t start,
		      uintptr_t end)
{
	if (start < end && *n < max)
		ranges[(*n)++] = (struct dacce_range){ start, end };
}

static bool is_plt_name(const char *name)
{
	return strcmp(name, ".plt") == 0 || strcmp(name, ".plt.sec") == 0 ||
	       strcmp(name, ".plt.got") == 0;
}

/* Fills f->sections, finds the tables we read, records PLT and GOT ranges. */
static int survey_sections(struct elf_file *f, uintptr_t bias, struct dacce_funcs *out)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(f->elf, &shstrndx) != 0)
		return -EBADMSG;
	for (size_t i = 1; i < f->n_sections; i++) {
		Elf_Scn *scn = elf_getscn(f->elf, i);
		const char *name;
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return -EBADMSG;
		name = elf_strptr(f->elf, shstrndx, sh.sh_name);
		if (!name)
			name = "";
		if ((sh.sh_flags & SHF_ALLOC) && sh.sh_addr + sh.sh_size >= sh.sh_addr) {
			f->sections[i].start = sh.sh_addr;
			f->sections[i].end = sh.sh_addr + sh.sh_size;
			f->sections[i].exec = (sh.sh_flags & SHF_EXECINSTR) != 0;
		}
		if (sh.sh_type == SHT_SYMTAB)
			f->symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			f->dynsym = scn;
		else if (sh.sh_type == SHT_PROGBITS && strcmp(name, ".eh_frame") == 0)
			f->eh_frame = scn;
		if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_type == SHT_NOBITS)
			continue;
		f->sections[i].plt = is_plt_name(name);
		if (f->sections[i].plt)
			add_range(out->plt, &out->n_plt, DACCE_FUNCS_MAX_PLT,
				  f->sections[i].start + bias, f->sections[i].end + bias);
		else if (strcmp(name, ".got") == 0 || strcmp(name, ".got.plt") == 0)
			add_range(out->got, &out->n_got, DACCE_FUNCS_MAX_GOT,
				  f->sections[i].start + bias, f->sections[i].end + bias);
	}
	return 0;
}

/* The executable section (not a PLT) holding [start, end), or NULL. */
static const struct section *exec_section_of(const struct elf_file *f, GElf_Addr start,
					     GElf_Addr end)
{
	for (size_t i = 1; i < f->n_sections; i++) {
		const struct section *s = &f->sections[i];

		if (s->exec && !s->plt && start >= s->start && end <= s->end && start < end)
			return s;
	}
	return NULL;
}

/* ------------------------------------------------------------ symbols */

static uint8_t binding_preference(unsigned char binding)
{
	return binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 1 : 2;
}

static int add_symbol(struct elf_file *f, const GElf_Sym *sym, const char *name,
		      struct candidates *c)
{
	unsigned char type = GELF_ST_TYPE(sym->st_info);
	struct candidate cand = { .kind = CANDIDATE_SYMBOL, .flags = DACCE_FUNC_SYMBOL };
	const struct section *s;

	if (type != STT_FUNC && type != STT_GNU_IFUNC)
		return 0;
	/* Undefined, absolute, common and extended indices are not code of this file. */
	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE ||
	    sym->st_shndx >= f->n_sections)
		return 0;
	s = &f->sections[sym->st_shndx];
	if (!s->exec || s->plt || sym->st_value < s->start || sym->st_value >= s->end)
		return 0;
	cand.start = sym->st_value;
	if (sym->st_size == 0) {
		/* Clipped at the next start during the merge, or sized by an FDE. */
		cand.end = s->end;
		cand.flags |= DACCE_FUNC_END_GUESSED;
	} else {
		cand.end = sym->st_size > s->end - sym->st_value ? s->end
								 : sym->st_value + sym->st_size;
	}
	cand.name = name && name[0] ? name : NULL;
	cand.binding = binding_preference(GELF_ST_BIND(sym->st_info));
	return push_candidate(c, &cand);
}

static int collect_symbols(struct elf_file *f, Elf_Scn *scn, struct candidates *c)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t count;

	if (!gelf_getshdr(scn, &sh))
		return -EBADMSG;
	if (sh.sh_entsize == 0)
		return -EBADMSG;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -EBADMSG;
	count = sh.sh_size / sh.sh_entsize;
	if (count > INT_MAX) /* gelf_getsym's index is an int */
		return -EBADMSG;
	/* Entry 0 is the reserved null symbol. */
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		int err;

		if (!gelf_getsym(data, (int)i, &sym))
			return -EBADMSG;
		err = add_symbol(f, &sym, elf_strptr(f->elf, sh.sh_link, sym.st_name), c);
		if (err)
			return err;
	}
	return 0;
}

/* ------------------------------------------------------------ .eh_frame */

static bool read_uleb128(const uint8_t **pp, const uint8_t *end, uint64_t *value)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *pp < end; shift += 7) {
		uint8_t byte = *(*pp)++;

		if (shift < 64)
			v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*value = v;
			return true;
		}
	}
	return false;
}

static bool read_sleb128(const uint8_t **pp, const uint8_t *end, int64_t *value)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*pp < end) {
		uint8_t byte = *(*pp)++;

		if (shift < 64)
			v |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (!(byte & 0x80)) {
			if (shift < 64 && (byte & 0x40))
				v |= ~(uint64_t)0 << shift;
			*value = (int64_t)v;
			return true;
		}
	}
	return false;
}

/* Reads a fixed-size little-endian field, sign-extending when asked. */
static bool read_fixed(const uint8_t **pp, const uint8_t *end, size_t size, bool is_signed,
		       uint64_t *value)
{
	uint64_t v = 0;

	if ((size_t)(end - *pp) < size)
		return false;
	for (size_t i = 0; i < size; i++)
		v |= (uint64_t)(*pp)[i] << (8 * i);
	if (is_signed && size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * size);
	*pp += size;
	*value = v;
	return true;
}

/* The value format of a DW_EH_PE encoding (low nibble), without its application. */
static bool read_encoded_format(const uint8_t **pp, const uint8_t *end, uint8_t encoding,
				uint64_t *value)
{
	int64_t s;

	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return read_fixed(pp, end, 8, false, value);
	case DW_EH_PE_udata2:
		return read_fixed(pp, end, 2, false, value);
	case DW_EH_PE_sdata2:
		return read_fixed(pp, end, 2, true, value);
	case DW_EH_PE_udata4:
		return read_fixed(pp, end, 4, false, value);
	case DW_EH_PE_sdata4:
		return read_fixed(pp, end, 4, true, value);
	case DW_EH_PE_uleb128:
		return read_uleb128(pp, end, value);
	case DW_EH_PE_sleb128:
		if (!read_sleb128(pp, end, &s))
			return false;
		*value = (uint64_t)s;
		return true;
	default:
		return false;
	}
}

/*
 * An FDE's pc_begin: only absolute and pc-relative addresses mean anything
 * without a running program (text/data/function-relative bases are not
 * defined for .eh_frame on x86-64; indirect would need the GOT's contents).
 */
static bool read_pc_begin(const uint8_t **pp, const uint8_t *end, uint8_t encoding,
			  GElf_Addr field_addr, GElf_Addr *value)
{
	uint64_t v;

	if ((encoding & DW_EH_PE_indirect) || !read_encoded_format(pp, end, encoding, &v))
		return false;
	switch (encoding & 0x70) {
	case DW_EH_PE_absptr:
		*value = v;
		return true;
	case DW_EH_PE_pcrel:
		*value = field_addr + v;
		return true;
	default:
		return false;
	}
}

/* The FDE pointer encoding a CIE's augmentation names ('R'); false if unknown. */
static bool cie_fde_encoding(const Dwarf_CIE *cie, uint8_t *encoding)
{
	const char *aug = cie->augmentation;
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p ? p + cie->augmentation_data_size : NULL;

	*encoding = DW_EH_PE_absptr;
	if (aug[0] == '\0')
		return true;
	/* Without 'z' the augmentation data cannot be walked safely. */
	if (aug[0] != 'z' || !p)
		return false;
	for (aug++; *aug; aug++) {
		uint64_t ignored;

		switch (*aug) {
		case 'R':
			if (p >= end)
				return false;
			*encoding = *p;
			return true;
		case 'P':
			if (p >= end)
				return false;
			p++;
			if (!read_encoded_format(&p, end, p[-1], &ignored))
				return false;
			break;
		case 'L':
			if (p >= end)
				return false;
			p++;
			break;
		case 'S': /* signal frame */
		case 'B': /* AArch64 BTI */
		case 'G': /* AArch64 MTE */
			break;
		default:
			return false;
		}
	}
	return true; /* no 'R': absolute pointers */
}

struct eh_frame {
	const unsigned char *ident;
	Elf_Data *data;
	GElf_Addr addr; /* link-time address of the section */
	/* The last CIE seen: FDEs mostly share a few. */
	Dwarf_Off cie_offset;
	uint8_t cie_encoding;
	bool cie_known, cie_usable;
};

/* 0 and the CIE's FDE encoding (*usable false if we cannot decode it), or -EBADMSG. */
static int fde_encoding(struct eh_frame *eh, Dwarf_Off cie_offset, uint8_t *encoding,
			bool *usable)
{
	Dwarf_CFI_Entry cie;
	Dwarf_Off next;

	if (!eh->cie_known || eh->cie_offset != cie_offset) {
		if (dwarf_next_cfi(eh->ident, eh->data, true, cie_offset, &next, &cie) != 0 ||
		    !dwarf_cfi_cie_p(&cie))
			return -EBADMSG;
		eh->cie_offset = cie_offset;
		eh->cie_usable = cie_fde_encoding(&cie.cie, &eh->cie_encoding);
		eh->cie_known = true;
	}
	*encoding = eh->cie_encoding;
	*usable = eh->cie_usable;
	return 0;
}

/*
 * Whether the CFA at addr (run-time) is %rsp + 8 (the return address on
 * top), as at a function's entry.  Read from the mapped tables, without
 * libdw: indexing every FDE of a big program with it took a tenth of
 * CPython's start-up.
 */
static bool cfa_is_entry(const struct dacce_eh_frame *tables, uintptr_t addr)
{
	struct dacce_cfa_row row;
	uintptr_t lo, hi;

	/* Unknown rules: assume an ordinary entry. */
	if (!tables || dacce_eh_frame_row(tables, addr, &row, &lo, &hi) != 0)
		return true;
	return row.cfa_reg == 7 && row.cfa_offset == 8;
}

static int add_fde(struct elf_file *f, struct eh_frame *eh, const Dwarf_FDE *fde,
		   struct candidates *c, const struct dacce_eh_frame *tables, uintptr_t bias)
{
	struct candidate cand = { .kind = CANDIDATE_FDE, .flags = DACCE_FUNC_FDE };
	const uint8_t *p = fde->start;
	GElf_Addr field_addr = eh->addr + (GElf_Addr)(p - (const uint8_t *)eh->data->d_buf);
	uint64_t range;
	uint8_t encoding;
	bool usable;
	int err;

	err = fde_encoding(eh, fde->CIE_pointer, &encoding, &usable);
	if (err || !usable)
		return err;
	if (!read_pc_begin(&p, fde->end, encoding, field_addr, &cand.start) ||
	    !read_encoded_format(&p, fde->end, encoding, &range))
		return 0;
	cand.end = cand.start + range;
	/* Discarded code leaves FDEs pointing at 0 or nowhere: keep real code only. */
	if (cand.end <= cand.start || !exec_section_of(f, cand.start, cand.end))
		return 0;
	if (!cfa_is_entry(tables, cand.start + bias))
		cand.flags |= DACCE_FUNC_FRAGMENT;
	return push_candidate(c, &cand);
}

static int collect_fdes(struct elf_file *f, const struct dacce_module_info *m,
			struct candidates *c)
{
	struct dacce_eh_frame tables;
	bool have_tables = m->eh_frame_hdr.start &&
			   dacce_eh_frame_init(&tables, m->eh_frame_hdr.start,
					       m->unwind_readable.start, m->unwind_readable.end) == 0;
	struct eh_frame eh = { 0 };
	Dwarf_Off offset = 0, next;
	GElf_Shdr sh;

	if (!f->eh_frame)
		return 0;
	if (!gelf_getshdr(f->eh_frame, &sh))
		return -EBADMSG;
	eh.ident = (const unsigned char *)elf_getident(f->elf, NULL);
	eh.data = elf_getdata(f->eh_frame, NULL);
	eh.addr = sh.sh_addr;
	if (!eh.ident || !eh.data)
		return -EBADMSG;
	if (!eh.data->d_buf || eh.data->d_size == 0)
		return 0;
	/* Rules at FDE starts tell entries from fragments; absent CFI only loses that. */
	int err = 0;

	/* Ends at the end of the section or at a zero terminator, as unwinders do. */
	for (;;) {
		Dwarf_CFI_Entry entry;
		int ret = dwarf_next_cfi(eh.ident, eh.data, true, offset, &next, &entry);

		if (ret > 0)
			break;
		if (ret < 0) {
			err = -EBADMSG;
			break;
		}
		offset = next;
		if (!dwarf_cfi_cie_p(&entry)) {
			err = add_fde(f, &eh, &entry.fde, c, have_tables ? &tables : NULL, m->bias);
			if (err)
				break;
		}
	}
	return err;
}

/* ------------------------------------------------------------ the merge */

static unsigned leading_underscores(const char *name)
{
	unsigned n = 0;

	while (name && name[n] == '_')
		n++;
	return n;
}

static int compare_values(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

/* Sorted by start; at one start the best candidate comes first. */
static int compare_candidates(const void *pa, const void *pb)
{
	const struct candidate *a = pa, *b = pb;
	bool a_sized = !(a->flags & DACCE_FUNC_END_GUESSED);
	bool b_sized = !(b->flags & DACCE_FUNC_END_GUESSED);
	int by;

	if ((by = compare_values(a->start, b->start)) != 0)
		return by;
	if (a->kind != b->kind)
		return a->kind == CANDIDATE_SYMBOL ? -1 : 1;
	if (a_sized != b_sized)
		return a_sized ? -1 : 1;
	if ((by = compare_values(b->end, a->end)) != 0) /* the larger first */
		return by;
	if ((by = compare_values(a->binding, b->binding)) != 0)
		return by;
	/* Among aliases, the public spelling: puts over _IO_puts. */
	if ((by = compare_values(leading_underscores(a->name), leading_underscores(b->name))) != 0)
		return by;
	if (!a->name || !b->name)
		return !a->name - !b->name;
	return strcmp(a->name, b->name);
}

/*
 * Makes the sorted candidates non-overlapping, in place; returns how many
 * remain.  Ranges only overlap against the last one kept, since those kept
 * are disjoint and sorted.
 */
static size_t merge_candidates(struct candidate *v, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		struct candidate *last = kept ? &v[kept - 1] : NULL;
		const struct candidate c = v[i];

		if (last && c.start == last->start) {
			/* One entry point: the best candidate stands, an FDE sizes a guess. */
			if (c.kind == CANDIDATE_FDE) {
				last->flags |= c.flags & (DACCE_FUNC_FDE | DACCE_FUNC_FRAGMENT);
				if (last->flags & DACCE_FUNC_END_GUESSED) {
					last->end = c.end;
					last->flags &= ~DACCE_FUNC_END_GUESSED;
				}
			}
			continue;
		}
		if (last && c.start < last->end) {
			bool symbol_stands = (last->flags & DACCE_FUNC_SYMBOL) &&
					     !(last->flags & DACCE_FUNC_END_GUESSED);

			if (c.kind == CANDIDATE_FDE && symbol_stands)
				continue;
			last->end = c.start;
		}
		v[kept++] = c;
	}
	return kept;
}

/* Moves the merged candidates into out, at run-time addresses, names copied. */
static int build_table(const struct candidate *v, size_t n, uintptr_t bias,
		       struct dacce_funcs *out)
{
	size_t names_size = 0;
	char *name_at;

	for (size_t i = 0; i < n; i++)
		if (v[i].name)
			names_size += strlen(v[i].name) + 1;
	out->funcs = calloc(n ? n : 1, sizeof(*out->funcs));
	out->names = malloc(names_size ? names_size : 1);
	if (!out->funcs || !out->names)
		return -ENOMEM;
	name_at = out->names;
	for (size_t i = 0; i < n; i++) {
		struct dacce_func *fn = &out->funcs[i];

		fn->start = (uintptr_t)v[i].start + bias;
		fn->end = (uintptr_t)v[i].end + bias;
		fn->flags = v[i].flags;
		if (v[i].name) {
			size_t len = strlen(v[i].name) + 1;

			memcpy(name_at, v[i].name, len);
			fn->name = name_at;
			name_at += len;
		}
	}
	out->n = n;
	return 0;
}

/* ------------------------------------------------------------ API */

int dacce_funcs_load(const struct dacce_module_info *m, struct dacce_funcs *out)
{
	struct elf_file f = { .fd = -1 };
	struct candidates c = { 0 };
	size_t n;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!m || !m->path)
		return -EINVAL;
	if (m->is_vdso || m->path[0] == '\0')
		return -ENOENT;
	err = open_elf(m, &f);
	if (err)
		goto cleanup;
	err = survey_sections(&f, m->bias, out);
	if (err)
		goto cleanup;
	if (f.symtab || f.dynsym) {
		err = collect_symbols(&f, f.symtab ? f.symtab : f.dynsym, &c);
		if (err)
			goto cleanup;
	}
	err = collect_fdes(&f, m, &c);
	if (err)
		goto cleanup;
	if (c.n)
		dacce_qsort(c.v, c.n, sizeof(*c.v), compare_candidates);
	n = merge_candidates(c.v, c.n);
	/* Names point into the file's data: copy them before it is closed. */
	err = build_table(c.v, n, m->bias, out);
cleanup:
	if (err)
		dacce_funcs_fini(out);
	free(c.v);
	close_elf(&f);
	return err;
}

void dacce_funcs_fini(struct dacce_funcs *funcs)
{
	if (!funcs)
		return;
	free(funcs->funcs);
	free(funcs->names);
	memset(funcs, 0, sizeof(*funcs));
}

const struct dacce_func *dacce_funcs_find(const struct dacce_funcs *funcs, uintptr_t addr)
{
	size_t lo = 0, hi;

	if (!funcs)
		return NULL;
	/* The last function starting at or before addr. */
	hi = funcs->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (funcs->funcs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= funcs->funcs[lo - 1].end)
		return NULL;
	return &funcs->funcs[lo - 1];
}

static bool in_ranges(const struct dacce_range *ranges, size_t n, uintptr_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (addr >= ranges[i].start && addr < ranges[i].end)
			return true;
	return false;
}

bool dacce_funcs_in_plt(const struct dacce_funcs *funcs, uintptr_t addr)
{
	return funcs && in_ranges(funcs->plt, funcs->n_plt, addr);
}

bool dacce_funcs_in_got(const struct dacce_funcs *funcs, uintptr_t addr)
{
	return funcs && in_ranges(funcs->got, funcs->n_got, addr);
}
