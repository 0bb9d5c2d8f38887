// SPDX-License-Identifier: MIT
#include "relocate.h"

#include <errno.h>
#include <stdint.h>
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
	bool rel8;   /* a short branch's displacement (inside only) */
};

struct layout {
	const struct dacce_reloc_code *decoded;
	const bool *short_ok; /* per instruction: a branch inside that keeps its rel8, or NULL */
	const uint8_t *code;
	uintptr_t start, end;
	int32_t tpoff;
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

static int add_fixup(struct layout *l, struct dacce_reloc_fixup f)
{
	struct dacce_reloc_copy *c = l->out;
	int err = dacce_grow((void **)&c->fixups, &l->cap_fixups, c->n_fixups + 1, sizeof(*c->fixups));

	if (!err)
		c->fixups[c->n_fixups++] = f;
	return err;
}

/* Emits rel32 (zero for now) and the fixup that fills it; the instruction ends right after it. */
static int emit_rel32(struct layout *l, uint64_t target, bool inside)
{
	static const uint8_t zero[4];
	int err = emit(l, zero, sizeof(zero));
	uint32_t end = (uint32_t)l->out->len;

	return err ? err
		   : add_fixup(l, (struct dacce_reloc_fixup){ .pos = end - 4, .end = end,
							      .target = target, .inside = inside });
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

/* ------------------------------------------------------------------ decoding */

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

/* What the layout needs of one instruction at pc. */
static struct dacce_reloc_insn classify(const ZydisDecodedInstruction *insn, const uint8_t *bytes,
					uintptr_t pc, uintptr_t start)
{
	struct dacce_reloc_insn r = { .at = (uint32_t)(pc - start), .len = insn->length };
	int imm = relative_imm(insn);
	uint8_t prefixes = insn->raw.prefix_count, opcode;

	if (imm < 0) {
		if (insn->mnemonic == ZYDIS_MNEMONIC_CALL) {
			r.kind = DACCE_RELOC_CALL_OTHER;
		} else if (is_rip_relative(insn)) {
			r.kind = DACCE_RELOC_RIP;
			r.disp_at = insn->raw.disp.offset;
			r.target = pc + insn->length + (uintptr_t)insn->raw.disp.value;
		}
		return r;
	}
	r.target = pc + insn->length + (uintptr_t)insn->raw.imm[imm].value.s;
	r.prefixes = prefixes;
	opcode = bytes[insn->raw.imm[imm].offset - 1];
	/* REX or VEX before the opcode, loop, jrcxz, xbegin: not a plain branch. */
	r.kind = DACCE_RELOC_OTHER_RELATIVE;
	if (insn->mnemonic == ZYDIS_MNEMONIC_CALL) {
		r.kind = DACCE_RELOC_CALL;
	} else if (insn->raw.imm[imm].offset == prefixes + 1 && insn->mnemonic == ZYDIS_MNEMONIC_JMP &&
		   (opcode == 0xeb || opcode == 0xe9)) {
		r.kind = DACCE_RELOC_JMP;
	} else if (insn->raw.imm[imm].offset == prefixes + 1 && opcode >= 0x70 && opcode <= 0x7f) {
		r.kind = DACCE_RELOC_JCC;
		r.cc = (uint8_t)(opcode - 0x70);
	} else if (insn->raw.imm[imm].offset == prefixes + 2 && bytes[prefixes] == 0x0f &&
		   opcode >= 0x80 && opcode <= 0x8f) {
		r.kind = DACCE_RELOC_JCC;
		r.cc = (uint8_t)(opcode - 0x80);
	}
	return r;
}

static bool is_insn_start(const struct dacce_reloc_code *d, uint32_t at)
{
	size_t lo = 0, hi = d->n_insns;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d->insns[mid].at == at)
			return true;
		if (d->insns[mid].at < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

int dacce_relocate_decode(const uint8_t *code, uintptr_t start, uintptr_t end,
			  struct dacce_reloc_code *out)
{
	size_t cap = 0, cap_targets = 0;
	ZydisDecoder decoder;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!code || end <= start || end - start > DACCE_RELOC_MAX_FUNCTION)
		return -EINVAL;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return -EINVAL;
	for (uintptr_t pc = start; pc < end && !err;) {
		const uint8_t *bytes = code + (pc - start);
		ZydisDecoderContext ctx;
		ZydisDecodedInstruction insn;
		struct dacce_reloc_insn r;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &ctx, bytes, end - pc, &insn))) {
			err = -EILSEQ;
			break;
		}
		r = classify(&insn, bytes, pc, start);
		err = dacce_grow((void **)&out->insns, &cap, out->n_insns + 1, sizeof(*out->insns));
		if (!err)
			out->insns[out->n_insns++] = r;
		if (!err && r.kind >= DACCE_RELOC_JMP && r.target >= start && r.target < end) {
			err = dacce_grow((void **)&out->branch_targets, &cap_targets,
					 out->n_branch_targets + 1, sizeof(*out->branch_targets));
			if (!err)
				out->branch_targets[out->n_branch_targets++] = (uint32_t)(r.target - start);
		}
		pc += insn.length;
	}
	if (!err && out->n_branch_targets)
		qsort(out->branch_targets, out->n_branch_targets, sizeof(*out->branch_targets), cmp_u32);
	/* Branches inside the function must land on instructions as decoded here. */
	for (size_t i = 0; i < out->n_branch_targets && !err; i++)
		if (!is_insn_start(out, out->branch_targets[i]))
			err = -ENOTSUP;
	if (err)
		dacce_reloc_code_fini(out);
	return err;
}

void dacce_reloc_code_fini(struct dacce_reloc_code *code)
{
	if (!code)
		return;
	free(code->insns);
	free(code->branch_targets);
	memset(code, 0, sizeof(*code));
}

bool dacce_reloc_branch_into(const struct dacce_reloc_code *code, uint32_t lo, uint32_t hi)
{
	for (size_t i = 0; i < code->n_branch_targets; i++)
		if (code->branch_targets[i] > lo && code->branch_targets[i] < hi)
			return true;
	return false;
}

/* ------------------------------------------------------------------ layout */

/* A branch inside the function in its short form: jmp/jcc rel8, filled in when placed. */
static int emit_short_branch(struct layout *l, const struct dacce_reloc_insn *insn)
{
	uint8_t form[2] = { insn->kind == DACCE_RELOC_JMP ? 0xeb : (uint8_t)(0x70 + insn->cc), 0 };
	int err = emit(l, form, sizeof(form));
	uint32_t end = (uint32_t)l->out->len;

	return err ? err
		   : add_fixup(l, (struct dacce_reloc_fixup){ .pos = end - 1, .end = end,
							      .target = insn->target - l->start,
							      .inside = true, .rel8 = true });
}

/* A relative branch, its legacy prefixes kept: rel8 widened to rel32 unless short_ok says it fits. */
static int emit_branch(struct layout *l, const struct dacce_reloc_insn *insn, const uint8_t *bytes,
		       size_t index)
{
	uint8_t form[2] = { 0x0f, (uint8_t)(0x80 + insn->cc) };
	int err = emit(l, bytes, insn->prefixes);

	if (!err && l->short_ok && l->short_ok[index])
		return emit_short_branch(l, insn);

	if (!err && insn->kind == DACCE_RELOC_JMP)
		err = emit(l, (const uint8_t *)"\xe9", 1);
	else if (!err)
		err = emit(l, form, sizeof(form));
	return err ? err : emit_branch_to(l, insn->target);
}

/* An instruction copied as it is, a RIP-relative displacement made to reach the same address. */
static int emit_plain(struct layout *l, const struct dacce_reloc_insn *insn, const uint8_t *bytes)
{
	uint32_t at = (uint32_t)l->out->len;
	int err = emit(l, bytes, insn->len);

	if (err || insn->kind != DACCE_RELOC_RIP)
		return err;
	return add_fixup(l, (struct dacce_reloc_fixup){ .pos = at + insn->disp_at,
							.end = (uint32_t)l->out->len,
							.target = insn->target });
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
	s->end_at = (uint32_t)l->out->len;
	return err;
}

/* Leaves the copy for the original at the site (a conditional one only when its condition holds). */
static int emit_leave(struct layout *l, const struct dacce_reloc_insn *insn,
		      const struct dacce_reloc_site *s)
{
	if (insn->kind == DACCE_RELOC_JCC) {
		uint8_t form[2] = { 0x0f, (uint8_t)(0x80 + insn->cc) };
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
	    !is_insn_start(l->decoded, (uint32_t)(s->leave_to - l->start)) ||
	    dacce_reloc_branch_into(l->decoded, (uint32_t)(s->leave_to - l->start), site + 1))
		s->leave_to = s->addr;
	return (uint32_t)(s->leave_to - l->start);
}

static int emit_all(struct layout *l, struct dacce_reloc_site *sites, size_t n_sites)
{
	const struct dacce_reloc_code *d = l->decoded;
	size_t next_site = 0;
	uint32_t skip_to = 0;

	for (size_t i = 0; i < n_sites; i++)
		(void)leave_at(l, &sites[i]);
	for (size_t i = 0; i < d->n_insns; i++) {
		const struct dacce_reloc_insn *insn = &d->insns[i];
		const uint8_t *bytes = l->code + insn->at;
		uintptr_t pc = l->start + insn->at;
		struct dacce_reloc_site *site = NULL, *leaving = NULL;
		int err;

		while (next_site < n_sites && sites[next_site].addr < pc)
			next_site++;
		if (next_site < n_sites && sites[next_site].addr == pc)
			site = &sites[next_site];
		/* A site whose way out starts at a borrowed instruction before it. */
		for (size_t k = next_site; k < n_sites && sites[k].leave_to <= pc + 15; k++)
			if (!sites[k].inline_call && sites[k].leave_to == pc && sites[k].addr != pc)
				leaving = &sites[k];
		if (insn->at < skip_to)
			continue; /* covered by a jump out emitted before it */
		err = add_pair(l, insn->at);
		if (err)
			return err;
		if (leaving) {
			leaving->code_at = (uint32_t)l->out->len;
			err = emit_jump_out(l, leaving->leave_to);
			/* The site's own instruction is covered too. */
			skip_to = (uint32_t)(leaving->addr - l->start) + 1;
		} else if (site) {
			site->code_at = (uint32_t)l->out->len;
			err = site->inline_call ? emit_inline_call(l, site) : emit_leave(l, insn, site);
		} else if (insn->kind == DACCE_RELOC_JMP || insn->kind == DACCE_RELOC_JCC) {
			err = emit_branch(l, insn, bytes, i);
		} else if (insn->kind == DACCE_RELOC_PLAIN || insn->kind == DACCE_RELOC_RIP) {
			err = emit_plain(l, insn, bytes);
		} else {
			return -ENOTSUP; /* a call the runtime does not know as a site; loop, jrcxz, xbegin */
		}
		if (err)
			return err;
	}
	return 0;
}

/* From a first pass's layout: which branches inside keep their rel8 (NULL when none). */
static int shorts_that_fit(const struct layout *l, bool **out)
{
	const struct dacce_reloc_code *d = l->decoded;
	const struct dacce_reloc_copy *c = l->out;
	bool *short_ok = NULL;

	*out = NULL;
	for (size_t i = 0; i < d->n_insns; i++) {
		const struct dacce_reloc_insn *insn = &d->insns[i];
		long from, to;
		int64_t rel;

		if ((insn->kind != DACCE_RELOC_JMP && insn->kind != DACCE_RELOC_JCC) ||
		    insn->target < l->start || insn->target >= l->end)
			continue;
		from = dacce_reloc_copy_of(c, insn->at);
		to = dacce_reloc_copy_of(c, (uint32_t)(insn->target - l->start));
		if (from < 0 || to < 0)
			continue;
		rel = (int64_t)to - (from + insn->prefixes + 2);
		if (rel < INT8_MIN || rel > INT8_MAX)
			continue;
		if (!short_ok && !(short_ok = calloc(d->n_insns, sizeof(*short_ok))))
			return -ENOMEM;
		short_ok[i] = true;
	}
	*out = short_ok;
	return 0;
}

/* The sites must be on instructions as decoded, in address order. */
static int check_sites(const struct layout *l, const struct dacce_reloc_site *sites, size_t n_sites)
{
	for (size_t i = 0; i < n_sites; i++)
		if (sites[i].addr < l->start || sites[i].addr >= l->end ||
		    !is_insn_start(l->decoded, (uint32_t)(sites[i].addr - l->start)) ||
		    (i > 0 && sites[i].addr <= sites[i - 1].addr))
			return -ENOTSUP;
	return 0;
}

int dacce_relocate_layout(const struct dacce_reloc_code *decoded, const uint8_t *code,
			  uintptr_t start, uintptr_t end, int32_t tpoff,
			  struct dacce_reloc_site *sites, size_t n_sites, struct dacce_reloc_copy *out)
{
	struct layout l = {
		.decoded = decoded, .code = code, .start = start, .end = end, .tpoff = tpoff, .out = out,
	};
	bool *short_ok = NULL;
	int err;

	memset(out, 0, sizeof(*out));
	if (!decoded || !code || end <= start)
		return -EINVAL;
	err = check_sites(&l, sites, n_sites);
	if (!err)
		err = emit_all(&l, sites, n_sites);
	/*
	 * A second pass keeps the short branches that fit: nothing grows in it,
	 * so a branch that reaches its target with rel8 from the first pass's
	 * places reaches it from the second's.  Widened, they made copies longer
	 * and their loops' heads land elsewhere than the compiler aligned them.
	 */
	if (!err)
		err = shorts_that_fit(&l, &short_ok);
	if (!err && short_ok) {
		dacce_reloc_copy_fini(out);
		l.cap_code = l.cap_pairs = l.cap_fixups = 0;
		l.short_ok = short_ok;
		err = emit_all(&l, sites, n_sites);
	}
	/* Nothing runs past the end: a function ends in a transfer.  int3 anyway. */
	if (!err)
		err = emit(&l, (const uint8_t *)"\xcc\xcc\xcc\xcc\xcc", 5);
	free(short_ok);
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
		if (f->rel8) {
			if (rel != (int8_t)rel)
				return -ERANGE; /* never: the second pass only shrinks */
			copy->code[f->pos] = (uint8_t)(int8_t)rel;
			continue;
		}
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

void dacce_reloc_copy_fini(struct dacce_reloc_copy *copy)
{
	if (!copy)
		return;
	free(copy->code);
	free(copy->pairs);
	free(copy->fixups);
	memset(copy, 0, sizeof(*copy));
}
