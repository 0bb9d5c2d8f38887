// SPDX-License-Identifier: MIT
#include "tramp.h"

#include <errno.h>

/* Slack for the instructions between the start and the call. */
#define REACH_SLACK 256

int dacce_tramp_build_call(struct x86_buf *b, int32_t tpoff, const struct dacce_rt_op *op,
			   uintptr_t target, uintptr_t return_to, uintptr_t *entry,
			   uintptr_t *after_call)
{
	uintptr_t slot = 0;

	if (!x86_rel32_reaches(b->addr + b->len + REACH_SLACK, target))
		slot = x86_literal64(b, target);
	*entry = b->addr + b->len;
	dacce_emit_call_hit(b, op);
	dacce_emit_before(b, tpoff, op);
	if (slot)
		x86_call_rip_slot(b, slot);
	else
		x86_call(b, target);
	*after_call = b->addr + b->len;
	dacce_emit_after(b, tpoff, op);
	x86_jmp(b, return_to);
	return b->overflow ? -ENOSPC : 0;
}

int dacce_tramp_jmp_bytes(uintptr_t site, uintptr_t dest, uint8_t out[5])
{
	int32_t rel;

	if (!x86_rel32_reaches(site + 5, dest))
		return -ERANGE;
	rel = (int32_t)(dest - (site + 5));
	out[0] = 0xe9;
	for (int i = 0; i < 4; i++)
		out[1 + i] = (uint8_t)((uint32_t)rel >> (8 * i));
	return 0;
}
