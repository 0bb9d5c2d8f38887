// SPDX-License-Identifier: MIT
#include "padding.h"

#include <stdbool.h>
#include <string.h>

#include <Zydis/Zydis.h>

#define GAP_UNUSABLE UINT32_MAX
#define GAP_MAX 256 /* longer gaps are not alignment padding */

void dacce_padding_init(struct dacce_padding *p, const struct dacce_funcs *funcs)
{
	memset(p, 0, sizeof(*p));
	p->funcs = funcs;
	dacce_hashmap_init(&p->gaps);
}

void dacce_padding_fini(struct dacce_padding *p)
{
	if (!p)
		return;
	dacce_hashmap_fini(&p->gaps);
}

/* Whether [start, end) holds nothing but nop and int3 instructions, the last ending at end. */
static bool only_padding(uintptr_t start, uintptr_t end)
{
	ZydisDecoder decoder;
	uintptr_t pc = start;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		return false;
	while (pc < end) {
		ZydisDecoderContext ctx;
		ZydisDecodedInstruction insn;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &ctx, (const void *)pc,
								end - pc, &insn)))
			return false;
		if (insn.mnemonic != ZYDIS_MNEMONIC_NOP && insn.mnemonic != ZYDIS_MNEMONIC_INT3)
			return false;
		pc += insn.length;
	}
	return pc == end;
}

/* Bytes already handed out of the gap [start, end), checking it on first use; GAP_UNUSABLE if not padding. */
static uint32_t gap_used(struct dacce_padding *p, const struct dacce_func *before, uintptr_t start,
			 uintptr_t end)
{
	uint32_t used;

	if (dacce_hashmap_get(&p->gaps, start, &used) == 0)
		return used;
	used = 0;
	if (end - start > GAP_MAX || (before->flags & DACCE_FUNC_END_GUESSED) ||
	    dacce_funcs_in_plt(p->funcs, start) || !only_padding(start, end))
		used = GAP_UNUSABLE;
	/* Remembered before anything is written into it: a used gap no longer looks like padding. */
	if (dacce_hashmap_put(&p->gaps, start, used))
		return GAP_UNUSABLE;
	return used;
}

/* Index of the first function ending after addr. */
static size_t first_ending_after(const struct dacce_funcs *funcs, uintptr_t addr)
{
	size_t lo = 0, hi = funcs->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (funcs->funcs[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uintptr_t dacce_padding_take(struct dacce_padding *p, uintptr_t lo, uintptr_t hi, size_t len)
{
	const struct dacce_funcs *funcs = p->funcs;
	size_t i = first_ending_after(funcs, lo > GAP_MAX ? lo - GAP_MAX : 0);

	for (; i + 1 < funcs->n && funcs->funcs[i].end <= hi; i++) {
		uintptr_t start = funcs->funcs[i].end, end = funcs->funcs[i + 1].start, at;
		uint32_t used;

		if (end <= start || end - start < len || end <= lo)
			continue;
		used = gap_used(p, &funcs->funcs[i], start, end);
		if (used == GAP_UNUSABLE)
			continue;
		at = start + used;
		if (at < lo)
			at = lo; /* the bytes skipped stay padding: nothing runs there */
		if (at > hi || at + len > end)
			continue;
		if (dacce_hashmap_put(&p->gaps, start, (uint32_t)(at + len - start)))
			return 0;
		return at;
	}
	return 0;
}
