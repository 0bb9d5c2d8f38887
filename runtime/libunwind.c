// SPDX-License-Identifier: MIT
/*
 * libunwind (libunwind.so.8) walking a program's own stack, interposed as
 * backtrace.c interposes glibc's and libgcc's walks.  A frame entered
 * through a trampoline returns into generated code, where libunwind finds
 * no unwind information: natively it would guess from %rbp and go astray,
 * or stop.
 *
 *   - unw_backtrace: the stack is shown native for the walk (exceptions.h)
 *     and put back after it; the runtime's own frames are left out.
 *   - unw_step (_ULx86_64_step, as UNW_LOCAL_ONLY names it): after a step
 *     that reads a return address into generated code (a trampoline's
 *     return point, the tail stub), the cursor gets the original return
 *     address instead, so that the program reads the native frame and the
 *     next step finds the caller's unwind information.  libunwind caches a
 *     frame's IP in the cursor, but its only way to set it also writes the
 *     return-address slot: the slot gets its value back at once, before the
 *     runtime's lock (which keeps epochs and signals out) is let go.  Frames
 *     in libdacce.so (the wrappers under main, thread start routines and
 *     handlers) are stepped over.
 *   - unw_init_local, unw_init_local2: the context's own IP is generated
 *     code's too (unw_getcontext was called through a trampoline, and saved
 *     its return address): the cursor starts at the original one, the
 *     program's context keeps what it holds (unw_resume returns through
 *     the trampoline).
 *
 * libunwind is looked up, never linked: most programs do not load it.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "exceptions.h"
#include "returns.h"
#include "rt.h"
#include "rt_state.h"
#include "thread_registry.h"
#include "tls.h"

static struct {
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*set_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t);
	int (*get_save_loc)(unw_cursor_t *, int, unw_save_loc_t *);
	int (*backtrace)(void **, int);
	void *self_base; /* libdacce.so's load address */
} real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void find_real(void)
{
	Dl_info self;

	*(void **)&real.init_local = dlsym(RTLD_NEXT, "_ULx86_64_init_local");
	*(void **)&real.init_local2 = dlsym(RTLD_NEXT, "_ULx86_64_init_local2");
	*(void **)&real.step = dlsym(RTLD_NEXT, "_ULx86_64_step");
	*(void **)&real.get_reg = dlsym(RTLD_NEXT, "_ULx86_64_get_reg");
	*(void **)&real.set_reg = dlsym(RTLD_NEXT, "_ULx86_64_set_reg");
	*(void **)&real.get_save_loc = dlsym(RTLD_NEXT, "_ULx86_64_get_save_loc");
	*(void **)&real.backtrace = dlsym(RTLD_NEXT, "unw_backtrace");
	if (dladdr((void *)find_real, &self))
		real.self_base = self.dli_fbase;
}

static bool in_runtime(uintptr_t ip)
{
	Dl_info info;

	return real.self_base && dladdr((void *)ip, &info) && info.dli_fbase == real.self_base;
}

/*
 * The cursor's IP, made the original return address when it is generated
 * code's: the value a native walk reads there.
 */
static unw_word_t show_native_ip(unw_cursor_t *cursor, unw_word_t ip)
{
	unw_save_loc_t loc;
	uintptr_t native;
	sigset_t saved;
	int found;

	if (!real.get_save_loc || !real.set_reg ||
	    real.get_save_loc(cursor, UNW_REG_IP, &loc) < 0 || loc.type != UNW_SLT_MEMORY)
		return ip;
	rt_lock(&saved);
	found = rt_return_native(dacce_tls_self(), ip, loc.u.addr, &native);
	if (found == 1 && real.set_reg(cursor, UNW_REG_IP, native) == 0)
		*(volatile unw_word_t *)loc.u.addr = ip; /* set_reg wrote the slot too */
	else
		found = 0;
	rt_unlock(&saved);
	return found == 1 ? native : ip;
}

/*
 * Whether a walk is the program's: the runtime's own (through a libunwind
 * that provides _Unwind_Backtrace) stay as they are.
 */
static bool program_walk(void)
{
	pthread_once(&real_once, find_real);
	return real.get_reg && dacce_rt_enabled() && !dacce_thread_self()->in_runtime;
}

/* A cursor just made: its IP as native. */
static int started(unw_cursor_t *cursor, int ret)
{
	unw_word_t ip;

	if (ret == 0 && program_walk() && real.get_reg(cursor, UNW_REG_IP, &ip) == 0)
		show_native_ip(cursor, ip);
	return ret;
}

__attribute__((visibility("default"))) int _ULx86_64_init_local(unw_cursor_t *cursor,
								unw_context_t *uc)
{
	pthread_once(&real_once, find_real);
	return real.init_local ? started(cursor, real.init_local(cursor, uc)) : -UNW_EUNSPEC;
}

__attribute__((visibility("default"))) int _ULx86_64_init_local2(unw_cursor_t *cursor,
								 unw_context_t *uc, int flag)
{
	pthread_once(&real_once, find_real);
	return real.init_local2 ? started(cursor, real.init_local2(cursor, uc, flag))
				: -UNW_EUNSPEC;
}

/* More than the runtime ever puts between two program frames: broken unwind information. */
#define MAX_RUNTIME_FRAMES 8

__attribute__((visibility("default"))) int _ULx86_64_step(unw_cursor_t *cursor)
{
	int ret;

	pthread_once(&real_once, find_real);
	if (!real.step)
		return -UNW_EUNSPEC;
	if (!program_walk())
		return real.step(cursor);
	for (int skipped = 0;; skipped++) {
		unw_word_t ip;

		ret = real.step(cursor);
		if (ret <= 0 || real.get_reg(cursor, UNW_REG_IP, &ip) < 0)
			return ret;
		ip = show_native_ip(cursor, ip);
		if (!in_runtime(ip) || skipped == MAX_RUNTIME_FRAMES)
			return ret;
	}
}

/* Room for the frames the runtime adds (this function's own, the wrapper under main). */
#define RUNTIME_EXTRA_FRAMES 8
#define ON_STACK_FRAMES 512

__attribute__((visibility("default"), noinline)) int unw_backtrace(void **buffer, int size)
{
	void *on_stack[ON_STACK_FRAMES], **all = on_stack;
	const char key = 0; /* this call's own: a handler's walk may run inside another */
	int n, kept = 0;

	pthread_once(&real_once, find_real);
	if (!real.backtrace || size <= 0)
		return 0;
	if (size > ON_STACK_FRAMES - RUNTIME_EXTRA_FRAMES) {
		all = malloc(((size_t)size + RUNTIME_EXTRA_FRAMES) * sizeof(*all));
		if (!all)
			return 0;
	}
	dacce_unwind_show_native(&key);
	n = real.backtrace(all, size + RUNTIME_EXTRA_FRAMES);
	dacce_unwind_put_back(&key);
	for (int i = 0; i < n && kept < size; i++)
		if (!in_runtime((uintptr_t)all[i]))
			buffer[kept++] = all[i];
	if (all != on_stack)
		free(all);
	return kept;
}
