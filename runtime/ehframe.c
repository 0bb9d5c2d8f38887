// SPDX-License-Identifier: MIT
#include "ehframe.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A bounded reader: a read past end marks it bad and yields 0. */
struct cursor {
	uintptr_t p, end;
	bool bad;
};

static uint64_t read_bytes(struct cursor *c, size_t n)
{
	uint64_t value = 0;

	if (c->bad || c->p > c->end || n > c->end - c->p) {
		c->bad = true;
		return 0;
	}
	memcpy(&value, (const void *)c->p, n); /* little-endian */
	c->p += n;
	return value;
}

static uint8_t read_u8(struct cursor *c)
{
	return (uint8_t)read_bytes(c, 1);
}

/* The bits of a LEB128 number; *bits says how many were read, *last the final byte. */
static uint64_t read_leb(struct cursor *c, unsigned *bits, uint8_t *last)
{
	uint64_t value = 0;
	unsigned shift = 0;
	uint8_t byte;

	do {
		byte = read_u8(c);
		if (shift < 64)
			value |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
	} while ((byte & 0x80) && !c->bad);
	*bits = shift;
	*last = byte;
	return value;
}

static uint64_t read_uleb(struct cursor *c)
{
	unsigned bits;
	uint8_t last;

	return read_leb(c, &bits, &last);
}

static int64_t read_sleb(struct cursor *c)
{
	unsigned bits;
	uint8_t last;
	uint64_t value = read_leb(c, &bits, &last);

	if (bits < 64 && (last & 0x40))
		value |= ~(uint64_t)0 << bits;
	return (int64_t)value;
}

/*
 * A pointer in one of the DW_EH_PE encodings x86-64 toolchains emit:
 * absolute, PC-relative (to the field itself, mapped where it runs) or
 * relative to datarel_base (the header's search table).  Anything else, an
 * indirect one included, marks the cursor bad.
 */
static uint64_t read_encoded(struct cursor *c, uint8_t encoding, uintptr_t datarel_base)
{
	uintptr_t field = c->p;
	uint64_t value;

	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		value = read_bytes(c, 8);
		break;
	case DW_EH_PE_uleb128:
		value = read_uleb(c);
		break;
	case DW_EH_PE_udata2:
		value = read_bytes(c, 2);
		break;
	case DW_EH_PE_udata4:
		value = read_bytes(c, 4);
		break;
	case DW_EH_PE_sleb128:
		value = (uint64_t)read_sleb(c);
		break;
	case DW_EH_PE_sdata2:
		value = (uint64_t)(int64_t)(int16_t)read_bytes(c, 2);
		break;
	case DW_EH_PE_sdata4:
		value = (uint64_t)(int64_t)(int32_t)read_bytes(c, 4);
		break;
	default:
		c->bad = true;
		return 0;
	}
	switch (encoding & 0xf0) {
	case DW_EH_PE_absptr:
		return value;
	case DW_EH_PE_pcrel:
		return value + field;
	case DW_EH_PE_datarel:
		if (datarel_base)
			return value + datarel_base;
		break;
	}
	c->bad = true;
	return 0;
}

/* Skips an encoded value whose meaning does not matter (a personality routine). */
static void skip_encoded(struct cursor *c, uint8_t encoding)
{
	(void)read_encoded(c, encoding & 0x0f, 0);
}

int dacce_eh_frame_init(struct dacce_eh_frame *eh, uintptr_t hdr, uintptr_t lo, uintptr_t hi)
{
	struct cursor c = { .p = hdr, .end = hi };
	uint8_t version, frame_encoding, count_encoding, table_encoding;
	uint64_t count;

	if (hdr < lo || hdr >= hi)
		return -ENOENT;
	version = read_u8(&c);
	frame_encoding = read_u8(&c);
	count_encoding = read_u8(&c);
	table_encoding = read_u8(&c);
	/* Binary search needs fixed-size entries: ld and lld both write 4-byte datarel ones. */
	if (c.bad || version != 1 || frame_encoding == DW_EH_PE_omit ||
	    count_encoding == DW_EH_PE_omit || table_encoding != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -ENOENT;
	skip_encoded(&c, frame_encoding); /* .eh_frame itself: the table leads to every FDE */
	count = read_encoded(&c, count_encoding, hdr);
	if (c.bad || count > (hi - c.p) / 8)
		return -ENOENT;
	*eh = (struct dacce_eh_frame){ .hdr = hdr, .lo = lo, .hi = hi, .table = c.p, .n_entries = count };
	return 0;
}

/* Entry i of the search table: the start of the code an FDE covers, or the FDE. */
static uintptr_t table_field(const struct dacce_eh_frame *eh, size_t i, int which)
{
	int32_t offset;

	memcpy(&offset, (const void *)(eh->table + 8 * i + 4 * which), sizeof(offset));
	return eh->hdr + (uintptr_t)(intptr_t)offset;
}

/* The FDE of the last entry starting at or below addr. */
static int find_fde(const struct dacce_eh_frame *eh, uintptr_t addr, uintptr_t *fde)
{
	size_t lo = 0, hi = eh->n_entries;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (table_field(eh, mid, 0) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	*fde = table_field(eh, lo - 1, 1);
	return 0;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_encoding;
	bool has_augmentation_data; /* "z": FDEs carry a length-prefixed block to skip */
	uintptr_t insns, insns_end;
};

/* The entry at `at`: its length checked against the readable memory, the cursor limited to it. */
static int open_entry(const struct dacce_eh_frame *eh, uintptr_t at, struct cursor *c)
{
	uint32_t length;

	*c = (struct cursor){ .p = at, .end = eh->hi };
	if (at < eh->lo || at >= eh->hi)
		return -EINVAL;
	length = (uint32_t)read_bytes(c, 4);
	/* 64-bit lengths never appear in .eh_frame (libgcc cannot read them either). */
	if (c->bad || length == 0 || length == 0xffffffff || length > c->end - c->p)
		return -EINVAL;
	c->end = c->p + length;
	return 0;
}

static int read_augmentation(struct cursor *c, const char *augmentation, struct cie *cie)
{
	uintptr_t data_end;
	uint64_t length;

	if (augmentation[0] == '\0')
		return 0;
	if (augmentation[0] != 'z')
		return -ENOTSUP; /* "eh" and other pre-"z" forms */
	length = read_uleb(c);
	if (c->bad || length > c->end - c->p)
		return -EINVAL;
	data_end = c->p + length;
	cie->has_augmentation_data = true;
	for (const char *a = augmentation + 1; *a; a++) {
		if (*a == 'L')
			(void)read_u8(c); /* the LSDA's encoding: FDEs' data is skipped whole */
		else if (*a == 'P')
			skip_encoded(c, read_u8(c));
		else if (*a == 'R')
			cie->fde_encoding = read_u8(c);
		else if (*a != 'S' && *a != 'B' && *a != 'G')
			break; /* unknown: "z" says how long the rest is */
	}
	if (c->bad)
		return -EINVAL;
	c->p = data_end;
	return 0;
}

static int parse_cie(const struct dacce_eh_frame *eh, uintptr_t at, struct cie *cie)
{
	char augmentation[8];
	struct cursor c;
	uint8_t version;
	size_t len = 0;
	int err = open_entry(eh, at, &c);

	if (err)
		return err;
	if (read_bytes(&c, 4) != 0)
		return -EINVAL; /* an FDE where its CIE should be */
	version = read_u8(&c);
	if (version != 1 && version != 3)
		return -EINVAL;
	for (char ch = (char)read_u8(&c); ch && !c.bad; ch = (char)read_u8(&c)) {
		if (len == sizeof(augmentation) - 1)
			return -ENOTSUP;
		augmentation[len++] = ch;
	}
	augmentation[len] = '\0';
	*cie = (struct cie){ .fde_encoding = DW_EH_PE_absptr };
	cie->code_align = read_uleb(&c);
	cie->data_align = read_sleb(&c);
	(void)(version == 1 ? read_u8(&c) : read_uleb(&c)); /* return address register */
	err = read_augmentation(&c, augmentation, cie);
	if (err)
		return err;
	if (c.bad)
		return -EINVAL;
	cie->insns = c.p;
	cie->insns_end = c.end;
	return 0;
}

struct fde {
	uintptr_t start, end; /* the code it covers, run-time addresses */
	uintptr_t insns, insns_end;
};

static int parse_fde(const struct dacce_eh_frame *eh, uintptr_t at, struct fde *fde,
		     struct cie *cie)
{
	struct cursor c;
	uintptr_t cie_field;
	uint32_t cie_offset;
	uint64_t range;
	int err = open_entry(eh, at, &c);

	if (err)
		return err;
	cie_field = c.p;
	cie_offset = (uint32_t)read_bytes(&c, 4);
	if (c.bad || cie_offset == 0 || cie_offset > cie_field)
		return -EINVAL;
	err = parse_cie(eh, cie_field - cie_offset, cie);
	if (err)
		return err;
	fde->start = read_encoded(&c, cie->fde_encoding, 0);
	range = read_encoded(&c, cie->fde_encoding & 0x0f, 0);
	if (cie->has_augmentation_data) {
		uint64_t length = read_uleb(&c);

		if (c.bad || length > c.end - c.p)
			return -EINVAL;
		c.p += length;
	}
	if (c.bad || range > UINTPTR_MAX - fde->start)
		return -EINVAL;
	fde->end = fde->start + range;
	fde->insns = c.p;
	fde->insns_end = c.end;
	return 0;
}

/* A register rule, compactly: rows are copied for DW_CFA_remember_state. */
struct rule {
	uint8_t kind; /* enum dacce_cfa_rule_kind */
	uint8_t reg;
	int32_t offset;
};

struct state {
	uint64_t cfa_reg;
	int64_t cfa_offset;
	bool cfa_is_expression;
	struct rule regs[DACCE_CFA_REGS];
};

/* GCC nests remember_state one deep (libc, libstdc++, CPython); deeper than 4 is refused. */
#define REMEMBER_DEPTH 4

struct machine {
	struct state now;
	struct state initial; /* after the CIE's instructions: what DW_CFA_restore goes back to */
	struct state remembered[REMEMBER_DEPTH];
	unsigned depth;
	const struct cie *cie;
	uintptr_t target;     /* the address asked about */
	uintptr_t loc;	      /* where the current row starts */
	uintptr_t row_end;    /* set once an advance passes target */
};

/*
 * Before any instruction: the x86-64 ABI's rules, as libdw states them
 * (callee-saved registers keep their values, %rsp is the CFA, the rest is lost).
 */
static void abi_defaults(struct state *s)
{
	static const uint8_t callee_saved[] = { 3, 6, 12, 13, 14, 15 };

	memset(s, 0, sizeof(*s));
	for (int reg = 0; reg < DACCE_CFA_REGS; reg++)
		s->regs[reg].kind = DACCE_CFA_UNDEFINED;
	for (size_t i = 0; i < sizeof(callee_saved); i++)
		s->regs[callee_saved[i]].kind = DACCE_CFA_SAME;
	s->regs[7].kind = DACCE_CFA_IS;
}

/* Sets a register's rule; registers past the return address are not kept. */
static int set_rule(struct machine *m, uint64_t reg, enum dacce_cfa_rule_kind kind, uint64_t other,
		    int64_t offset)
{
	if (reg >= DACCE_CFA_REGS)
		return 0;
	if (offset != (int32_t)offset || other > UINT8_MAX)
		return -ENOTSUP;
	m->now.regs[reg] = (struct rule){ .kind = (uint8_t)kind, .reg = (uint8_t)other,
					  .offset = (int32_t)offset };
	return 0;
}

/* A factored offset times the CIE's data alignment, refused where it would overflow. */
static int factored(const struct machine *m, int64_t factor, int64_t *offset)
{
	return __builtin_mul_overflow(factor, m->cie->data_align, offset) ? -ENOTSUP : 0;
}

/* Moves the row's start; 1 once the new row starts past the target (the current one is it). */
static int advance_to(struct machine *m, uintptr_t loc)
{
	if (loc > m->target) {
		m->row_end = loc;
		return 1;
	}
	if (loc < m->loc)
		return -EINVAL; /* rows go forward only */
	m->loc = loc;
	return 0;
}

static int advance_by(struct machine *m, uint64_t delta)
{
	uint64_t bytes;

	if (__builtin_mul_overflow(delta, m->cie->code_align, &bytes) || bytes > UINTPTR_MAX - m->loc)
		return -EINVAL;
	return advance_to(m, m->loc + bytes);
}

/* A DW_CFA_*expression's block: its rule is not read, its bytes are skipped. */
static void skip_block(struct cursor *c)
{
	uint64_t length = read_uleb(c);

	if (!c->bad && length <= c->end - c->p)
		c->p += length;
	else
		c->bad = true;
}

/* One instruction with an operand in its low six bits: advance, offset or restore. */
static int step_primary(struct machine *m, struct cursor *c, uint8_t op)
{
	uint8_t reg = op & 0x3f;
	int64_t offset;
	int err;

	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		return advance_by(m, reg);
	case DW_CFA_offset:
		err = factored(m, (int64_t)read_uleb(c), &offset);
		return err ? err : set_rule(m, reg, DACCE_CFA_AT, 0, offset);
	default: /* DW_CFA_restore */
		if (reg < DACCE_CFA_REGS)
			m->now.regs[reg] = m->initial.regs[reg];
		return 0;
	}
}

/* The CFA's own instructions. */
static int step_cfa(struct machine *m, struct cursor *c, uint8_t op)
{
	int64_t offset;
	int err = 0;

	switch (op) {
	case DW_CFA_def_cfa:
		m->now.cfa_reg = read_uleb(c);
		m->now.cfa_offset = (int64_t)read_uleb(c);
		break;
	case DW_CFA_def_cfa_sf:
		m->now.cfa_reg = read_uleb(c);
		err = factored(m, read_sleb(c), &offset);
		m->now.cfa_offset = offset;
		break;
	case DW_CFA_def_cfa_register:
		m->now.cfa_reg = read_uleb(c);
		return 0; /* an expression CFA stays one: GCC never emits this after one */
	case DW_CFA_def_cfa_offset:
		m->now.cfa_offset = (int64_t)read_uleb(c);
		return 0;
	case DW_CFA_def_cfa_offset_sf:
		err = factored(m, read_sleb(c), &offset);
		m->now.cfa_offset = offset;
		return err;
	default: /* DW_CFA_def_cfa_expression */
		skip_block(c);
		m->now.cfa_is_expression = true;
		return 0;
	}
	m->now.cfa_is_expression = false;
	return err;
}

/* Registers' rules (the extended forms) and the remembered-state stack. */
static int step_register(struct machine *m, struct cursor *c, uint8_t op)
{
	uint64_t reg = read_uleb(c), other;
	int64_t offset;
	int err;

	switch (op) {
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
		err = factored(m, (int64_t)read_uleb(c), &offset);
		break;
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
		err = factored(m, read_sleb(c), &offset);
		break;
	case DW_CFA_GNU_negative_offset_extended:
		err = factored(m, -(int64_t)read_uleb(c), &offset);
		break;
	case DW_CFA_restore_extended:
		if (reg < DACCE_CFA_REGS)
			m->now.regs[reg] = m->initial.regs[reg];
		return 0;
	case DW_CFA_undefined:
		return set_rule(m, reg, DACCE_CFA_UNDEFINED, 0, 0);
	case DW_CFA_same_value:
		return set_rule(m, reg, DACCE_CFA_SAME, 0, 0);
	case DW_CFA_register:
		other = read_uleb(c);
		return set_rule(m, reg, DACCE_CFA_IN_REG, other, 0);
	default: /* DW_CFA_expression, DW_CFA_val_expression */
		skip_block(c);
		return set_rule(m, reg, DACCE_CFA_UNDEFINED, 0, 0);
	}
	if (err)
		return err;
	if (op == DW_CFA_val_offset || op == DW_CFA_val_offset_sf)
		return set_rule(m, reg, DACCE_CFA_IS, 0, offset);
	return set_rule(m, reg, DACCE_CFA_AT, 0, offset);
}

static int step(struct machine *m, struct cursor *c)
{
	uint8_t op = read_u8(c);

	if (op & 0xc0)
		return step_primary(m, c, op);
	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
		return advance_to(m, read_encoded(c, m->cie->fde_encoding, 0));
	case DW_CFA_advance_loc1:
		return advance_by(m, read_bytes(c, 1));
	case DW_CFA_advance_loc2:
		return advance_by(m, read_bytes(c, 2));
	case DW_CFA_advance_loc4:
		return advance_by(m, read_bytes(c, 4));
	case DW_CFA_remember_state:
		if (m->depth == REMEMBER_DEPTH)
			return -ENOTSUP;
		m->remembered[m->depth++] = m->now;
		return 0;
	case DW_CFA_restore_state:
		if (m->depth == 0)
			return -EINVAL;
		m->now = m->remembered[--m->depth];
		return 0;
	case DW_CFA_GNU_args_size:
		(void)read_uleb(c);
		return 0;
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
	case DW_CFA_def_cfa_register:
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
	case DW_CFA_def_cfa_expression:
		return step_cfa(m, c, op);
	case DW_CFA_offset_extended:
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
	case DW_CFA_GNU_negative_offset_extended:
	case DW_CFA_restore_extended:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_register:
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		return step_register(m, c, op);
	default:
		return -ENOTSUP;
	}
}

/*
 * Runs instructions from c until they end or a row starts past the target:
 * 0 or an error.  c is left after the last instruction run.
 */
static int run_from(struct machine *m, struct cursor *c)
{
	while (c->p < c->end) {
		int done = step(m, c);

		if (c->bad)
			return -EINVAL;
		if (done)
			return done < 0 ? done : 0;
	}
	return 0;
}

static int run(struct machine *m, uintptr_t insns, uintptr_t insns_end)
{
	struct cursor c = { .p = insns, .end = insns_end };

	return run_from(m, &c);
}

static void state_to_row(const struct state *s, struct dacce_cfa_row *row)
{
	row->cfa_reg = (int)s->cfa_reg;
	row->cfa_offset = s->cfa_offset;
	for (int reg = 0; reg < DACCE_CFA_REGS; reg++)
		row->regs[reg] = (struct dacce_cfa_reg_rule){
			.kind = (enum dacce_cfa_rule_kind)s->regs[reg].kind,
			.reg = s->regs[reg].reg,
			.offset = s->regs[reg].offset,
		};
}

/* A walk through one FDE's rows, kept between questions (ehframe.h). */
struct dacce_eh_frame_walk {
	const struct dacce_eh_frame *eh;
	bool live; /* cie, fde, m and left hold a walk stopped at m.target */
	struct cie cie;
	struct fde fde;
	struct machine m;
	struct cursor left; /* the FDE's instructions not run yet */
};

/* Starts w over in the FDE that covers addr, run up to addr. */
static int walk_start(struct dacce_eh_frame_walk *w, uintptr_t addr)
{
	struct machine *m = &w->m;
	uintptr_t at;
	int err = find_fde(w->eh, addr, &at);

	w->live = false;
	if (err)
		return err;
	err = parse_fde(w->eh, at, &w->fde, &w->cie);
	if (err)
		return err;
	if (addr < w->fde.start || addr >= w->fde.end)
		return -ENOENT;
	memset(m, 0, sizeof(*m));
	m->cie = &w->cie;
	m->target = UINTPTR_MAX; /* the CIE's instructions hold from the start */
	m->loc = w->fde.start;
	abi_defaults(&m->now);
	err = run(m, w->cie.insns, w->cie.insns_end);
	if (err)
		return err;
	m->initial = m->now;
	m->depth = 0;
	m->target = addr;
	m->row_end = w->fde.end;
	w->left = (struct cursor){ .p = w->fde.insns, .end = w->fde.insns_end };
	err = run_from(m, &w->left);
	w->live = err == 0;
	return err;
}

/*
 * Goes on to addr, at or past the last target in the same FDE: the row
 * found holds until row_end, where the instruction that stopped the walk
 * starts the next one.
 */
static int walk_on(struct dacce_eh_frame_walk *w, uintptr_t addr)
{
	struct machine *m = &w->m;
	int err;

	if (addr < m->row_end) {
		m->target = addr;
		return 0;
	}
	m->loc = m->row_end;
	m->target = addr;
	m->row_end = w->fde.end;
	err = run_from(m, &w->left);
	w->live = err == 0;
	return err;
}

static int walk_row(struct dacce_eh_frame_walk *w, uintptr_t addr, struct dacce_cfa_row *row,
		    uintptr_t *row_lo, uintptr_t *row_hi)
{
	const struct machine *m = &w->m;
	int err;

	if (w->live && addr >= m->target && addr < w->fde.end)
		err = walk_on(w, addr);
	else
		err = walk_start(w, addr);
	if (err)
		return err;
	if (m->now.cfa_is_expression || m->now.cfa_reg > UINT8_MAX)
		return -ENOTSUP;
	state_to_row(&m->now, row);
	*row_lo = m->loc;
	*row_hi = m->row_end < w->fde.end ? m->row_end : w->fde.end;
	return 0;
}

int dacce_eh_frame_row(const struct dacce_eh_frame *eh, uintptr_t addr, struct dacce_cfa_row *row,
		       uintptr_t *row_lo, uintptr_t *row_hi)
{
	struct dacce_eh_frame_walk w = { .eh = eh };

	return walk_row(&w, addr, row, row_lo, row_hi);
}

struct dacce_eh_frame_walk *dacce_eh_frame_walk_new(const struct dacce_eh_frame *eh)
{
	struct dacce_eh_frame_walk *w = calloc(1, sizeof(*w));

	if (w)
		w->eh = eh;
	return w;
}

void dacce_eh_frame_walk_free(struct dacce_eh_frame_walk *w)
{
	free(w);
}

int dacce_eh_frame_walk_row(struct dacce_eh_frame_walk *w, uintptr_t addr,
			    struct dacce_cfa_row *row, uintptr_t *row_lo, uintptr_t *row_hi)
{
	return walk_row(w, addr, row, row_lo, row_hi);
}
