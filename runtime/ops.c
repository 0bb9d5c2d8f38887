// SPDX-License-Identifier: MIT
#include "ops.h"

#include <errno.h>

#include "tls.h"

/*
 * Red-zone slots: below anything a call writes (-8).  Every register is
 * kept, caller-saved ones too: with interprocedural register allocation a
 * compiler keeps values in caller-saved registers across calls to functions
 * it knows leave them alone.
 */
#define RAX_SPILL (-16)
#define R11_SPILL (-24)
#define RCX_SPILL (-32)
/* Fields of the top entry, relative to cc_top (one past it). */
#define TOP_ID (-16)
#define TOP_EDGE (-8)
#define TOP_AUX (-4)

int dacce_rt_op_for_edge(const struct dacce_dict *dict, const struct dacce_graph *later,
			 uint32_t edge, struct dacce_rt_op *op)
{
	struct dacce_edge_view v;
	int err = dacce_dict_edge(dict, later, edge, &v);

	if (err)
		return err;
	if (dacce_site_kind_is_nested_root(v.kind))
		return -EINVAL;
	*op = (struct dacce_rt_op){
		.edge = edge,
		.compress = v.compress,
		.reset_id = dict->max_id + 1,
	};
	if (v.class == DACCE_EDGE_ENCODED) {
		op->kind = v.en ? DACCE_RT_OP_ADD : DACCE_RT_OP_NONE;
		op->en = v.en;
	} else {
		op->kind = DACCE_RT_OP_PUSH;
	}
	return 0;
}

bool dacce_rt_op_same_code(const struct dacce_rt_op *a, const struct dacce_rt_op *b)
{
	return a->kind == b->kind && a->en == b->en && a->edge == b->edge &&
	       a->compress == b->compress && a->hits == b->hits && a->count == b->count;
}

static bool fits_imm32(uint64_t v)
{
	return v <= INT32_MAX;
}

static void emit_add_en(struct x86_buf *b, int32_t id, uint64_t en, bool add)
{
	if (fits_imm32(en)) {
		if (add)
			x86_add_imm_to_fs(b, id, (int32_t)en);
		else
			x86_sub_imm_from_fs(b, id, (int32_t)en);
		return;
	}
	x86_spill_r11(b, R11_SPILL);
	x86_movabs_r11(b, en);
	if (add)
		x86_add_r11_to_fs(b, id);
	else
		x86_sub_r11_from_fs(b, id);
	x86_reload_r11(b, R11_SPILL);
}

/*
 * Jumps to the returned label unless the top entry is <id, edge> with room
 * in its count; falls through (to the bump) when it is.  Expects %r11 = cc_top.
 */
static x86_label emit_compress_check(struct x86_buf *b, int32_t tpoff, uint32_t edge,
				     x86_label *not_same_edge, x86_label *saturated)
{
	x86_label empty;

	x86_cmp_fs_with_r11(b, tpoff + (int32_t)DACCE_TLS_CC_BASE);
	empty = x86_jcc_short(b, X86_JE);
	x86_cmp_imm32_at_r11(b, TOP_EDGE, edge);
	*not_same_edge = x86_jcc_short(b, X86_JNE);
	x86_cmp_imm32_at_r11(b, TOP_AUX, UINT32_MAX);
	*saturated = x86_jcc_short(b, X86_JE);
	x86_spill_rax(b, RAX_SPILL);
	x86_mov_fs_to_rax(b, tpoff + (int32_t)DACCE_TLS_ID);
	x86_cmp_rax_with_r11_mem(b, TOP_ID);
	x86_reload_rax(b, RAX_SPILL); /* mov keeps the flags of the compare */
	return empty;
}

static void emit_push_before(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op)
{
	x86_label empty = 0, other_edge = 0, saturated = 0, other_id = 0, done_bump = 0;

	if (op->count)
		x86_add_imm_to_fs(b, tpoff + (int32_t)DACCE_TLS_PUSHES, 1);
	x86_spill_r11(b, R11_SPILL);
	if (op->hits) {
		/* Not atomic: a lost count among threads only blurs a frequency. */
		x86_movabs_r11(b, (uintptr_t)op->hits);
		x86_inc64_at_r11(b);
	}
	x86_mov_fs_to_r11(b, tpoff + (int32_t)DACCE_TLS_CC_TOP);
	if (op->compress) {
		empty = emit_compress_check(b, tpoff, op->edge, &other_edge, &saturated);
		other_id = x86_jcc_short(b, X86_JNE);
		x86_inc32_at_r11(b, TOP_AUX);
		done_bump = x86_jmp_short(b);
		x86_bind(b, empty);
		x86_bind(b, other_edge);
		x86_bind(b, saturated);
		x86_bind(b, other_id);
	}
	/* Entry first, then the new top: a sampler never sees a half entry. */
	x86_spill_rax(b, RAX_SPILL);
	x86_mov_fs_to_rax(b, tpoff + (int32_t)DACCE_TLS_ID);
	x86_store_rax_at_r11(b, 0);
	x86_reload_rax(b, RAX_SPILL);
	x86_store_imm32_at_r11(b, 8, op->edge);
	x86_store_imm32_at_r11(b, 12, 0);
	x86_add_r11_imm8(b, 16);
	x86_mov_r11_to_fs(b, tpoff + (int32_t)DACCE_TLS_CC_TOP);
	if (op->compress)
		x86_bind(b, done_bump);
	/* From the block, not an immediate: push code then stays valid from epoch to epoch. */
	x86_mov_fs_to_r11(b, tpoff + (int32_t)DACCE_TLS_RESET_ID);
	x86_mov_r11_to_fs(b, tpoff + (int32_t)DACCE_TLS_ID);
	x86_reload_r11(b, R11_SPILL);
}

static void emit_push_after(struct x86_buf *b, int32_t tpoff)
{
	x86_label pop, done;

	x86_spill_r11(b, R11_SPILL);
	x86_spill_rcx(b, RCX_SPILL);
	x86_mov_fs_to_r11(b, tpoff + (int32_t)DACCE_TLS_CC_TOP);
	x86_load_rcx_from_r11(b, TOP_ID);
	x86_mov_rcx_to_fs(b, tpoff + (int32_t)DACCE_TLS_ID);
	x86_cmp_imm32_at_r11(b, TOP_AUX, 0);
	pop = x86_jcc_short(b, X86_JE);
	x86_dec32_at_r11(b, TOP_AUX);
	done = x86_jmp_short(b);
	x86_bind(b, pop);
	x86_add_r11_imm8(b, -16);
	x86_mov_r11_to_fs(b, tpoff + (int32_t)DACCE_TLS_CC_TOP);
	x86_bind(b, done);
	x86_reload_rcx(b, RCX_SPILL);
	x86_reload_r11(b, R11_SPILL);
}

void dacce_emit_call_hit(struct x86_buf *b, const struct dacce_rt_op *op)
{
	if (!op->hits || op->kind == DACCE_RT_OP_PUSH)
		return;
	x86_spill_r11(b, R11_SPILL);
	x86_movabs_r11(b, (uintptr_t)op->hits);
	x86_inc64_at_r11(b);
	x86_reload_r11(b, R11_SPILL);
}

void dacce_emit_before(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op)
{
	/* Flags are dead here: this code runs in place of a call or a jump out of the function. */
	if (op->count)
		x86_add_imm_to_fs(b, tpoff + (int32_t)DACCE_TLS_CALLS, 1);
	switch (op->kind) {
	case DACCE_RT_OP_NONE:
		return;
	case DACCE_RT_OP_ADD:
		emit_add_en(b, tpoff + (int32_t)DACCE_TLS_ID, op->en, true);
		return;
	case DACCE_RT_OP_PUSH:
		emit_push_before(b, tpoff, op);
		return;
	}
}

void dacce_emit_after(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op)
{
	switch (op->kind) {
	case DACCE_RT_OP_NONE:
		return;
	case DACCE_RT_OP_ADD:
		emit_add_en(b, tpoff + (int32_t)DACCE_TLS_ID, op->en, false);
		return;
	case DACCE_RT_OP_PUSH:
		emit_push_after(b, tpoff);
		return;
	}
}
