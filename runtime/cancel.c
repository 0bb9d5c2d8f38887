// SPDX-License-Identifier: MIT
#include <Zydis/Zydis.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "codecache.h"
#include "exceptions.h"
#include "patch.h"
#include "rt.h"
#include "rt_state.h"
#include "thread_registry.h"
#include "x86.h"
#include "cancel.h"

void dacce_forced_unwind_hook(void);
void dacce_before_forced_unwind(void);

/* Where the hook goes on: the relocated instructions, then a jump back. */
__attribute__((visibility("hidden"))) uintptr_t dacce_forced_unwind_rest;

static bool tried; /* installed, or given up on: one try */

/* On the thread being unwound, before libgcc looks at its first frame (cancel_hook.S). */
__attribute__((visibility("hidden"))) void dacce_before_forced_unwind(void)
{
	if (!dacce_rt_enabled())
		return;
	dacce_rt_thread_outside();
	dacce_unwind_show_native(DACCE_UNWIND_EXIT);
}

/* Bytes of whole instructions at code, at least 5 and none PC-relative; 0 when they do not fit. */
static size_t relocatable_prefix(const uint8_t *code)
{
	ZydisDecoder decoder;
	size_t len = 0;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		return 0;
	while (len < 5) {
		ZydisDecoderContext ctx;
		ZydisDecodedInstruction insn;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &ctx, code + len,
								ZYDIS_MAX_INSTRUCTION_LENGTH, &insn)) ||
		    (insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE) ||
		    insn.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE)
			return 0;
		len += insn.length;
	}
	return len;
}

/*
 * Code near at: a jump to the hook, then the covered instructions and a
 * jump back to at + covered (both within rel32 reach of at).
 */
static int build_detour(uintptr_t at, size_t covered, uintptr_t *entry)
{
	const size_t room = 64;
	struct x86_buf b;
	uintptr_t start;
	uint8_t *write;
	int err = dacce_codecache_alloc(&rt.cache, at, at + covered, room, 16, &start, &write);

	if (err)
		return err;
	x86_init(&b, write, room, start);
	x86_jmp_abs_indirect(&b, (uintptr_t)dacce_forced_unwind_hook);
	dacce_forced_unwind_rest = b.addr + b.len;
	memcpy(write + b.len, (const void *)at, covered);
	b.len += covered;
	x86_jmp(&b, at + covered);
	if (b.overflow)
		return -ENOSPC;
	*entry = start;
	return 0;
}

static int install(bool load)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t patch[ZYDIS_MAX_INSTRUCTION_LENGTH + 5];
	uintptr_t fn, at, entry;
	size_t covered;
	void *libgcc;
	int32_t rel;
	int err;

	if (tried)
		return -EALREADY;
	if (dacce_threads_in_process() != 1)
		return -EAGAIN;
	/* Never closed: glibc finds the same library by the same name. */
	libgcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL | (load ? 0 : RTLD_NOLOAD));
	fn = libgcc ? (uintptr_t)dlsym(libgcc, "_Unwind_ForcedUnwind") : 0;
	if (!fn)
		return -ENOENT;
	tried = true;
	/* An indirect call lands on endbr64: it stays first. */
	at = memcmp((const void *)fn, endbr64, sizeof(endbr64)) == 0 ? fn + 4 : fn;
	covered = relocatable_prefix((const uint8_t *)at);
	if (!covered)
		return -ENOTSUP;
	err = build_detour(at, covered, &entry);
	if (err)
		return err;
	if (!x86_rel32_reaches(at + 5, entry))
		return -ERANGE;
	rel = (int32_t)(entry - (at + 5));
	patch[0] = 0xe9;
	memcpy(patch + 1, &rel, sizeof(rel));
	memset(patch + 5, 0xcc, covered - 5);
	err = dacce_patch_write_quiet(at, patch, covered);
	if (err)
		return err;
	dacce_patch_sync_cores();
	return 0;
}

void dacce_cancel_hook_install(bool load)
{
	int err = install(load);

	if (err && err != -EALREADY && err != -EAGAIN && err != -ENOENT)
		dacce_rt_log(false, "cancelled threads skip the destructors of patched frames: %s",
			     strerror(-err));
}
