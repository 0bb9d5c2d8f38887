// SPDX-License-Identifier: MIT
#include "scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

/* What one scan knows besides its result. */
struct scan_state {
	ZydisDecoder decoder;
	const uint8_t *code; /* the bytes at run-time address addr */
	uintptr_t addr;
	uintptr_t start, end;
	/* The addresses of the last instructions decoded, a ring (jump tables). */
	uintptr_t recent[DACCE_JUMP_TABLE_WINDOW];
	size_t n_decoded;
	const struct dacce_range *plt;
	size_t n_plt;
	bool past_terminator;	      /* an unconditional transfer was seen: what follows may be data */
	uintptr_t after_terminator;   /* address just past the most recent one */
	uintptr_t furthest_internal;  /* highest direct branch target inside [start, end), or 0 */
	uintptr_t prev;		      /* the previous instruction, if it can be borrowed (else 0) */
	uint8_t prev_len;
	int8_t prev_rip_disp;
	uintptr_t prev2;	      /* the one before it, likewise */
	uint8_t prev2_len;
	int8_t prev2_rip_disp;
	bool in_dead_padding;	      /* nops or int3 right after an unconditional transfer */
	uintptr_t *targets;	      /* direct branch targets inside the function */
	size_t n_targets, cap_targets;
	bool out_of_memory;
};

static bool in_range(uintptr_t a, uintptr_t start, uintptr_t end)
{
	return a >= start && a < end;
}

static bool in_plt(const struct scan_state *s, uintptr_t a)
{
	for (size_t i = 0; i < s->n_plt; i++)
		if (in_range(a, s->plt[i].start, s->plt[i].end))
			return true;
	return false;
}

static int append_site(struct dacce_scan *out, const struct dacce_scan_site *site)
{
	if (out->n == out->cap) {
		size_t cap = out->cap ? 2 * out->cap : 16;
		struct dacce_scan_site *grown;

		if (cap > SIZE_MAX / sizeof(*grown))
			return -ENOMEM;
		grown = realloc(out->sites, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		out->sites = grown;
		out->cap = cap;
	}
	out->sites[out->n++] = *site;
	return 0;
}

/* Instructions after which execution does not fall through. */
static bool is_terminator(const ZydisDecodedInstruction *insn)
{
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_JMP:
	case ZYDIS_MNEMONIC_RET:
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT:
	case ZYDIS_MNEMONIC_INT3:
		return true;
	default:
		return false;
	}
}

/*
 * Near calls, jumps and conditional jumps (jcc, jrcxz, loop).  Far transfers
 * are left out: compilers never emit them in 64-bit user code, and a
 * trampoline could not reproduce their segment switch anyway.
 */
static bool is_transfer(const ZydisDecodedInstruction *insn)
{
	if (insn->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
		return false;
	return insn->mnemonic == ZYDIS_MNEMONIC_CALL || insn->mnemonic == ZYDIS_MNEMONIC_JMP ||
	       insn->meta.category == ZYDIS_CATEGORY_COND_BR;
}

/* A memory operand whose address is fixed once the module is loaded. */
static bool is_rip_relative(const ZydisDecodedOperand *op)
{
	/* %fs/%gs-relative slots are per thread: not a fixed address. */
	return op->mem.base == ZYDIS_REGISTER_RIP && op->mem.segment != ZYDIS_REGISTER_FS &&
	       op->mem.segment != ZYDIS_REGISTER_GS;
}

static void note_internal_target(struct scan_state *s, uintptr_t target)
{
	if (target > s->furthest_internal)
		s->furthest_internal = target;
	if (s->n_targets == s->cap_targets) {
		size_t cap = s->cap_targets ? 2 * s->cap_targets : 64;
		uintptr_t *grown = realloc(s->targets, cap * sizeof(*grown));

		if (!grown) {
			s->out_of_memory = true;
			return;
		}
		s->targets = grown;
		s->cap_targets = cap;
	}
	s->targets[s->n_targets++] = target;
}

/*
 * A relative target.  Calls are always reported (even into the function:
 * the runtime decides); jumps only when they leave the function, since a
 * jump inside it is ordinary control flow.  A jump back to start stays
 * internal too: it is a loop, not a new frame.
 */
static bool classify_direct(struct scan_state *s, bool is_call, bool is_jcc,
			    struct dacce_scan_site *site)
{
	bool inside = in_range(site->target, s->start, s->end);

	if (inside)
		note_internal_target(s, site->target);
	if (is_call) {
		site->kind = in_plt(s, site->target) ? DACCE_SITE_PLT : DACCE_SITE_DIRECT;
		return true;
	}
	if (inside)
		return false;
	/* A jump to a PLT stub stays TAIL_DIRECT: its target says which stub. */
	site->kind = DACCE_SITE_TAIL_DIRECT;
	if (is_jcc)
		site->flags |= DACCE_SCAN_CONDITIONAL;
	return true;
}

/*
 * Indirect jumps are always reported: a switch table jumps inside the
 * function and a tail call out of it, and only the target the runtime meets
 * at run time tells which.
 */
static void classify_indirect(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *op,
			      bool is_call, struct dacce_scan_site *site)
{
	ZyanU64 slot;

	site->kind = is_call ? DACCE_SITE_INDIRECT : DACCE_SITE_TAIL_INDIRECT;
	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
		site->flags |= DACCE_SCAN_REG;
		return;
	}
	if (!is_rip_relative(op)) {
		site->flags |= DACCE_SCAN_MEM;
		if (op->mem.index != ZYDIS_REGISTER_NONE)
			site->flags |= DACCE_SCAN_INDEXED;
		return;
	}
	if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, op, site->addr, &slot)))
		site->slot = (uintptr_t)slot;
	/* call *foo@GOTPCREL(%rip): the -fno-plt way of calling another module. */
	if (is_call)
		site->kind = DACCE_SITE_PLT;
}

/* Whether the indirect jump just decoded goes through a bounded jump table (jump_tables.h). */
static bool is_jump_table(const struct scan_state *s, struct dacce_jump_table *out)
{
	uintptr_t window[DACCE_JUMP_TABLE_WINDOW];
	size_t n = s->n_decoded < DACCE_JUMP_TABLE_WINDOW ? s->n_decoded : DACCE_JUMP_TABLE_WINDOW;

	for (size_t i = 0; i < n; i++)
		window[i] = s->recent[(s->n_decoded - n + i) % DACCE_JUMP_TABLE_WINDOW];
	return dacce_jump_table_match(&s->decoder, s->code, s->addr, s->end, window, n, out);
}

/* Reports the transfer insn at pc makes, if the runtime must handle it. */
static int report_transfer(struct scan_state *s, const ZydisDecoderContext *ctx,
			   const ZydisDecodedInstruction *insn, uintptr_t pc, struct dacce_scan *out)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	bool is_call = insn->mnemonic == ZYDIS_MNEMONIC_CALL;
	bool is_jcc = insn->meta.category == ZYDIS_CATEGORY_COND_BR;
	struct dacce_scan_site site = {
		.addr = pc, .len = insn->length,
		.prev = s->prev, .prev_len = s->prev_len, .prev_rip_disp = s->prev_rip_disp,
		.prev2 = s->prev ? s->prev2 : 0, .prev2_len = s->prev2_len,
		.prev2_rip_disp = s->prev2_rip_disp,
	};

	if (!is_transfer(insn))
		return 0;
	if (!insn->operand_count_visible ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeOperands(&s->decoder, ctx, insn, ops,
						     insn->operand_count_visible)))
		return -EILSEQ;
	if (insn->attributes & ZYDIS_ATTRIB_HAS_NOTRACK)
		site.flags |= DACCE_SCAN_NOTRACK;
	if (insn->length < DACCE_SCAN_PATCH_LEN)
		site.flags |= DACCE_SCAN_SHORT;

	if (ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative) {
		ZyanU64 target;

		if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, &ops[0], pc, &target)))
			return -EILSEQ;
		site.target = (uintptr_t)target;
		if (!classify_direct(s, is_call, is_jcc, &site))
			return 0;
	} else if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER ||
		   ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {
		classify_indirect(insn, &ops[0], is_call, &site);
		if (!is_call && !is_jcc && is_jump_table(s, &site.jump_table))
			site.flags |= DACCE_SCAN_JUMP_TABLE;
	} else {
		return -EILSEQ;
	}
	return append_site(out, &site);
}

/*
 * Whether code elsewhere can run insn in its place: nothing that transfers
 * control, traps, needs its own address (other than a RIP-relative
 * displacement, which can be moved), or marks an indirect-branch target.
 */
static bool can_borrow(const ZydisDecodedInstruction *insn, int8_t *rip_disp)
{
	*rip_disp = -1;
	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSTEM:
		return false;
	default:
		break;
	}
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_ENDBR64:
	case ZYDIS_MNEMONIC_ENDBR32:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT:
	case ZYDIS_MNEMONIC_XBEGIN:
		return false;
	default:
		break;
	}
	if (insn->raw.imm[0].is_relative || insn->raw.imm[1].is_relative)
		return false;
	if ((insn->attributes & ZYDIS_ATTRIB_HAS_MODRM) && insn->raw.modrm.mod == 0 &&
	    insn->raw.modrm.rm == 5) {
		if (insn->raw.disp.size != 32)
			return false;
		*rip_disp = (int8_t)insn->raw.disp.offset;
	}
	return true;
}

/*
 * A jcc dispatch code can run in the prev instruction's place: a plain
 * `7x rel8` or `0f 8x rel32` (not jrcxz or loop, which have no rel32 form)
 * whose target stays in the function (one leaving it is a site itself).
 */
static bool can_borrow_jcc(const struct scan_state *s, const ZydisDecodedInstruction *insn,
			   uintptr_t pc)
{
	bool short_form = insn->length == 2 && insn->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
			  (insn->opcode & 0xf0) == 0x70;
	bool near_form = insn->length == 6 && insn->opcode_map == ZYDIS_OPCODE_MAP_0F &&
			 (insn->opcode & 0xf0) == 0x80;
	uintptr_t target;

	if (insn->meta.category != ZYDIS_CATEGORY_COND_BR || insn->raw.prefix_count != 0 ||
	    !(short_form || near_form) || !insn->raw.imm[0].is_relative)
		return false;
	target = pc + insn->length + (uintptr_t)insn->raw.imm[0].value.s;
	return in_range(target, s->start, s->end);
}

/*
 * Undecodable bytes at pc are padding or data, not code, when they follow an
 * unconditional transfer and no branch seen lands at or after that transfer
 * (landing there would make the run reaching pc, or code beyond it, live).
 */
static bool is_unconditional_jump(const struct dacce_scan_site *site)
{
	return site->kind == DACCE_SITE_TAIL_INDIRECT ||
	       (site->kind == DACCE_SITE_TAIL_DIRECT && !(site->flags & DACCE_SCAN_CONDITIONAL));
}

static bool is_padding(const ZydisDecodedInstruction *insn)
{
	return insn->mnemonic == ZYDIS_MNEMONIC_NOP || insn->mnemonic == ZYDIS_MNEMONIC_INT3;
}

/*
 * Padding after an unconditional transfer: to the pad of a short jump site
 * just before it while that has no room yet, else to a run of its own
 * (the runs too short for a jump are dropped at the end).  Only for padding
 * (s->in_dead_padding).
 */
static void take_padding(struct dacce_scan *out, const ZydisDecodedInstruction *insn, uintptr_t pc)
{
	struct dacce_scan_site *last = out->n ? &out->sites[out->n - 1] : NULL;
	struct dacce_scan_pad *run = out->n_pads ? &out->pads[out->n_pads - 1] : NULL;

	if (last && last->addr + last->len + last->pad == pc && is_unconditional_jump(last) &&
	    last->len + last->pad < DACCE_SCAN_PATCH_LEN) {
		last->pad += insn->length;
		return;
	}
	if (run && run->start + run->len == pc && run->len + insn->length <= UINT8_MAX) {
		run->len += insn->length;
		return;
	}
	if (out->n_pads == out->cap_pads) {
		size_t cap = out->cap_pads ? 2 * out->cap_pads : 8;
		struct dacce_scan_pad *grown = realloc(out->pads, cap * sizeof(*grown));

		if (!grown)
			return; /* fewer runs: short sites trap instead */
		out->pads = grown;
		out->cap_pads = cap;
	}
	out->pads[out->n_pads++] = (struct dacce_scan_pad){ .start = pc, .len = insn->length };
}

/*
 * Shell sort, not qsort: glibc's qsort may call malloc, and a scan can run
 * in a thread that a trap interrupted inside malloc.
 */
static void sort_targets(struct scan_state *s)
{
	static const size_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };

	for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		size_t gap = gaps[g];

		for (size_t i = gap; i < s->n_targets; i++) {
			uintptr_t v = s->targets[i];
			size_t j = i;

			for (; j >= gap && s->targets[j - gap] > v; j -= gap)
				s->targets[j] = s->targets[j - gap];
			s->targets[j] = v;
		}
	}
}

/* Whether a direct branch lands in [start, end): targets sorted. */
static bool reached(const struct scan_state *s, uintptr_t start, uintptr_t end)
{
	size_t lo = 0, hi = s->n_targets;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->targets[mid] < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n_targets && in_range(s->targets[lo], start, end);
}

/* Runs too short for a jump, or that a direct branch lands in, are dropped. */
static void keep_dead_runs(const struct scan_state *s, struct dacce_scan *out)
{
	size_t kept = 0;

	for (size_t i = 0; i < out->n_pads; i++) {
		const struct dacce_scan_pad *run = &out->pads[i];

		if (!s->out_of_memory && !reached(s, run->start, run->start + run->len) &&
		    run->len >= DACCE_SCAN_PATCH_LEN)
			out->pads[kept++] = *run;
	}
	out->n_pads = kept;
}

/*
 * Padding a direct branch lands in is code after all.  A site a branch
 * lands on is marked: a jump over the instruction before it would only
 * serve the threads that fall through.
 */
static void note_reached_sites(const struct scan_state *s, struct dacce_scan *out)
{
	for (size_t i = 0; i < out->n; i++) {
		struct dacce_scan_site *site = &out->sites[i];
		uintptr_t lo = site->addr + site->len, hi = lo + site->pad;

		if (site->pad && reached(s, lo, hi))
			site->pad = 0;
		if (reached(s, site->addr, site->addr + 1))
			site->flags |= DACCE_SCAN_TARGETED;
		if (s->out_of_memory) /* targets unknown: no padding is sure to be dead */
			site->pad = 0;
		/* A branch landing after the bound's compare would skip it. */
		if ((site->flags & DACCE_SCAN_JUMP_TABLE) &&
		    (s->out_of_memory || reached(s, site->jump_table.guard + 1, site->addr + 1)))
			site->flags &= (uint8_t)~DACCE_SCAN_JUMP_TABLE;
	}
}

static bool is_dead_tail(const struct scan_state *s)
{
	return s->past_terminator && s->furthest_internal < s->after_terminator;
}

static int check_arguments(const uint8_t *code, uintptr_t addr, uintptr_t start, uintptr_t end,
			   const struct dacce_range *plt, size_t n_plt, const struct dacce_scan *out)
{
	if (!out || (n_plt && !plt))
		return -EINVAL;
	if (start < addr || end < start || (end > start && !code))
		return -EINVAL;
	return 0;
}

int dacce_scan_function(const uint8_t *code, uintptr_t addr, uintptr_t start, uintptr_t end,
			const struct dacce_range *plt, size_t n_plt, struct dacce_scan *out)
{
	struct scan_state s = { .code = code, .addr = addr, .start = start, .end = end,
				.plt = plt, .n_plt = n_plt };
	uintptr_t pc = start;
	int err;

	err = check_arguments(code, addr, start, end, plt, n_plt, out);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	/* Per scan, on the stack: cheap to set up, and nothing shared between threads. */
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&s.decoder, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		return -EINVAL;

	while (pc < end) {
		ZydisDecoderContext ctx;
		ZydisDecodedInstruction insn;

		/* The length limit makes an instruction running past end undecodable. */
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&s.decoder, &ctx, code + (pc - addr),
								end - pc, &insn))) {
			if (is_dead_tail(&s)) {
				out->stopped_early = true;
				out->stop_addr = pc;
				break;
			}
			err = -EILSEQ;
			goto cleanup;
		}
		out->n_insns++;
		s.recent[s.n_decoded++ % DACCE_JUMP_TABLE_WINDOW] = pc;
		s.in_dead_padding = s.in_dead_padding && is_padding(&insn);
		if (s.in_dead_padding)
			take_padding(out, &insn, pc);
		err = report_transfer(&s, &ctx, &insn, pc, out);
		if (err)
			goto cleanup;
		/* A borrowed jcc is only ever the last instruction before a site. */
		s.prev2 = s.prev_rip_disp == DACCE_SCAN_PREV_JCC ? 0 : s.prev;
		s.prev2_len = s.prev_len;
		s.prev2_rip_disp = s.prev_rip_disp;
		s.prev = !s.in_dead_padding && can_borrow(&insn, &s.prev_rip_disp) ? pc : 0;
		if (!s.prev && !s.in_dead_padding && can_borrow_jcc(&s, &insn, pc)) {
			s.prev = pc;
			s.prev_rip_disp = DACCE_SCAN_PREV_JCC;
		}
		s.prev_len = insn.length;
		pc += insn.length;
		if (is_terminator(&insn)) {
			s.past_terminator = true;
			s.after_terminator = pc;
			s.in_dead_padding = true;
		}
	}
	sort_targets(&s);
	note_reached_sites(&s, out);
	keep_dead_runs(&s, out);
	free(s.targets);
	return 0;

cleanup:
	free(s.targets);
	dacce_scan_fini(out);
	out->stop_addr = pc;
	return err;
}

void dacce_scan_fini(struct dacce_scan *scan)
{
	if (!scan)
		return;
	free(scan->sites);
	scan->sites = NULL;
	scan->n = scan->cap = 0;
	free(scan->pads);
	scan->pads = NULL;
	scan->n_pads = scan->cap_pads = 0;
}

bool dacce_scan_endbr64(const uint8_t *code)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

	return code && memcmp(code, endbr64, sizeof(endbr64)) == 0;
}
