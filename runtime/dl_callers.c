// SPDX-License-Identifier: MIT
#include "dl_callers.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include "dynsym.h"
#include "patch.h"
#include "returns.h"
#include "rt.h"
#include "rt_state.h"
#include "threads.h"
#include "tls.h"

#define NO_STAND_IN 1 /* a module with no padding to spare */
#define NEAR_CALLER (64 * 1024) /* padding looked for around the call site first */
#define FINI_MAX 64 /* bytes of _fini looked through for its `ret` */

static const char *const names[DACCE_DL_FUNCTIONS] = {
	[DACCE_DL_OPEN] = "dlopen",
	[DACCE_DL_MOPEN] = "dlmopen",
	[DACCE_DL_SYM] = "dlsym",
	[DACCE_DL_VSYM] = "dlvsym",
};

static void *real[DACCE_DL_FUNCTIONS];

/*
 * The definitions the loader would bind after libdacce.so's, found without
 * dlsym (which is ours).  Idempotent: threads racing here store the same.
 */
static void find_real(void)
{
	for (unsigned i = 0; i < DACCE_DL_FUNCTIONS; i++) {
		void *fn = (void *)dacce_dynsym_next((uintptr_t)&find_real, names[i]);

		if (!fn) {
			/* Nothing sensible to run: dlsym is how the runtime itself starts. */
			static const char msg[] = "libdacce: the C library's dynamic-linking "
						  "functions were not found\n";

			(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
			abort();
		}
		__atomic_store_n(&real[i], fn, __ATOMIC_RELEASE);
	}
}

/*
 * The `ret` of m's _fini (DT_FINI), which has no call site: nothing ever
 * patches it (only a function's first byte is, and scan.c never borrows a
 * `ret` for a short site).  0 when there is none.
 */
static uintptr_t fini_ret(const struct rt_module *m)
{
	uintptr_t fini = dacce_dynamic_address(m->info->start, DT_FINI);
	const struct dacce_func *fn = fini ? dacce_funcs_find(&m->funcs, fini) : NULL;
	uint8_t code[FINI_MAX];
	size_t len, at = 0;
	ZydisDecoder decoder;

	if (!fn || fn->start != fini || rt_module_at(fini) != m ||
	    !ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		return 0;
	len = m->info->end - fini < FINI_MAX ? m->info->end - fini : FINI_MAX;
	memcpy(code, (const void *)fini, len);
	dacce_entries_original(&m->entries, fn, &code[0]); /* its entry may still be watched */
	while (at < len) {
		ZydisDecoderContext ctx;
		ZydisDecodedInstruction insn;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &ctx, code + at, len - at,
								&insn)))
			return 0;
		at += insn.length;
		if (insn.mnemonic == ZYDIS_MNEMONIC_RET && at > insn.length && code[at - 1] == 0xc3)
			return fini + at - 1; /* `rep ret` too: its last byte alone is a ret */
		if (insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		    insn.meta.category == ZYDIS_CATEGORY_RET)
			return 0;
	}
	return 0;
}

/* A `ret` byte in m's code nothing patches, written into its padding on first use; 0 when none. */
static uintptr_t stand_in_of(struct rt_module *m, uintptr_t near)
{
	static const uint8_t ret = 0xc3;
	uintptr_t at;

	if (m->stand_in_return == NO_STAND_IN)
		return 0;
	if (m->stand_in_return)
		return m->stand_in_return;
	at = dacce_padding_take(&m->padding, near - NEAR_CALLER, near + NEAR_CALLER, 1);
	if (!at)
		at = dacce_padding_take(&m->padding, m->info->start, m->info->end, 1);
	/* Nothing runs in padding: the byte is written, then made visible before anything returns there. */
	if (at && dacce_patch_write_quiet(at, &ret, 1) == 0) {
		dacce_patch_sync_cores();
		m->stand_in_return = at;
		return at;
	}
	at = fini_ret(m);
	if (at) {
		m->stand_in_return = at;
		return at;
	}
	m->stand_in_return = NO_STAND_IN;
	dacce_rt_log(true, "%s has no padding to spare and no _fini: dlopen and dlsym called from its patched "
		     "sites see the program as their caller", m->info->path);
	return 0;
}

/* Where the call whose return address is at slot returns natively, in an instrumented module. */
static uintptr_t stand_in_for(const uintptr_t *slot)
{
	struct rt_module *m;
	uintptr_t native, at = 0;
	sigset_t saved;

	rt_lock(&saved);
	if (rt_return_native(dacce_tls_self(), *slot, (uintptr_t)slot, &native) == 1 &&
	    (m = rt_module_at(native)))
		at = stand_in_of(m, native);
	rt_unlock(&saved);
	return at;
}

/* Instruments what was loaded since the last look, and forgets what was unloaded (rt.h). */
static void refresh_modules(void)
{
	int err, saved_errno = errno;
	sigset_t saved;

	rt_lock(&saved);
	err = rt_modules_refresh();
	rt_unlock(&saved);
	if (err)
		dacce_rt_log(true, "looking at the libraries loaded: %s", strerror(-err));
	errno = saved_errno;
}

/* Whether the code at addr is the runtime's own (its calls to the loader pass straight through). */
static bool in_runtime_module(uintptr_t addr)
{
	static uintptr_t own_start;
	struct dl_find_object found;

	if (!own_start && _dl_find_object((void *)&in_runtime_module, &found) == 0)
		own_start = (uintptr_t)found.dlfo_map_start;
	return _dl_find_object((void *)addr, &found) == 0 &&
	       (uintptr_t)found.dlfo_map_start == own_start;
}

uintptr_t dacce_dl_route(unsigned function, const uintptr_t *ret_slot, void **real_fn)
{
	struct dl_find_object found;

	if (!__atomic_load_n(&real[function], __ATOMIC_ACQUIRE))
		find_real();
	*real_fn = real[function];
	/*
	 * The runtime's own calls (some with rt.lock held), and calls made
	 * inside its work (a malloc of the program's calling dlsym), go
	 * straight on.
	 */
	if (!dacce_rt_enabled() || dacce_thread_self()->in_runtime > 0 ||
	    in_runtime_module(*ret_slot))
		return 0;
	/* Before a lookup hands out a function of a library loaded since the last look. */
	refresh_modules();
	/* Lock-free: every call from a module's own code ends here. */
	if (_dl_find_object((void *)*ret_slot, &found) == 0)
		return 0;
	return stand_in_for(ret_slot);
}

/*
 * dlclose: the modules it unmaps are forgotten before anything is loaded
 * in their place, and no epoch writes code while it runs.
 */
__attribute__((visibility("default"))) int dlclose(void *handle)
{
	static int (*real_dlclose)(void *);
	int ret, err, saved_errno;
	sigset_t saved;

	if (!__atomic_load_n(&real_dlclose, __ATOMIC_ACQUIRE))
		__atomic_store_n(&real_dlclose,
				 (int (*)(void *))dacce_dynsym_next((uintptr_t)&find_real, "dlclose"),
				 __ATOMIC_RELEASE);
	if (!real_dlclose)
		return -1;
	if (!dacce_rt_enabled() || dacce_thread_self()->in_runtime > 0 ||
	    in_runtime_module((uintptr_t)__builtin_return_address(0)))
		return real_dlclose(handle);
	rt_lock(&saved);
	rt.loader_busy++;
	rt_unlock(&saved);
	ret = real_dlclose(handle);
	saved_errno = errno;
	rt_lock(&saved);
	err = rt_modules_refresh(); /* still busy: no epoch in between */
	rt.loader_busy--;
	rt_unlock(&saved);
	if (err)
		dacce_rt_log(true, "looking at the libraries loaded: %s", strerror(-err));
	errno = saved_errno;
	return ret;
}
