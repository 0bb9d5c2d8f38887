// SPDX-License-Identifier: MIT
#include "emulate.h"

#include <Zydis/Zydis.h>
#include <errno.h>
#include <string.h>

#define EFL_CF (1u << 0)
#define EFL_PF (1u << 2)
#define EFL_ZF (1u << 6)
#define EFL_SF (1u << 7)
#define EFL_OF (1u << 11)

/* The 64-bit general registers as the kernel saved them. */
static bool gpr_value(const mcontext_t *regs, ZydisRegister reg, uint64_t *value)
{
	static const struct {
		ZydisRegister reg;
		int index;
	} map[] = {
		{ ZYDIS_REGISTER_RAX, REG_RAX }, { ZYDIS_REGISTER_RBX, REG_RBX },
		{ ZYDIS_REGISTER_RCX, REG_RCX }, { ZYDIS_REGISTER_RDX, REG_RDX },
		{ ZYDIS_REGISTER_RSI, REG_RSI }, { ZYDIS_REGISTER_RDI, REG_RDI },
		{ ZYDIS_REGISTER_RBP, REG_RBP }, { ZYDIS_REGISTER_RSP, REG_RSP },
		{ ZYDIS_REGISTER_R8, REG_R8 },	 { ZYDIS_REGISTER_R9, REG_R9 },
		{ ZYDIS_REGISTER_R10, REG_R10 }, { ZYDIS_REGISTER_R11, REG_R11 },
		{ ZYDIS_REGISTER_R12, REG_R12 }, { ZYDIS_REGISTER_R13, REG_R13 },
		{ ZYDIS_REGISTER_R14, REG_R14 }, { ZYDIS_REGISTER_R15, REG_R15 },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (map[i].reg == reg) {
			*value = (uint64_t)regs->gregs[map[i].index];
			return true;
		}
	}
	return false;
}

/* Effective address of a memory operand (no segment override but none/ds/ss). */
static int memory_address(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *op,
			  uintptr_t addr, const mcontext_t *regs, uint64_t *ea)
{
	uint64_t base = 0, index = 0;

	if (op->mem.segment != ZYDIS_REGISTER_NONE && op->mem.segment != ZYDIS_REGISTER_DS &&
	    op->mem.segment != ZYDIS_REGISTER_SS && op->mem.segment != ZYDIS_REGISTER_CS &&
	    op->mem.segment != ZYDIS_REGISTER_ES)
		return -ENOTSUP;
	if (op->mem.base == ZYDIS_REGISTER_RIP)
		base = addr + insn->length;
	else if (op->mem.base != ZYDIS_REGISTER_NONE && !gpr_value(regs, op->mem.base, &base))
		return -ENOTSUP;
	if (op->mem.index != ZYDIS_REGISTER_NONE && !gpr_value(regs, op->mem.index, &index))
		return -ENOTSUP;
	*ea = base + index * (op->mem.scale ? op->mem.scale : 1) + (uint64_t)op->mem.disp.value;
	return 0;
}

static int condition_holds(ZydisMnemonic m, uint64_t efl, bool *taken)
{
	bool cf = efl & EFL_CF, pf = efl & EFL_PF, zf = efl & EFL_ZF;
	bool sf = efl & EFL_SF, of = efl & EFL_OF;

	switch (m) {
	case ZYDIS_MNEMONIC_JO: *taken = of; break;
	case ZYDIS_MNEMONIC_JNO: *taken = !of; break;
	case ZYDIS_MNEMONIC_JB: *taken = cf; break;
	case ZYDIS_MNEMONIC_JNB: *taken = !cf; break;
	case ZYDIS_MNEMONIC_JZ: *taken = zf; break;
	case ZYDIS_MNEMONIC_JNZ: *taken = !zf; break;
	case ZYDIS_MNEMONIC_JBE: *taken = cf || zf; break;
	case ZYDIS_MNEMONIC_JNBE: *taken = !cf && !zf; break;
	case ZYDIS_MNEMONIC_JS: *taken = sf; break;
	case ZYDIS_MNEMONIC_JNS: *taken = !sf; break;
	case ZYDIS_MNEMONIC_JP: *taken = pf; break;
	case ZYDIS_MNEMONIC_JNP: *taken = !pf; break;
	case ZYDIS_MNEMONIC_JL: *taken = sf != of; break;
	case ZYDIS_MNEMONIC_JNL: *taken = sf == of; break;
	case ZYDIS_MNEMONIC_JLE: *taken = zf || sf != of; break;
	case ZYDIS_MNEMONIC_JNLE: *taken = !zf && sf == of; break;
	default: return -ENOTSUP;
	}
	return 0;
}

int dacce_emulate_branch(const uint8_t *code, size_t len, uintptr_t addr,
			 const mcontext_t *regs, struct dacce_branch *out)
{
	ZydisDecoder decoder;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	const ZydisDecodedOperand *target;
	uint64_t value = 0;
	int err;

	if (!code || !regs || !out)
		return -EINVAL;
	ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code, len, &insn, ops)))
		return -EILSEQ;
	memset(out, 0, sizeof(*out));
	out->len = insn.length;
	out->taken = true;
	if (insn.meta.category == ZYDIS_CATEGORY_CALL)
		out->is_call = true;
	else if (insn.meta.category != ZYDIS_CATEGORY_UNCOND_BR &&
		 insn.meta.category != ZYDIS_CATEGORY_COND_BR)
		return -EILSEQ;
	if (insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
		return -ENOTSUP;
	target = &ops[0];
	switch (target->type) {
	case ZYDIS_OPERAND_TYPE_IMMEDIATE:
		if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, target, addr, &value)))
			return -EILSEQ;
		break;
	case ZYDIS_OPERAND_TYPE_REGISTER:
		if (!gpr_value(regs, target->reg.value, &value))
			return -ENOTSUP;
		break;
	case ZYDIS_OPERAND_TYPE_MEMORY:
		err = memory_address(&insn, target, addr, regs, &value);
		if (err)
			return err;
		value = *(const volatile uint64_t *)(uintptr_t)value;
		break;
	default:
		return -EILSEQ;
	}
	out->target = (uintptr_t)value;
	if (insn.meta.category == ZYDIS_CATEGORY_COND_BR)
		return condition_holds(insn.mnemonic, (uint64_t)regs->gregs[REG_EFL], &out->taken);
	return 0;
}
