// SPDX-License-Identifier: MIT
#include "reload.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define REX_R 0x04
#define REX_W 0x08

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
		return true;
	default:
		return false;
	}
}

int dacce_reload_from_call(const uint8_t *insn, size_t len, uint8_t *out, size_t *out_len)
{
	size_t i = 0, n = 0;
	uint8_t rex = 0x40, modrm;

	if (!insn || !out || !out_len || len < 2 || len > DACCE_RELOAD_MAX - 1)
		return -EINVAL;
	/* notrack (3e) and bnd (f2) only matter to the call itself: dropped.  Others: not ours. */
	for (; i < len && is_legacy_prefix(insn[i]); i++)
		if (insn[i] != 0x3e && insn[i] != 0xf2)
			return -ENOTSUP;
	if (i < len && (insn[i] & 0xf0) == 0x40)
		rex = insn[i++];
	if (i + 2 > len || insn[i] != 0xff)
		return -ENOTSUP;
	modrm = insn[i + 1];
	if (((modrm >> 3) & 7) != 2 && ((modrm >> 3) & 7) != 4)
		return -ENOTSUP; /* neither call r/m64 nor jmp r/m64 */
	if ((modrm >> 6) == 0 && (modrm & 7) == 5)
		return -ENOTSUP; /* RIP-relative */
	/* mov r/m64, %r11 (a register operand too): REX.W and REX.R set, X and B kept; reg field 3. */
	out[n++] = (uint8_t)(0x40 | REX_W | REX_R | (rex & 0x03));
	out[n++] = 0x8b;
	out[n++] = (uint8_t)((modrm & 0xc7) | (3 << 3));
	memcpy(out + n, insn + i + 2, len - i - 2);
	n += len - i - 2;
	*out_len = n;
	return 0;
}

bool dacce_branch_addresses_stack(const uint8_t *insn, size_t len)
{
	size_t i = 0;
	uint8_t rex = 0, modrm;

	while (i < len && is_legacy_prefix(insn[i]))
		i++;
	if (i < len && (insn[i] & 0xf0) == 0x40)
		rex = insn[i++];
	if (i + 2 > len || insn[i] != 0xff)
		return false;
	modrm = insn[i + 1];
	if ((modrm >> 6) == 3 || (modrm & 7) != 4 || i + 3 > len)
		return false; /* a register, or no SIB byte */
	/* The SIB byte's base is %rsp (4 without REX.B; with mod 0 and base 5 there is no base). */
	return (insn[i + 2] & 7) == 4 && !(rex & 0x01);
}
