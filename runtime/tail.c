// SPDX-License-Identifier: MIT
#include "tail.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "tls.h"

#define RECORD ((int8_t)sizeof(struct dacce_rt_tail_record))
#define REC_ID ((int8_t)offsetof(struct dacce_rt_tail_record, id))
#define REC_CC_TOP ((int8_t)offsetof(struct dacce_rt_tail_record, cc_top))
#define REC_TOP_AUX ((int8_t)offsetof(struct dacce_rt_tail_record, top_aux))
#define REC_FRAME ((int8_t)offsetof(struct dacce_rt_tail_record, frame))
#define REC_RETURN ((int8_t)offsetof(struct dacce_rt_tail_record, return_to))
#define REC_GUARD ((int8_t)offsetof(struct dacce_rt_tail_record, guard))

_Static_assert(sizeof(struct dacce_rt_tail_record) == 48, "generated code assumes 48-byte records");

/*
 * A jump that looks like a tail call may be a jump into a fragment of the
 * same function (a frameless function's cold part), where the red zone,
 * %r11 and the flags can be live.  So the trampoline moves %rsp past the red
 * zone, saves what it uses there (where signal frames cannot reach), and
 * puts everything back before jumping on.
 */
#define RED_ZONE 128
/* The return stub's red-zone slots. */
#define STUB_RCX (-16)
#define STUB_RSI (-24)
#define STUB_R11 (-32)
#define STUB_TARGET (-40)
#define SAVED (4 * 8) /* flags, %rax, %rcx, %r11 */

static int32_t field(int32_t tpoff, size_t offset)
{
	return tpoff + (int32_t)offset;
}

/*
 * The return through a frame's record: from the top, drop the records of
 * frames a longjmp skipped, then put back the record's id, ccStack top and
 * top entry's count and leave %rcx = the return address it saved.  At a
 * return flags and the red zone are dead; %rcx, %rsi and %r11 are saved in
 * the red zone (every register is kept: a caller may rely on what it knows
 * the callee leaves alone).  Returns the label of the state-lost exit.
 */
static x86_label emit_restore_record(struct x86_buf *b, int32_t tpoff)
{
	x86_label no_entries, fatal;
	size_t loop;

	x86_spill_rcx(b, STUB_RCX);
	x86_spill_rsi(b, STUB_RSI);
	x86_spill_r11(b, STUB_R11);
	x86_mov_fs_to_r11(b, field(tpoff, DACCE_TLS_TC_TOP));
	x86_lea_rcx_rsp(b, -8); /* the slot this return came through */
	loop = b->len;
	x86_add_r11_imm8(b, -RECORD);
	x86_cmp_fs_with_r11(b, field(tpoff, DACCE_TLS_TC_BASE));
	fatal = x86_jcc_short(b, X86_JB);
	x86_cmp_rcx_with_r11_mem(b, REC_FRAME);
	x86_jcc_back(b, X86_JNE, loop);
	x86_mov_r11_to_fs(b, field(tpoff, DACCE_TLS_TC_TOP));
	x86_load_rcx_from_r11(b, REC_ID);
	x86_mov_rcx_to_fs(b, field(tpoff, DACCE_TLS_ID));
	x86_load_rsi_from_r11(b, REC_CC_TOP);
	x86_mov_rsi_to_fs(b, field(tpoff, DACCE_TLS_CC_TOP));
	x86_cmp_fs_with_rsi(b, field(tpoff, DACCE_TLS_CC_BASE));
	no_entries = x86_jcc_short(b, X86_JE);
	x86_load_ecx_from_r11(b, REC_TOP_AUX);
	x86_store_ecx_at_rsi(b, -4); /* the top entry's count */
	x86_bind(b, no_entries);
	x86_load_rcx_from_r11(b, REC_RETURN);
	return fatal;
}

uintptr_t dacce_tail_emit_return_stub(struct x86_buf *b, int32_t tpoff)
{
	uintptr_t start = b->addr + b->len;
	x86_label fatal = emit_restore_record(b, tpoff);

	x86_spill_rcx(b, STUB_TARGET);
	x86_reload_rcx(b, STUB_RCX);
	x86_reload_rsi(b, STUB_RSI);
	x86_reload_r11(b, STUB_R11);
	x86_jmp_rsp_mem(b, STUB_TARGET);
	x86_bind(b, fatal);
	x86_ud2(b); /* a return through the stub with no record: the state is lost */
	return b->overflow ? 0 : start;
}

/* Where the 8-byte immediate of the movabs about to be emitted will be: patched later. */
static size_t next_movabs_imm(const struct x86_buf *b)
{
	return b->len + 2;
}

static void patch_imm64(struct x86_buf *b, size_t at, uint64_t value)
{
	if (b->overflow || at + 8 > b->len)
		return;
	for (int i = 0; i < 8; i++)
		b->code[at + i] = (uint8_t)(value >> (8 * i));
}

/*
 * Pushes a record for the frame whose return-address slot is at %rcx (%r11 =
 * tc_top), whose guard is guard (or, with *guard_at, a placeholder patched
 * later), and points the slot at the guard.
 */
static void emit_new_record(struct x86_buf *b, int32_t tpoff, uint64_t guard, size_t *guard_at)
{
	x86_label no_entries, stored;

	x86_mov_fs_to_rax(b, field(tpoff, DACCE_TLS_ID));
	x86_store_rax_at_r11(b, REC_ID);
	x86_mov_fs_to_rax(b, field(tpoff, DACCE_TLS_CC_TOP));
	x86_store_rax_at_r11(b, REC_CC_TOP);
	x86_cmp_fs_with_rax(b, field(tpoff, DACCE_TLS_CC_BASE));
	no_entries = x86_jcc_short(b, X86_JE);
	x86_load_eax_from_rax(b, -4); /* the top entry's count */
	stored = x86_jmp_short(b);
	x86_bind(b, no_entries);
	x86_xor_eax(b);
	x86_bind(b, stored);
	x86_store_eax_at_r11(b, REC_TOP_AUX);
	x86_store_rcx_at_r11(b, REC_FRAME);
	x86_load_rax_from_rcx(b);
	x86_store_rax_at_r11(b, REC_RETURN);
	if (guard_at)
		*guard_at = next_movabs_imm(b);
	x86_movabs_rax(b, guard);
	x86_store_rax_at_r11(b, REC_GUARD);
	/* Record complete before it is published, published before the slot holds its guard. */
	x86_add_r11_imm8(b, RECORD);
	x86_mov_r11_to_fs(b, field(tpoff, DACCE_TLS_TC_TOP));
	x86_store_rax_at_rcx(b);
}

/*
 * Looks for the record of the frame whose return-address slot is at %rcx
 * (%r11 = tc_top after).  Falls through when the frame has one (the top
 * record names the slot and the slot holds the record's guard), with %rax =
 * what the slot holds; jumps to *stale when the top record names the slot
 * but belongs to a dead frame (%r11 - RECORD at it then means reuse it), to
 * *none when there is none.
 */
static void emit_find_record(struct x86_buf *b, int32_t tpoff, bool near, x86_label *none,
			     x86_label *other_frame, x86_label *stale)
{
	x86_label (*jcc)(struct x86_buf *, enum x86_cond) = near ? x86_jcc_near : x86_jcc_short;

	x86_mov_fs_to_r11(b, field(tpoff, DACCE_TLS_TC_TOP));
	x86_cmp_fs_with_r11(b, field(tpoff, DACCE_TLS_TC_BASE));
	*none = jcc(b, X86_JE);
	x86_cmp_rcx_with_r11_mem(b, REC_FRAME - RECORD);
	*other_frame = jcc(b, X86_JNE);
	/* Same slot: the record is this frame's only if the slot still holds its guard. */
	x86_load_rax_from_rcx(b);
	x86_cmp_rax_with_r11_mem(b, REC_GUARD - RECORD);
	*stale = jcc(b, X86_JNE);
}

/* To target, through slot when not 0: a jump, or a call. */
static void go_on(struct x86_buf *b, uintptr_t slot, uintptr_t target, bool call)
{
	if (slot && call)
		x86_call_rip_slot(b, slot);
	else if (slot)
		x86_jmp_rip_slot(b, slot);
	else if (call)
		x86_call(b, target);
	else
		x86_jmp(b, target);
}

/* Counted for the policy (push code counts itself); %r11 and the flags are free. */
static void emit_hits(struct x86_buf *b, const struct dacce_rt_op *op)
{
	if (op->hits && op->kind == DACCE_RT_OP_ADD) {
		x86_movabs_r11(b, (uintptr_t)op->hits);
		x86_inc64_at_r11(b);
	}
}

/*
 * Red-zone slots of the leaf shape's entry (dead at a tail jump to another
 * module's function), below those the operation's own code spills to (ops.c:
 * an En past 32 bits takes %r11 through -24, which overwrote the kept %rcx).
 */
#define LEAF_RAX (-40)
#define LEAF_RCX (-48)
#define LEAF_R11 (-56)

/* Saves what a tail trampoline uses and sets %rcx to the frame's return-address slot. */
static void tail_enter(struct x86_buf *b, bool leaf)
{
	if (leaf) {
		x86_spill_rax(b, LEAF_RAX);
		x86_spill_rcx(b, LEAF_RCX);
		x86_spill_r11(b, LEAF_R11);
		x86_lea_rcx_rsp(b, 0);
		return;
	}
	x86_lea_rsp(b, -RED_ZONE);
	x86_save_flags(b);
	x86_push_rax(b);
	x86_push_rcx(b);
	x86_push_r11(b);
	x86_lea_rcx_rsp32(b, SAVED + RED_ZONE);
}

/* Puts back what tail_enter saved: %rsp at the slot again. */
static void tail_leave(struct x86_buf *b, bool leaf)
{
	if (leaf) {
		x86_reload_r11(b, LEAF_R11);
		x86_reload_rcx(b, LEAF_RCX);
		x86_reload_rax(b, LEAF_RAX);
		return;
	}
	x86_pop_r11(b);
	x86_pop_rcx(b);
	x86_pop_rax(b);
	x86_restore_flags(b);
	x86_lea_rsp(b, RED_ZONE);
}

int dacce_tail_emit_trampoline(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op,
			       uintptr_t return_stub, uintptr_t target, uintptr_t target_slot,
			       uintptr_t *entry)
{
	x86_label empty, other_frame, stale, have_record;
	uintptr_t slot = target_slot;

	if (!slot && !x86_rel32_reaches(b->addr + b->len + DACCE_TAIL_TRAMP_MAX, target))
		slot = x86_literal64(b, target);
	*entry = b->addr + b->len;
	if (op->kind == DACCE_RT_OP_NONE) {
		/* Nothing to undo at the frame's return: no record (machine.h), just the jump. */
		if (op->count) {
			x86_lea_rsp(b, -RED_ZONE);
			x86_save_flags(b);
			dacce_emit_before(b, tpoff, op);
			x86_restore_flags(b);
			x86_lea_rsp(b, RED_ZONE);
		}
		go_on(b, slot, target, false);
		return b->overflow ? -ENOSPC : 0;
	}
	tail_enter(b, false);
	emit_find_record(b, tpoff, false, &empty, &other_frame, &stale);
	have_record = x86_jmp_short(b);
	x86_bind(b, stale);
	x86_add_r11_imm8(b, -RECORD); /* a dead frame's record at this slot: reuse it */
	x86_bind(b, empty);
	x86_bind(b, other_frame);
	emit_new_record(b, tpoff, return_stub, NULL);
	x86_bind(b, have_record);
	emit_hits(b, op);
	dacce_emit_before(b, tpoff, op);
	tail_leave(b, false);
	go_on(b, slot, target, false);
	return b->overflow ? -ENOSPC : 0;
}

int dacce_tail_emit_call_trampoline(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op,
				    bool leaf, uintptr_t target, uintptr_t target_slot,
				    uintptr_t *entry, uintptr_t *after)
{
	x86_label empty, other_frame, stale, fatal;
	uintptr_t slot = target_slot;
	size_t new_guard_at;

	if (op->kind == DACCE_RT_OP_NONE)
		return -EINVAL;
	if (!slot && !x86_rel32_reaches(b->addr + b->len + DACCE_TAIL_TRAMP_MAX, target))
		slot = x86_literal64(b, target);
	*entry = b->addr + b->len;
	tail_enter(b, leaf);
	emit_find_record(b, tpoff, true, &empty, &other_frame, &stale);
	/*
	 * The frame holds its record (it tail-called before): the callee is
	 * jumped to and returns where the first tail call's return did, the
	 * return point the return stack holds or the stub.  (Calling on from
	 * a frame whose slot held the stub cost perl 3 to 4 % more, 2026-11-28.)
	 */
	emit_hits(b, op);
	dacce_emit_before(b, tpoff, op);
	tail_leave(b, leaf);
	go_on(b, slot, target, false);

	x86_bind_near(b, stale);
	x86_add_r11_imm8(b, -RECORD); /* a dead frame's record at this slot: reuse it */
	x86_bind_near(b, empty);
	x86_bind_near(b, other_frame);
	emit_new_record(b, tpoff, 0, &new_guard_at);
	emit_hits(b, op);
	dacce_emit_before(b, tpoff, op);
	tail_leave(b, leaf);
	/* The return address lives in the record now; the call puts ours in its slot. */
	x86_lea_rsp(b, 8);
	go_on(b, slot, target, true);

	/* Last: the return point's code runs to the end of the piece (returns.h, gdbjit.h). */
	*after = b->addr + b->len;
	patch_imm64(b, new_guard_at, *after);
	fatal = emit_restore_record(b, tpoff);
	x86_spill_rcx(b, -8); /* back in its slot, for a predicted return */
	x86_reload_rcx(b, STUB_RCX);
	x86_reload_rsi(b, STUB_RSI);
	x86_reload_r11(b, STUB_R11);
	x86_lea_rsp(b, -8);
	x86_ret(b);
	x86_bind(b, fatal);
	x86_ud2(b); /* no record of this frame: the state is lost */
	return b->overflow ? -ENOSPC : 0;
}

const uint8_t *dacce_tail_stub_unwind_rules(size_t *len)
{
	/* CFA = %rsp (the slot the return came through is just below it); no return address. */
	static const uint8_t rules[] = { DW_CFA_def_cfa, 7, 0, DW_CFA_undefined, 16 };

	*len = sizeof(rules);
	return rules;
}
