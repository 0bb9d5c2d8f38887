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

_Static_assert(sizeof(struct dacce_rt_tail_record) == 40, "generated code assumes 40-byte records");

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

/* Pushes a record for the frame whose return-address slot is at %rcx; %r11 = tc_top. */
static void emit_new_record(struct x86_buf *b, int32_t tpoff, uintptr_t return_stub)
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
	/* Record complete before it is published, published before the slot points at the stub. */
	x86_add_r11_imm8(b, RECORD);
	x86_mov_r11_to_fs(b, field(tpoff, DACCE_TLS_TC_TOP));
	x86_movabs_rax(b, return_stub);
	x86_store_rax_at_rcx(b);
}

/*
 * Looks for the record of the frame whose return-address slot is at %rcx
 * (%r11 = tc_top after).  Falls through when the frame has one (the top
 * record names the slot and the slot holds the stub); jumps to *stale when
 * the top record names the slot but belongs to a dead frame (%r11 at it
 * then means reuse it), to *none when there is none.  Uses %rax.
 */
static void emit_find_record(struct x86_buf *b, int32_t tpoff, uintptr_t return_stub,
			     x86_label *none, x86_label *other_frame, x86_label *stale)
{
	x86_mov_fs_to_r11(b, field(tpoff, DACCE_TLS_TC_TOP));
	x86_cmp_fs_with_r11(b, field(tpoff, DACCE_TLS_TC_BASE));
	*none = x86_jcc_short(b, X86_JE);
	x86_cmp_rcx_with_r11_mem(b, REC_FRAME - RECORD);
	*other_frame = x86_jcc_short(b, X86_JNE);
	/* Same slot: the record is this frame's only if the slot still holds the stub. */
	x86_movabs_rax(b, return_stub);
	x86_cmp_rax_with_rcx_mem(b);
	*stale = x86_jcc_short(b, X86_JNE);
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
	x86_lea_rsp(b, -RED_ZONE);
	x86_save_flags(b);
	x86_push_rax(b);
	x86_push_rcx(b);
	x86_push_r11(b);
	x86_lea_rcx_rsp32(b, SAVED + RED_ZONE); /* the frame's return-address slot */
	emit_find_record(b, tpoff, return_stub, &empty, &other_frame, &stale);
	have_record = x86_jmp_short(b);
	x86_bind(b, stale);
	x86_add_r11_imm8(b, -RECORD); /* a dead frame's record at this slot: reuse it */
	x86_bind(b, empty);
	x86_bind(b, other_frame);
	emit_new_record(b, tpoff, return_stub);
	x86_bind(b, have_record);
	if (op->hits && op->kind == DACCE_RT_OP_ADD) {
		/* Counted for the policy (push code counts itself); %r11 and the flags are saved. */
		x86_movabs_r11(b, (uintptr_t)op->hits);
		x86_inc64_at_r11(b);
	}
	dacce_emit_before(b, tpoff, op);

	x86_pop_r11(b);
	x86_pop_rcx(b);
	x86_pop_rax(b);
	x86_restore_flags(b);
	x86_lea_rsp(b, RED_ZONE);
	go_on(b, slot, target, false);
	return b->overflow ? -ENOSPC : 0;
}

/* Red-zone slots of the leaf shape's entry (dead at a tail jump out of the function). */
#define LEAF_RAX (-16)
#define LEAF_RCX (-24)

int dacce_tail_emit_leaf_trampoline(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op,
				    uintptr_t return_stub, uintptr_t target, uintptr_t target_slot,
				    uintptr_t *entry, uintptr_t *after)
{
	x86_label empty, other_frame, stale, have_record, fatal;
	uintptr_t slot = target_slot;

	if (op->kind != DACCE_RT_OP_ADD)
		return -EINVAL;
	if (!slot && !x86_rel32_reaches(b->addr + b->len + DACCE_TAIL_TRAMP_MAX, target))
		slot = x86_literal64(b, target);
	*entry = b->addr + b->len;
	/*
	 * A jump to another function's entry: flags, %r11 and the red zone are
	 * dead (the frame it leaves is gone), %rax (a variadic callee's count of
	 * vector arguments) and %rcx (an argument) are kept.
	 */
	x86_spill_rax(b, LEAF_RAX);
	x86_spill_rcx(b, LEAF_RCX);
	x86_lea_rcx_rsp(b, 0); /* the frame's return-address slot */
	emit_find_record(b, tpoff, return_stub, &empty, &other_frame, &stale);
	/*
	 * The frame made a tail call before and holds its record: the state to
	 * put back at its return is already there, and its slot holds the stub,
	 * which the call below replaces as it would the return address.
	 */
	have_record = x86_jmp_short(b);
	x86_bind(b, stale);
	x86_add_r11_imm8(b, -RECORD); /* a dead frame's record at this slot: reuse it */
	x86_bind(b, empty);
	x86_bind(b, other_frame);
	emit_new_record(b, tpoff, return_stub);
	x86_bind(b, have_record);
	dacce_emit_before(b, tpoff, op);
	x86_reload_rcx(b, LEAF_RCX);
	x86_reload_rax(b, LEAF_RAX);
	/* The return address lives in the record now; the call puts ours in its slot. */
	x86_lea_rsp(b, 8);
	go_on(b, slot, target, true);

	*after = b->addr + b->len;
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
