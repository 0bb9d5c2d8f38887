// SPDX-License-Identifier: MIT
#include "relocate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "grow.h"
#include "x86.h"

/* A rel32 field at pos whose instruction ends at end: it must reach target (absolute, or an offset in the original). */
struct dacce_reloc_fixup {
	uint32_t pos, end;
	uint64_t target;
	bool inside; /* target is an offset of the original function: its place in the copy */
};

/* One decoded instruction of the original. */
struct insn {
	uint32_t at;
	uint8_t len;
};

struct layout {
	const uint8_t *code;
	uintptr_t start, end;
	int32_t tpoff;
	ZydisDecoder decoder;
	struct insn *insns;
	size_t n_insns;
	struct dacce_reloc_copy *out;
	size_t cap_code, cap_pairs, cap_fixups;
};

static int emit(struct layout *l, const uint8_t *bytes, size_t n)
{
	struct dacce_reloc_copy *c = l->out;
	int err = dacce_grow((void **)&c->code, &l->cap_code, c->len + n, 1);

	if (err)
		return err;
	memcpy(c->code + c->len, bytes, n);
	c->len += n;
	return 0;
}

/* Emits rel32 (zero for now) and the fixup that fills it; the instruction ends right after it. */
static int emit_rel32(struct layout *l, uint64_t target, bool inside)
{
	static const uint8_t zero[4];
	struct dacce_reloc_copy *c = l->out;
	int err = dacce_grow((void **)&c->fixups, &l->cap_fixups, c->n_fixups + 1, sizeof(*c->fixups));

	if (!err)
		err = emit(l, zero, sizeof(zero));
	if (err)
		return err;
	c->fixups[c->n_fixups++] = (struct dacce_reloc_fixup){
		.pos = (uint32_t)c->len - 4, .end = (uint32_t)c->len, .target = target, .inside = inside,
	};
	return 0;
}

/* A branch to an absolute address: inside the function it goes to the copy's instruction. */
static int emit_branch_to(struct layout *l, uintptr_t target)
{
	bool inside = target >= l->start && target < l->end;

	return emit_rel32(l, inside ? target - l->start : target, inside);
}

static int emit_jump_out(struct layout *l, uintptr_t to)
{
	int err = emit(l, (const uint8_t *)"\xe9", 1);

	return err ? err : emit_rel32(l, to, false);
}

static int add_pair(struct layout *l, uint32_t original)
{
	struct dacce_reloc_copy *c = l->out;
	int err = dacce_grow((void **)&c->pairs, &l->cap_pairs, c->n_pairs + 1, sizeof(*c->pairs));

	if (err)
		return err;
	c->pairs[c->n_pairs++] = (struct dacce_reloc_pair){ .original = original, .copy = (uint32_t)c->len };
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static bool is_rip_relative(const ZydisDecodedInstruction *insn)
{
	return (insn->attributes & ZYDIS_ATTRIB_HAS_MODRM) && insn->raw.modrm.mod == 0 &&
	       insn->raw.modrm.rm == 5 && insn->raw.disp.size == 32;
}

/* The relative immediate of a branch, or -1. */
static int relative_imm(const ZydisDecodedInstruction *insn)
{
	for (int i = 0; i < 2; i++)
		if (insn->raw.imm[i].is_relative)
			return i;
	return -1;
}

static uintptr_t branch_target(const ZydisDecodedInstruction *insn, int imm, uintptr_t pc)
{
	return pc + insn->length + (uintptr_t)insn->raw.imm[imm].value.s;
}

/* First pass: every instruction's bounds, and the offsets branches inside the function reach. */
static int decode_all(struct layout *l)
{
	struct dacce_reloc_copy *c = l->out;
	size_t cap = 0, cap_targets = 0;
	int err;

	for (uintptr_t pc = l->start; pc < l->end;) {
		ZydisDecoderContext ctx;
		ZydisDecodedInstruction insn;
		int imm;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&l->decoder, &ctx, l->code + (pc - l->start),
								 l->end - pc, &insn)))
			return -EILSEQ;
		err = dacce_grow((void **)&l->insns, &cap, l->n_insns + 1, sizeof(*l->insns));
		if (err)
			return err;
		l->insns[l->n_insns++] = (struct insn){ .at = (uint32_t)(pc - l->start), .len = insn.length };
		imm = relative_imm(&insn);
		if (imm >= 0) {
			uintptr_t target = branch_target(&insn, imm, pc);

			if (target >= l->start && target < l->end) {
				err = dacce_grow((void **)&c->branch_targets, &cap_targets, c->n_branch_targets + 1,
					   sizeof(*c->branch_targets));
				if (err)
					return err;
				c->branch_targets[c->n_branch_targets++] = (uint32_t)(target - l->start);
			}
		}
		pc += insn.length;
	}
	qsort(c->branch_targets, c->n_branch_targets, sizeof(*c->branch_targets), cmp_u32);
	return 0;
}

static bool is_insn_start(const struct layout *l, uint32_t at)
{
	size_t lo = 0, hi = l->n_insns;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (l->insns[mid].at == at)
			return true;
		if (l->insns[mid].at < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* A relative branch, rel8 widened to rel32, its legacy prefixes kept. */
static int emit_branch(struct layout *l, const ZydisDecodedInstruction *insn, const uint8_t *bytes,
		       uintptr_t pc, int imm)
{
	uint8_t opcode = bytes[insn->raw.imm[imm].offset - 1];
	uint8_t prefixes = insn->raw.prefix_count;
	uint8_t form[2];
	size_t n_form;
	int err;

	if (insn->raw.imm[imm].offset != prefixes + 1 + (opcode >= 0x80 && opcode <= 0x8f &&
							  bytes[prefixes] == 0x0f))
		return -ENOTSUP; /* REX or VEX before the opcode: not a plain branch */
	if (insn->mnemonic == ZYDIS_MNEMONIC_JMP && (opcode == 0xeb || opcode == 0xe9)) {
		form[0] = 0xe9;
		n_form = 1;
	} else if (insn->meta.category == ZYDIS_CATEGORY_COND_BR && opcode >= 0x70 && opcode <= 0x7f) {
		form[0] = 0x0f;
		form[1] = (uint8_t)(0x80 + (opcode - 0x70));
		n_form = 2;
	} else if (insn->meta.category == ZYDIS_CATEGORY_COND_BR && opcode >= 0x80 && opcode <= 0x8f) {
		form[0] = 0x0f;
		form[1] = opcode;
		n_form = 2;
	} else {
		return -ENOTSUP; /* loop, jrcxz, xbegin, a call that is no site */
	}
	err = emit(l, bytes, prefixes);
	if (!err)
		err = emit(l, form, n_form);
	return err ? err : emit_branch_to(l, branch_target(insn, imm, pc));
}

/* An instruction copied as it is, a RIP-relative displacement made to reach the same address. */
static int emit_plain(struct layout *l, const ZydisDecodedInstruction *insn, const uint8_t *bytes,
		      uintptr_t pc)
{
	struct dacce_reloc_copy *c = l->out;
	size_t at = c->len;
	int err;

	err = emit(l, bytes, insn->length);
	if (err || !is_rip_relative(insn))
		return err;
	err = dacce_grow((void **)&c->fixups, &l->cap_fixups, c->n_fixups + 1, sizeof(*c->fixups));
	if (err)
		return err;
	c->fixups[c->n_fixups++] = (struct dacce_reloc_fixup){
		.pos = (uint32_t)(at + insn->raw.disp.offset),
		.end = (uint32_t)c->len,
		.target = pc + insn->length + (uintptr_t)insn->raw.disp.value,
	};
	return 0;
}

#define NOP5 "\x0f\x1f\x44\x00\x00"

static int emit_inline_call(struct layout *l, struct dacce_reloc_site *s)
{
	uint8_t buf[DACCE_RELOC_OP_MAX];
	struct x86_buf b;
	size_t after_at;
	int err;

	x86_init(&b, buf, sizeof(buf), 0);
	dacce_emit_call_hit(&b, &s->op);
	dacce_emit_before(&b, l->tpoff, &s->op);
	if (b.overflow)
		return -ENOSPC;
	err = emit(l, buf, b.len);
	if (!err)
		err = emit(l, (const uint8_t *)"\xe8", 1);
	if (!err)
		err = emit_rel32(l, s->target, false);
	if (err)
		return err;
	s->return_at = (uint32_t)l->out->len;
	x86_init(&b, buf, sizeof(buf), 0);
	dacce_emit_after(&b, l->tpoff, &s->op);
	if (b.overflow)
		return -ENOSPC;
	after_at = l->out->len;
	err = emit(l, buf, b.len);
	/* Room for the jump that forwards the return point (relocated.c). */
	if (!err && l->out->len - after_at < 5)
		err = emit(l, (const uint8_t *)NOP5, 5);
	return err;
}

/* Leaves the copy for the original at the site (a conditional one only when its condition holds). */
static int emit_leave(struct layout *l, const ZydisDecodedInstruction *insn, const uint8_t *bytes,
		      const struct dacce_reloc_site *s)
{
	int imm = relative_imm(insn);

	if (insn->meta.category == ZYDIS_CATEGORY_COND_BR && imm >= 0) {
		uint8_t opcode = bytes[insn->raw.imm[imm].offset - 1];
		uint8_t cc = (uint8_t)((opcode >= 0x80 ? opcode - 0x80 : opcode - 0x70) & 0xf);
		uint8_t form[2] = { 0x0f, (uint8_t)(0x80 + cc) };
		int err = emit(l, form, sizeof(form));

		return err ? err : emit_rel32(l, s->addr, false);
	}
	return emit_jump_out(l, s->leave_to);
}

/*
 * Where a site that leaves the copy starts: at the first instruction its
 * patch in the original covers, unless a branch lands between that one and
 * the site (then at the site itself, which runs the original's way too).
 */
static uint32_t leave_at(const struct layout *l, struct dacce_reloc_site *s)
{
	uint32_t site = (uint32_t)(s->addr - l->start);

	if (s->inline_call || s->leave_to >= s->addr || s->leave_to < l->start ||
	    !is_insn_start(l, (uint32_t)(s->leave_to - l->start)) ||
	    dacce_reloc_branch_into(l->out, (uint32_t)(s->leave_to - l->start), site + 1))
		s->leave_to = s->addr;
	return (uint32_t)(s->leave_to - l->start);
}

static int emit_all(struct layout *l, struct dacce_reloc_site *sites, size_t n_sites)
{
	size_t next_site = 0;
	uint32_t skip_to = 0;

	for (size_t i = 0; i < n_sites; i++)
		(void)leave_at(l, &sites[i]);
	for (size_t i = 0; i < l->n_insns; i++) {
		const uint8_t *bytes = l->code + l->insns[i].at;
		uintptr_t pc = l->start + l->insns[i].at;
		struct dacce_reloc_site *site = NULL, *leaving = NULL;
		ZydisDecoderContext ctx;
		ZydisDecodedInstruction insn;
		int imm, err;

		while (next_site < n_sites && sites[next_site].addr < pc)
			next_site++;
		if (next_site < n_sites && sites[next_site].addr == pc)
			site = &sites[next_site];
		/* A site whose way out starts at a borrowed instruction before it. */
		for (size_t k = next_site; k < n_sites && sites[k].leave_to <= pc + 15; k++)
			if (!sites[k].inline_call && sites[k].leave_to == pc && sites[k].addr != pc)
				leaving = &sites[k];
		if (l->insns[i].at < skip_to)
			continue; /* covered by a jump out emitted before it */
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&l->decoder, &ctx, bytes, l->end - pc, &insn)))
			return -EILSEQ;
		err = add_pair(l, l->insns[i].at);
		if (err)
			return err;
		if (leaving) {
			leaving->code_at = (uint32_t)l->out->len;
			err = emit_jump_out(l, leaving->leave_to);
			skip_to = (uint32_t)(leaving->addr - l->start);
			if (err)
				return err;
			/* The site's own instruction is covered too. */
			skip_to += 1;
			continue;
		}
		if (site) {
			site->code_at = (uint32_t)l->out->len;
			err = site->inline_call ? emit_inline_call(l, site) : emit_leave(l, &insn, bytes, site);
		} else if ((imm = relative_imm(&insn)) >= 0) {
			if (insn.mnemonic == ZYDIS_MNEMONIC_CALL)
				return -ENOTSUP; /* a call the runtime does not know as a site */
			err = emit_branch(l, &insn, bytes, pc, imm);
		} else if (insn.mnemonic == ZYDIS_MNEMONIC_CALL) {
			return -ENOTSUP;
		} else {
			err = emit_plain(l, &insn, bytes, pc);
		}
		if (err)
			return err;
	}
	return 0;
}

/* Branches inside the function and the sites must be on instructions as decoded here. */
static int check_targets(const struct layout *l, const struct dacce_reloc_site *sites, size_t n_sites)
{
	const struct dacce_reloc_copy *c = l->out;

	for (size_t i = 0; i < c->n_branch_targets; i++)
		if (!is_insn_start(l, c->branch_targets[i]))
			return -ENOTSUP;
	for (size_t i = 0; i < n_sites; i++)
		if (sites[i].addr < l->start || sites[i].addr >= l->end ||
		    !is_insn_start(l, (uint32_t)(sites[i].addr - l->start)) ||
		    (i > 0 && sites[i].addr <= sites[i - 1].addr))
			return -ENOTSUP;
	return 0;
}

int dacce_relocate_layout(const uint8_t *code, uintptr_t start, uintptr_t end, int32_t tpoff,
			  struct dacce_reloc_site *sites, size_t n_sites, struct dacce_reloc_copy *out)
{
	struct layout l = { .code = code, .start = start, .end = end, .tpoff = tpoff, .out = out };
	int err;

	memset(out, 0, sizeof(*out));
	if (!code || end <= start || end - start > DACCE_RELOC_MAX_FUNCTION)
		return -EINVAL;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&l.decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return -EINVAL;
	err = decode_all(&l);
	if (!err)
		err = check_targets(&l, sites, n_sites);
	if (!err)
		err = emit_all(&l, sites, n_sites);
	/* Nothing runs past the end: a function ends in a transfer.  int3 anyway. */
	if (!err)
		err = emit(&l, (const uint8_t *)"\xcc\xcc\xcc\xcc\xcc", 5);
	free(l.insns);
	if (err)
		dacce_reloc_copy_fini(out);
	return err;
}

int dacce_relocate_place(struct dacce_reloc_copy *copy, uintptr_t base)
{
	for (size_t i = 0; i < copy->n_fixups; i++) {
		const struct dacce_reloc_fixup *f = &copy->fixups[i];
		uint64_t target = f->target;
		int64_t rel;
		uint32_t rel32;

		if (f->inside) {
			long at = dacce_reloc_copy_of(copy, (uint32_t)target);

			if (at < 0)
				return -ENOTSUP;
			target = base + (uint64_t)at;
		}
		rel = (int64_t)(target - (base + f->end));
		if (rel != (int32_t)rel)
			return -ERANGE;
		rel32 = (uint32_t)(int32_t)rel;
		memcpy(copy->code + f->pos, &rel32, sizeof(rel32));
	}
	return 0;
}

long dacce_reloc_copy_of(const struct dacce_reloc_copy *copy, uint32_t original)
{
	size_t lo = 0, hi = copy->n_pairs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (copy->pairs[mid].original == original)
			return copy->pairs[mid].copy;
		if (copy->pairs[mid].original < original)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

long dacce_reloc_original_of(const struct dacce_reloc_pair *pairs, size_t n, uint32_t at)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (pairs[mid].copy == at)
			return pairs[mid].original;
		if (pairs[mid].copy < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

bool dacce_reloc_branch_into(const struct dacce_reloc_copy *copy, uint32_t lo, uint32_t hi)
{
	for (size_t i = 0; i < copy->n_branch_targets; i++)
		if (copy->branch_targets[i] > lo && copy->branch_targets[i] < hi)
			return true;
	return false;
}

void dacce_reloc_copy_fini(struct dacce_reloc_copy *copy)
{
	if (!copy)
		return;
	free(copy->code);
	free(copy->pairs);
	free(copy->branch_targets);
	free(copy->fixups);
	memset(copy, 0, sizeof(*copy));
}
