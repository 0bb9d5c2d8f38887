// SPDX-License-Identifier: MIT
#include "gdbjit.h"

#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- gdb's side of the interface */

/*
 * gdb finds both by name in every module, .symtab included.  They are not
 * exported (libdacce.map): a JIT in the program (LLVM's, say) defines the
 * same names, and its references would bind to ours, preloaded first, and
 * write our list under a lock of its own.  So a stripped libdacce.so tells
 * gdb nothing.  The runtime itself uses the hidden names.
 */
__attribute__((visibility("hidden"))) struct jit_descriptor dacce_jit_descriptor = { 1, 0, NULL,
										    NULL };
extern struct jit_descriptor __jit_debug_descriptor
	__attribute__((alias("dacce_jit_descriptor"), visibility("default")));

/* gdb keeps a breakpoint here: the body must stay, and every call to it. */
__attribute__((visibility("hidden"))) void dacce_jit_register_code(void);
__attribute__((visibility("hidden"), noipa, used)) void dacce_jit_register_code(void)
{
	__asm__ volatile("" ::: "memory");
}
extern void __jit_debug_register_code(void)
	__attribute__((alias("dacce_jit_register_code"), visibility("default")));

/* ---------------------------------------------------------------- a batch */

struct piece {
	uintptr_t start;
	size_t len;
	uint64_t group;
	uint32_t name;			/* offset in names */
	uint32_t rules, rules_len;	/* its FDE's instructions in rules; rules_len 0: no FDE */
};

struct buffer {
	uint8_t *bytes;
	size_t len, cap;
	bool failed;
};

struct dacce_gdbjit_object {
	struct piece *pieces;
	size_t n, cap;
	struct buffer names; /* .strtab: starts with its empty name */
	struct buffer rules;
};

static void put(struct buffer *b, const void *bytes, size_t len)
{
	if (b->failed || len == 0)
		return;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *grown;

		while (cap < b->len + len)
			cap *= 2;
		grown = realloc(b->bytes, cap);
		if (!grown) {
			b->failed = true;
			return;
		}
		b->bytes = grown;
		b->cap = cap;
	}
	memcpy(b->bytes + b->len, bytes, len);
	b->len += len;
}

/* Room for len more bytes, at once. */
static void reserve(struct buffer *b, size_t len)
{
	uint8_t *grown;

	if (b->failed || b->len + len <= b->cap)
		return;
	grown = realloc(b->bytes, b->len + len);
	if (!grown) {
		b->failed = true;
		return;
	}
	b->bytes = grown;
	b->cap = b->len + len;
}

static void put_u8(struct buffer *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put_u32(struct buffer *b, uint32_t v)
{
	put(b, &v, sizeof(v));
}

static void put_u64(struct buffer *b, uint64_t v)
{
	put(b, &v, sizeof(v));
}

static void put_uleb(struct buffer *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;

		v >>= 7;
		put_u8(b, byte | (v ? 0x80 : 0));
	} while (v);
}

static void put_sleb(struct buffer *b, int64_t v)
{
	for (bool more = true; more;) {
		uint8_t byte = v & 0x7f;

		v >>= 7; /* arithmetic: the sign stays */
		more = !((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40)));
		put_u8(b, byte | (more ? 0x80 : 0));
	}
}

static void pad_to(struct buffer *b, size_t align, uint8_t fill)
{
	while (b->len % align)
		put_u8(b, fill);
}

/* Typical sizes: "dacce:call@function+0x1f" and a call site's row after the CIE's. */
#define NAME_GUESS 40
#define RULES_GUESS 12

struct dacce_gdbjit_object *dacce_gdbjit_begin(size_t expected)
{
	struct dacce_gdbjit_object *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->pieces = malloc((expected ? expected : 1) * sizeof(*o->pieces));
	o->cap = o->pieces ? (expected ? expected : 1) : 0;
	reserve(&o->names, 1 + expected * NAME_GUESS);
	reserve(&o->rules, expected * RULES_GUESS);
	put_u8(&o->names, 0);
	if (!o->pieces || o->names.failed || o->rules.failed) {
		dacce_gdbjit_discard(o);
		return NULL;
	}
	return o;
}

void dacce_gdbjit_discard(struct dacce_gdbjit_object *o)
{
	if (!o)
		return;
	free(o->pieces);
	free(o->names.bytes);
	free(o->rules.bytes);
	free(o);
}

size_t dacce_gdbjit_count(const struct dacce_gdbjit_object *o)
{
	return o ? o->n : 0;
}

/*
 * The rules every FDE starts from (its CIE's): the System V ABI's, as at a
 * function's entry.  Rows then only write what differs: most of a call
 * site's row is this.
 */
static struct dacce_cfa_reg_rule default_rule(int reg)
{
	switch (reg) {
	case 3: case 6: case 12: case 13: case 14: case 15: /* callee-saved */
		return (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_SAME };
	case 7: /* %rsp: the CFA */
		return (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_IS, .offset = 0 };
	case DACCE_CFA_REGS - 1: /* the return address */
		return (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_AT, .offset = -8 };
	default: /* caller-saved */
		return (struct dacce_cfa_reg_rule){ .kind = DACCE_CFA_UNDEFINED };
	}
}

static bool same_rule(const struct dacce_cfa_reg_rule *a, const struct dacce_cfa_reg_rule *b)
{
	return a->kind == b->kind && (a->kind != DACCE_CFA_IN_REG || a->reg == b->reg) &&
	       ((a->kind != DACCE_CFA_AT && a->kind != DACCE_CFA_IS) || a->offset == b->offset);
}

/* One register's rule as a DWARF call frame instruction (alignment factors 1). */
static void encode_rule(struct buffer *b, int reg, const struct dacce_cfa_reg_rule *r)
{
	switch (r->kind) {
	case DACCE_CFA_SAME:
		put_u8(b, DW_CFA_same_value);
		put_uleb(b, (uint64_t)reg);
		break;
	case DACCE_CFA_UNDEFINED:
		put_u8(b, DW_CFA_undefined);
		put_uleb(b, (uint64_t)reg);
		break;
	case DACCE_CFA_AT:
		put_u8(b, DW_CFA_offset_extended_sf);
		put_uleb(b, (uint64_t)reg);
		put_sleb(b, r->offset);
		break;
	case DACCE_CFA_IS:
		put_u8(b, DW_CFA_val_offset_sf);
		put_uleb(b, (uint64_t)reg);
		put_sleb(b, r->offset);
		break;
	case DACCE_CFA_IN_REG:
		put_u8(b, DW_CFA_register);
		put_uleb(b, (uint64_t)reg);
		put_uleb(b, (uint64_t)r->reg);
		break;
	}
}

/* The row as call frame instructions after the CIE's. */
static void encode_row(struct buffer *b, const struct dacce_cfa_row *row)
{
	put_u8(b, DW_CFA_def_cfa_sf);
	put_uleb(b, (uint64_t)row->cfa_reg);
	put_sleb(b, row->cfa_offset);
	for (int reg = 0; reg < DACCE_CFA_REGS; reg++) {
		struct dacce_cfa_reg_rule fallback = default_rule(reg);

		if (!same_rule(&row->regs[reg], &fallback))
			encode_rule(b, reg, &row->regs[reg]);
	}
}

static int add_piece(struct dacce_gdbjit_object *o, uintptr_t start, size_t len, uint64_t group,
		     const char *name, const struct dacce_cfa_row *row, const uint8_t *rules,
		     size_t n_rules)
{
	struct piece p = { .start = start, .len = len, .group = group };

	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct piece *grown = realloc(o->pieces, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		o->pieces = grown;
		o->cap = cap;
	}
	p.name = (uint32_t)o->names.len;
	put(&o->names, name, strlen(name) + 1);
	p.rules = (uint32_t)o->rules.len;
	if (row)
		encode_row(&o->rules, row);
	else
		put(&o->rules, rules, n_rules);
	p.rules_len = (uint32_t)(o->rules.len - p.rules);
	if (o->names.failed || o->rules.failed)
		return -ENOMEM;
	o->pieces[o->n++] = p;
	return 0;
}

int dacce_gdbjit_add(struct dacce_gdbjit_object *o, uintptr_t start, size_t len, uint64_t group,
		     const char *name, const struct dacce_cfa_row *row)
{
	return add_piece(o, start, len, group, name, row, NULL, 0);
}

int dacce_gdbjit_add_rules(struct dacce_gdbjit_object *o, uintptr_t start, size_t len,
			   uint64_t group, const char *name, const uint8_t *rules, size_t n_rules)
{
	return add_piece(o, start, len, group, name, NULL, rules, n_rules);
}

/* ---------------------------------------------------------------- the ELF image */

/* One section with no bytes per group, spanning its pieces. */
struct span {
	uint64_t group;
	uintptr_t lo, hi;
};

/* The groups of the batch, in order of first appearance; each piece's span index in *of. */
static int spans_of(const struct dacce_gdbjit_object *o, struct span **spans, size_t *n_spans,
		    uint32_t **of)
{
	*spans = calloc(o->n ? o->n : 1, sizeof(**spans));
	*of = calloc(o->n ? o->n : 1, sizeof(**of));
	*n_spans = 0;
	if (!*spans || !*of)
		return -ENOMEM;
	for (size_t i = 0; i < o->n; i++) {
		const struct piece *p = &o->pieces[i];
		size_t s = 0;

		while (s < *n_spans && (*spans)[s].group != p->group)
			s++;
		if (s == *n_spans) {
			(*spans)[s] = (struct span){ p->group, p->start, p->start + p->len };
			(*n_spans)++;
		}
		if (p->start < (*spans)[s].lo)
			(*spans)[s].lo = p->start;
		if (p->start + p->len > (*spans)[s].hi)
			(*spans)[s].hi = p->start + p->len;
		(*of)[i] = (uint32_t)s;
	}
	return 0;
}

static void put_symbols(struct buffer *b, const struct dacce_gdbjit_object *o, const uint32_t *of)
{
	Elf64_Sym none = { 0 };

	reserve(b, (o->n + 1) * sizeof(Elf64_Sym));
	put(b, &none, sizeof(none));
	for (size_t i = 0; i < o->n; i++) {
		const struct piece *p = &o->pieces[i];
		Elf64_Sym sym = {
			.st_name = p->name,
			.st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC),
			.st_shndx = (Elf64_Half)(1 + of[i]), /* after the null section */
			.st_value = p->start,
			.st_size = p->len,
		};

		put(b, &sym, sizeof(sym));
	}
}

/* .debug_frame: one CIE (no initial rules), an FDE per piece with a row. */
static void put_frames(struct buffer *b, const struct dacce_gdbjit_object *o)
{
	size_t length_at;
	uint32_t length;

	/* The CIE, then per FDE its header, rules and padding. */
	reserve(b, 64 + o->n * (24 + 7) + o->rules.len);
	put_u32(b, 0); /* length, below */
	put_u32(b, UINT32_MAX); /* a CIE */
	put_u8(b, 1);	 /* version */
	put_u8(b, 0);	 /* no augmentation */
	put_uleb(b, 1);	 /* code alignment */
	put_sleb(b, 1);	 /* data alignment */
	put_u8(b, DACCE_CFA_REGS - 1); /* the return address column */
	put_u8(b, DW_CFA_def_cfa);
	put_uleb(b, 7);
	put_uleb(b, 8);
	for (int reg = 0; reg < DACCE_CFA_REGS; reg++) {
		struct dacce_cfa_reg_rule rule = default_rule(reg);

		encode_rule(b, reg, &rule);
	}
	pad_to(b, 8, DW_CFA_nop);
	length = (uint32_t)(b->len - 4);
	if (!b->failed)
		memcpy(b->bytes, &length, sizeof(length));
	for (size_t i = 0; i < o->n; i++) {
		const struct piece *p = &o->pieces[i];

		if (!p->rules_len)
			continue;
		length_at = b->len;
		put_u32(b, 0);
		put_u32(b, 0); /* the CIE, at offset 0 */
		put_u64(b, p->start);
		put_u64(b, p->len);
		put(b, o->rules.bytes + p->rules, p->rules_len);
		pad_to(b, 8, DW_CFA_nop);
		length = (uint32_t)(b->len - length_at - 4);
		if (!b->failed)
			memcpy(b->bytes + length_at, &length, sizeof(length));
	}
}

static bool any_rules(const struct dacce_gdbjit_object *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->pieces[i].rules_len)
			return true;
	return false;
}

enum { SEC_SYMTAB, SEC_STRTAB, SEC_FRAMES, SEC_SHSTRTAB, N_TAIL_SECTIONS };

int dacce_gdbjit_image(const struct dacce_gdbjit_object *o, uint8_t **image, size_t *size)
{
	static const char shstrtab[] = "\0.text\0.symtab\0.strtab\0.debug_frame\0.shstrtab";
	enum { NAME_TEXT = 1, NAME_SYMTAB = 7, NAME_STRTAB = 15, NAME_FRAMES = 23, NAME_SHSTRTAB = 36 };
	struct buffer out = { 0 }, symbols = { 0 }, frames = { 0 };
	struct span *spans = NULL;
	uint32_t *of = NULL;
	size_t n_spans, n_sections, offsets[N_TAIL_SECTIONS];
	Elf64_Ehdr ehdr = { 0 };
	int err;

	err = spans_of(o, &spans, &n_spans, &of);
	if (err)
		goto cleanup;
	n_sections = 1 + n_spans + N_TAIL_SECTIONS;
	if (n_sections >= SHN_LORESERVE) {
		err = -E2BIG;
		goto cleanup;
	}
	put_symbols(&symbols, o, of);
	if (any_rules(o))
		put_frames(&frames, o);
	/* Exactly the image's size: it stays for the life of the process. */
	out.cap = sizeof(ehdr) + symbols.len + o->names.len + 8 + frames.len + sizeof(shstrtab) + 8 +
		  n_sections * sizeof(Elf64_Shdr);
	out.bytes = malloc(out.cap);
	out.failed = !out.bytes;

	put(&out, &ehdr, sizeof(ehdr)); /* filled in last */
	offsets[SEC_SYMTAB] = out.len;
	put(&out, symbols.bytes, symbols.len);
	offsets[SEC_STRTAB] = out.len;
	put(&out, o->names.bytes, o->names.len);
	pad_to(&out, 8, 0);
	offsets[SEC_FRAMES] = out.len;
	put(&out, frames.bytes, frames.len);
	offsets[SEC_SHSTRTAB] = out.len;
	put(&out, shstrtab, sizeof(shstrtab));
	pad_to(&out, 8, 0);

	ehdr = (Elf64_Ehdr){
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT,
			     ELFOSABI_NONE },
		.e_type = ET_EXEC,
		.e_machine = EM_X86_64,
		.e_version = EV_CURRENT,
		.e_shoff = out.len,
		.e_ehsize = sizeof(Elf64_Ehdr),
		.e_shentsize = sizeof(Elf64_Shdr),
		.e_shnum = (Elf64_Half)n_sections,
		.e_shstrndx = (Elf64_Half)(1 + n_spans + SEC_SHSTRTAB),
	};
	{
		Elf64_Shdr null_section = { 0 };

		put(&out, &null_section, sizeof(null_section));
	}
	for (size_t s = 0; s < n_spans; s++) {
		Elf64_Shdr text = {
			.sh_name = NAME_TEXT,
			.sh_type = SHT_NOBITS,
			.sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			.sh_addr = spans[s].lo,
			.sh_offset = offsets[SEC_SYMTAB],
			.sh_size = spans[s].hi - spans[s].lo,
			.sh_addralign = 1,
		};

		put(&out, &text, sizeof(text));
	}
	{
		Elf64_Shdr tail[N_TAIL_SECTIONS] = {
			[SEC_SYMTAB] = { .sh_name = NAME_SYMTAB, .sh_type = SHT_SYMTAB,
					 .sh_offset = offsets[SEC_SYMTAB], .sh_size = symbols.len,
					 .sh_link = (Elf64_Word)(1 + n_spans + SEC_STRTAB),
					 .sh_info = (Elf64_Word)(o->n + 1), /* all local */
					 .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) },
			[SEC_STRTAB] = { .sh_name = NAME_STRTAB, .sh_type = SHT_STRTAB,
					 .sh_offset = offsets[SEC_STRTAB], .sh_size = o->names.len,
					 .sh_addralign = 1 },
			[SEC_FRAMES] = { .sh_name = NAME_FRAMES, .sh_type = SHT_PROGBITS,
					 .sh_offset = offsets[SEC_FRAMES], .sh_size = frames.len,
					 .sh_addralign = 8 },
			[SEC_SHSTRTAB] = { .sh_name = NAME_SHSTRTAB, .sh_type = SHT_STRTAB,
					   .sh_offset = offsets[SEC_SHSTRTAB],
					   .sh_size = sizeof(shstrtab), .sh_addralign = 1 },
		};

		put(&out, tail, sizeof(tail));
	}
	if (out.failed || symbols.failed || frames.failed) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(out.bytes, &ehdr, sizeof(ehdr));
	*image = out.bytes;
	*size = out.len;
	out.bytes = NULL;
cleanup:
	free(out.bytes);
	free(symbols.bytes);
	free(frames.bytes);
	free(spans);
	free(of);
	return err;
}

int dacce_gdbjit_commit(struct dacce_gdbjit_object *o)
{
	struct jit_code_entry *entry = NULL;
	uint8_t *image = NULL;
	size_t size;
	int err = 0;

	if (!o || o->n == 0)
		goto cleanup;
	entry = calloc(1, sizeof(*entry));
	err = entry ? dacce_gdbjit_image(o, &image, &size) : -ENOMEM;
	if (err) {
		free(entry);
		goto cleanup;
	}
	/* Both stay for the life of the process: a debugger may attach at any time and read them. */
	entry->symfile_addr = (const char *)image;
	entry->symfile_size = size;
	entry->next_entry = dacce_jit_descriptor.first_entry;
	if (entry->next_entry)
		entry->next_entry->prev_entry = entry;
	dacce_jit_descriptor.first_entry = entry;
	dacce_jit_descriptor.relevant_entry = entry;
	dacce_jit_descriptor.action_flag = JIT_REGISTER_FN;
	dacce_jit_register_code();
	dacce_jit_descriptor.action_flag = JIT_NOACTION;
cleanup:
	dacce_gdbjit_discard(o);
	return err;
}
