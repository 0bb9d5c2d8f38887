// SPDX-License-Identifier: MIT
#include "lookup.h"

#include <errno.h>
#include <stdlib.h>

#define HOME_SLOTS (1u << DACCE_LOOKUP_BITS)
#define ENTRIES (2 * HOME_SLOTS + 1)
/* Odd, and fits a sign-extended imm32: the generated code multiplies by it. */
#define MULTIPLIER 0x45d9f3b

static uint32_t home_of(uint64_t target)
{
	return (uint32_t)((target * (uint64_t)MULTIPLIER) >> (64 - DACCE_LOOKUP_BITS));
}

struct dacce_lookup_entry *dacce_lookup_new(void)
{
	return calloc(ENTRIES, sizeof(struct dacce_lookup_entry));
}

void dacce_lookup_free(struct dacce_lookup_entry *table)
{
	free(table);
}

int dacce_lookup_set(struct dacce_lookup_entry *table, uint64_t target, uint64_t tramp)
{
	if (!table || !target || !tramp)
		return -EINVAL;
	/* The last entry stays empty: it ends every probe run. */
	for (uint32_t i = home_of(target); i < ENTRIES - 1; i++) {
		uint64_t key = __atomic_load_n(&table[i].target, __ATOMIC_ACQUIRE);

		if (key == target) {
			__atomic_store_n(&table[i].tramp, tramp, __ATOMIC_RELEASE);
			return 0;
		}
		if (key == 0) {
			table[i].tramp = tramp;
			__atomic_store_n(&table[i].target, target, __ATOMIC_RELEASE);
			return 0;
		}
	}
	return -ENOSPC;
}

uint64_t dacce_lookup_get(const struct dacce_lookup_entry *table, uint64_t target)
{
	for (uint32_t i = home_of(target); table && target && i < ENTRIES; i++) {
		if (table[i].target == target)
			return table[i].tramp;
		if (table[i].target == 0)
			break;
	}
	return 0;
}

void dacce_emit_lookup(struct x86_buf *b, const struct dacce_lookup_entry *table, int8_t r11_slot,
		       const struct dacce_lookup_miss *miss, uintptr_t *trap_at)
{
	const int8_t rax_slot = (int8_t)(r11_slot - 8), rcx_slot = (int8_t)(r11_slot - 16);
	const int8_t jump_slot = (int8_t)(r11_slot - 24);
	x86_label hit, empty, probe;

	x86_spill_rax(b, rax_slot);
	x86_spill_rcx(b, rcx_slot);
	/* %rax = &table[home(%r11)] */
	x86_movabs_rax(b, (uintptr_t)table);
	x86_mov_r11_to_rcx(b);
	x86_imul_rcx_imm32(b, MULTIPLIER);
	x86_shr_rcx_imm8(b, 64 - DACCE_LOOKUP_BITS);
	x86_shl_rcx_imm8(b, 4); /* 16-byte entries */
	x86_add_rcx_to_rax(b);
	probe = x86_here(b);
	x86_cmp_r11_with_rax_mem(b);
	hit = x86_jcc_short(b, X86_JE);
	x86_cmpq_zero_at_rax(b);
	empty = x86_jcc_short(b, X86_JE);
	x86_add_rax_imm8(b, 16);
	x86_jmp_short_back(b, probe);

	x86_bind(b, hit);
	x86_load_rax_from_rax(b, 8);
	x86_spill_rax(b, jump_slot);
	x86_reload_rax(b, rax_slot);
	x86_reload_rcx(b, rcx_slot);
	x86_reload_r11(b, r11_slot);
	x86_jmp_rsp_mem(b, jump_slot);

	x86_bind(b, empty);
	x86_reload_rax(b, rax_slot);
	x86_reload_rcx(b, rcx_slot);
	if (miss) {
		/* The program's %r11 stays in its slot, where the entry expects it. */
		*trap_at = 0;
		x86_movabs_r11(b, miss->token);
		x86_jmp_abs_indirect(b, miss->entry);
		return;
	}
	x86_reload_r11(b, r11_slot);
	*trap_at = b->addr + b->len;
	x86_trap(b);
}
