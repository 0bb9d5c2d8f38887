// SPDX-License-Identifier: MIT
#include "jump_tables.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* One instruction of the window, decoded with its operands. */
struct insn {
	uintptr_t addr;
	ZydisDecodedInstruction d;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

static ZydisRegister wide(ZydisRegister reg)
{
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
}

/* %ah, %bh, %ch, %dh: bits 8 to 15, not the low byte their 64-bit register's index bits start at. */
static bool is_high_byte(ZydisRegister reg)
{
	return reg == ZYDIS_REGISTER_AH || reg == ZYDIS_REGISTER_BH || reg == ZYDIS_REGISTER_CH ||
	       reg == ZYDIS_REGISTER_DH;
}

static bool is_reg(const struct insn *i, int op, uint16_t bits)
{
	return i->d.operand_count_visible > op && i->ops[op].type == ZYDIS_OPERAND_TYPE_REGISTER &&
	       i->ops[op].size == bits;
}

/* A plain memory operand: the default segment, no %fs/%gs. */
static bool is_plain_mem(const ZydisDecodedOperand *op)
{
	return op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.type == ZYDIS_MEMOP_TYPE_MEM &&
	       op->mem.segment != ZYDIS_REGISTER_FS && op->mem.segment != ZYDIS_REGISTER_GS;
}

/* A register-to-register mov of 32 or 64 bits. */
static bool is_reg_mov(const struct insn *i)
{
	return i->d.mnemonic == ZYDIS_MNEMONIC_MOV &&
	       ((is_reg(i, 0, 32) && is_reg(i, 1, 32)) || (is_reg(i, 0, 64) && is_reg(i, 1, 64)));
}

/* movzx from an 8- or 16-bit register into a 32- or 64-bit one. */
static bool is_reg_movzx(const struct insn *i)
{
	return i->d.mnemonic == ZYDIS_MNEMONIC_MOVZX && i->d.operand_count_visible == 2 &&
	       (is_reg(i, 0, 32) || is_reg(i, 0, 64)) &&
	       (is_reg(i, 1, 8) || is_reg(i, 1, 16)) && !is_high_byte(i->ops[1].reg.value);
}

/*
 * Registers whose low bits hold the index, bounded by the compare: all 64,
 * or only the low 8, 16 or 32 that were compared (the bits above are
 * unknown).  Only a register that holds it whole can index the table.
 */
struct bounded {
	struct {
		ZydisRegister reg; /* 64-bit */
		uint16_t bits;
	} held[4];
	size_t n;
	uint32_t entries; /* the index is below this */
};

static void forget(struct bounded *b, ZydisRegister reg)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->held[i].reg == reg)
			b->held[i--] = b->held[--b->n];
}

/* reg now holds the index in its low bits; whatever it held before is gone. */
static void hold(struct bounded *b, ZydisRegister reg, uint16_t bits)
{
	forget(b, reg);
	if (bits && b->n < sizeof(b->held) / sizeof(b->held[0]))
		b->held[b->n++] = (typeof(b->held[0])){ reg, bits };
}

/* Whether reg's low `bits` bits are exactly the index (those it holds, or fewer that still fit it). */
static bool holds_in(const struct bounded *b, ZydisRegister reg, uint16_t bits)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->held[i].reg == reg)
			return b->held[i].bits == bits ||
			       (b->held[i].bits > bits && bits < 64 && b->entries <= (1ull << bits));
	return false;
}

/*
 * A mov or movzx after the compare: a 32-bit destination clears the high
 * half and movzx the bits above its source, so a copy of the index's low
 * bits holds it whole.
 */
static void apply_move(struct bounded *b, const struct insn *i)
{
	ZydisRegister dst = wide(i->ops[0].reg.value), src = wide(i->ops[1].reg.value);
	uint16_t from = i->ops[1].size, to = i->ops[0].size;

	if (to == 64 && from == 64) {
		for (size_t k = 0; k < b->n; k++)
			if (b->held[k].reg == src) {
				hold(b, dst, b->held[k].bits);
				return;
			}
		forget(b, dst);
		return;
	}
	hold(b, dst, holds_in(b, src, from) ? 64 : 0);
}

/*
 * cmp $N, %reg followed by ja/jae: how many index values fall through
 * (0: not such a pair).
 */
static uint32_t bound_of(const struct insn *cmp, const struct insn *jcc)
{
	int64_t n;

	if (cmp->d.mnemonic != ZYDIS_MNEMONIC_CMP || cmp->d.operand_count_visible != 2 ||
	    cmp->ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
	    cmp->ops[0].size < 8 || is_high_byte(cmp->ops[0].reg.value) ||
	    cmp->ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return 0;
	n = cmp->ops[1].imm.is_signed ? cmp->ops[1].imm.value.s : (int64_t)cmp->ops[1].imm.value.u;
	if (n < 0 || n >= DACCE_JUMP_TABLE_MAX_ENTRIES)
		return 0;
	if (jcc->d.mnemonic == ZYDIS_MNEMONIC_JNBE)
		return (uint32_t)n + 1;
	if (jcc->d.mnemonic == ZYDIS_MNEMONIC_JNB)
		return (uint32_t)n;
	return 0;
}

/* lea table(%rip), %reg: its table, or 0. */
static uintptr_t rip_table_of(const struct insn *lea)
{
	ZyanU64 table;

	if (lea->d.mnemonic != ZYDIS_MNEMONIC_LEA || !is_reg(lea, 0, 64) ||
	    lea->ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY ||
	    lea->ops[1].mem.base != ZYDIS_REGISTER_RIP ||
	    lea->ops[1].mem.index != ZYDIS_REGISTER_NONE ||
	    !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&lea->d, &lea->ops[1], lea->addr, &table)))
		return 0;
	return (uintptr_t)table;
}

/* movslq (%base,%index,4), %entry; add, jmp: the entries are offsets from base. */
static bool ends_relative(const struct insn *movsxd, const struct insn *add, const struct insn *jmp,
			  ZydisRegister base, const struct bounded *b)
{
	const ZydisDecodedOperand *m = &movsxd->ops[1];
	ZydisRegister target, other, entry;

	if (movsxd->d.mnemonic != ZYDIS_MNEMONIC_MOVSXD || !is_reg(movsxd, 0, 64) ||
	    !is_plain_mem(m) || m->size != 32 || m->mem.scale != 4 || m->mem.disp.value != 0 ||
	    m->mem.base != base || !holds_in(b, m->mem.index, 64))
		return false;
	/* add %rOther, %rTarget; jmp *%rTarget: one of the two is the base, the other the entry. */
	if (!is_reg(jmp, 0, 64) || add->d.mnemonic != ZYDIS_MNEMONIC_ADD || !is_reg(add, 0, 64) ||
	    !is_reg(add, 1, 64))
		return false;
	target = jmp->ops[0].reg.value;
	other = add->ops[1].reg.value;
	entry = movsxd->ops[0].reg.value;
	return add->ops[0].reg.value == target && other != target && entry != base &&
	       ((entry == target && base == other) || (entry == other && base == target));
}

/* jmp *table(,%index,8): the entries are absolute addresses. */
static bool ends_absolute(const struct insn *jmp, const struct bounded *b)
{
	const ZydisDecodedOperand *m = &jmp->ops[0];

	return is_plain_mem(m) && m->mem.base == ZYDIS_REGISTER_NONE && m->mem.scale == 8 &&
	       m->mem.disp.has_displacement && m->mem.index != ZYDIS_REGISTER_NONE &&
	       holds_in(b, m->mem.index, 64);
}

/*
 * The window w[0..n) ends at the jump.  It starts with the compare and its
 * jcc, or with a copy into or out of the compared register just before
 * them; then come only moves between registers and the lea of the table,
 * and the movslq and add of the relative form.
 */
static bool match_window(const struct insn *w, size_t n, struct dacce_jump_table *out)
{
	const struct insn *jmp = &w[n - 1];
	size_t c = 0, body_end = n - 1;
	struct bounded b = { .n = 0 };
	ZydisRegister base = ZYDIS_REGISTER_NONE, compared;
	uint16_t width;
	uintptr_t table = 0;
	bool relative;

	if (n >= 2 && is_reg_mov(&w[0]))
		c = 1;
	if (n < c + 3 || !(b.entries = bound_of(&w[c], &w[c + 1])))
		return false;
	compared = wide(w[c].ops[0].reg.value);
	width = w[c].ops[0].size;
	if (c == 1) {
		ZydisRegister dst = wide(w[0].ops[0].reg.value), src = wide(w[0].ops[1].reg.value);

		/* Run the copy after the compare instead: both hold the same bits at the compare. */
		if (dst == compared && w[0].ops[0].size == 32) {
			/* The copy cleared dst's high half: compared from bit 31 up, all of it is the index. */
			hold(&b, dst, width >= 32 ? 64 : width);
			hold(&b, src, width == 64 ? 32 : width);
		} else if (dst == compared) {
			hold(&b, dst, width);
			hold(&b, src, width);
		} else if (src == compared) {
			hold(&b, src, width);
			apply_move(&b, &w[0]);
		} else {
			return false;
		}
	} else {
		hold(&b, compared, width);
	}
	relative = is_reg(jmp, 0, 64);
	if (relative) {
		if (n < c + 5)
			return false;
		body_end = n - 3; /* the movslq and the add end it */
	}
	for (size_t i = c + 2; i < body_end; i++) {
		uintptr_t lea_table;

		if (is_reg_mov(&w[i]) || is_reg_movzx(&w[i])) {
			apply_move(&b, &w[i]);
			if (wide(w[i].ops[0].reg.value) == base)
				base = ZYDIS_REGISTER_NONE;
		} else if ((lea_table = rip_table_of(&w[i]))) {
			base = w[i].ops[0].reg.value;
			table = lea_table;
			forget(&b, base);
		} else {
			return false;
		}
	}
	if (relative ? base == ZYDIS_REGISTER_NONE || !ends_relative(&w[n - 3], &w[n - 2], jmp, base, &b)
		     : !ends_absolute(jmp, &b))
		return false;
	*out = (struct dacce_jump_table){
		.table = relative ? table : (uintptr_t)jmp->ops[0].mem.disp.value,
		.entries = b.entries,
		.entry_size = relative ? 4 : 8,
		.guard = w[0].addr,
	};
	return true;
}

bool dacce_jump_table_match(const ZydisDecoder *decoder, const uint8_t *code, uintptr_t addr,
			    uintptr_t end, const uintptr_t *starts, size_t n,
			    struct dacce_jump_table *out)
{
	struct insn w[DACCE_JUMP_TABLE_WINDOW];

	if (!decoder || !code || !starts || !out || n < 3)
		return false;
	/* The shortest window first: a longer one only adds a copy before the compare. */
	for (size_t len = 3; len <= DACCE_JUMP_TABLE_WINDOW && len <= n; len++) {
		const uintptr_t *from = starts + (n - len);
		bool ok = true;

		for (size_t i = 0; i < len && ok; i++) {
			w[i].addr = from[i];
			ok = from[i] >= addr && from[i] < end &&
			     ZYAN_SUCCESS(ZydisDecoderDecodeFull(decoder, code + (from[i] - addr),
								  end - from[i], &w[i].d, w[i].ops));
		}
		if (!ok || w[len - 1].d.mnemonic != ZYDIS_MNEMONIC_JMP)
			return false;
		if (match_window(w, len, out))
			return true;
	}
	return false;
}

/* Reads len bytes at addr of this process, failing (EFAULT) rather than faulting on a hole. */
static int read_self(uintptr_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)addr, .iov_len = len };
	ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == len ? 0 : -EFAULT;
}

int dacce_jump_table_stays_in(const struct dacce_jump_table *jt, uintptr_t lo, uintptr_t hi)
{
	size_t len;
	uint8_t *entries;
	int err, inside = 1;

	if (!jt || !jt->entries || jt->entries > DACCE_JUMP_TABLE_MAX_ENTRIES ||
	    (jt->entry_size != 4 && jt->entry_size != 8))
		return -EINVAL;
	len = (size_t)jt->entries * jt->entry_size;
	entries = malloc(len);
	if (!entries)
		return -ENOMEM;
	err = read_self(jt->table, entries, len);
	for (uint32_t i = 0; !err && inside && i < jt->entries; i++) {
		uintptr_t target;

		if (jt->entry_size == 4) {
			int32_t offset;

			memcpy(&offset, entries + 4 * (size_t)i, sizeof(offset));
			target = jt->table + (uintptr_t)(intptr_t)offset;
		} else {
			memcpy(&target, entries + 8 * (size_t)i, sizeof(target));
		}
		inside = target >= lo && target < hi;
	}
	free(entries);
	return err ? err : inside;
}
