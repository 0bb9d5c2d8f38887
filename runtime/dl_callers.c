// SPDX-License-Identifier: MIT
#include "dl_callers.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dacce_events.h"
#include "dynsym.h"
#include "entry_notes.h"
#include "patch.h"
#include "returns.h"
#include "rt.h"
#include "rt_state.h"
#include "thread_registry.h"
#include "tls.h"

#define NO_STAND_IN 1 /* a module with no padding to spare */
#define NEAR_CALLER (64 * 1024) /* padding looked for around the call site first */

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
 * Two bytes past the end of m's executable segments, in the last page they
 * map: nothing runs there, and the loader counts them as m's.  0 when a
 * segment ends on a page boundary.
 */
static uintptr_t page_tail(const struct rt_module *m)
{
	long page = sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < m->info->n_exec; i++) {
		uintptr_t end = m->info->exec[i].end;

		if (page > 0 && (end & (uintptr_t)(page - 1)) &&
		    (uintptr_t)page - (end & (uintptr_t)(page - 1)) >= 2)
			return end;
	}
	return 0;
}

/*
 * The `ret` byte for calls from m (dl_callers.h), written on first use; 0
 * when m has no room.  It is the second of two bytes nothing runs: padding
 * between functions, else the rest of the last page of its code.  A stack
 * walker then meets it as a return address whose previous byte is no
 * instruction either (the validator steps over it, told by the note).
 */
static uintptr_t stand_in_of(struct rt_module *m, uintptr_t near)
{
	static const uint8_t ret = 0xc3;
	uintptr_t at;

	if (m->stand_in_return == NO_STAND_IN)
		return 0;
	if (m->stand_in_return)
		return m->stand_in_return;
	at = dacce_padding_take(&m->padding, near - NEAR_CALLER, near + NEAR_CALLER, 2);
	if (!at)
		at = dacce_padding_take(&m->padding, m->info->start, m->info->end, 2);
	if (!at)
		at = page_tail(m);
	/* Nothing runs there: the byte is written, then made visible before anything returns to it. */
	if (at && dacce_patch_write_quiet(at + 1, &ret, 1) == 0) {
		dacce_patch_sync_cores();
		m->stand_in_return = at + 1;
		dacce_entry_note(at + 1, DACCE_CODE_STAND_IN, 0);
		return at + 1;
	}
	m->stand_in_return = NO_STAND_IN;
	dacce_rt_log(true, "%s has no room for a return byte: dlopen and dlsym called from its "
		     "patched sites see the program as their caller", m->info->path);
	return 0;
}

/*
 * Whether glibc would do otherwise for this call with the caller it cannot
 * find, for which it takes the program (see dl_callers.h).
 */
static bool caller_matters(unsigned function, uintptr_t arg0, bool from_program)
{
	switch (function) {
	case DACCE_DL_SYM:
	case DACCE_DL_VSYM:
		return arg0 == (uintptr_t)RTLD_NEXT || (arg0 == (uintptr_t)RTLD_DEFAULT && !from_program);
	default:
		return !from_program;
	}
}

/*
 * A `ret` in the module the call whose return address is at slot returns
 * to natively, when its caller matters; else 0.
 */
static uintptr_t stand_in_for(unsigned function, const uintptr_t *slot, uintptr_t arg0)
{
	struct rt_module *m;
	uintptr_t native, at = 0;
	sigset_t saved;

	rt_lock(&saved);
	if (rt_return_native(dacce_tls_self(), *slot, (uintptr_t)slot, &native) == 1 &&
	    (m = rt_module_at(native)) && caller_matters(function, arg0, m->info->is_main))
		at = stand_in_of(m, native);
	rt_unlock(&saved);
	return at;
}

/* Instruments what was loaded since the last look, and forgets what was unloaded (rt.h). */
static void refresh_modules(void)
{
	int err, saved_errno = errno;
	sigset_t saved;

	/* Unlocked first (a race only sends us to look under the lock): most calls load nothing. */
	if (!dacce_modules_changed(&rt.modules))
		return;
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

uintptr_t dacce_dl_route(unsigned function, const uintptr_t *ret_slot, void **real_fn,
			 uintptr_t arg0)
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
	return stand_in_for(function, ret_slot, arg0);
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
