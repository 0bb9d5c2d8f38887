// SPDX-License-Identifier: MIT
/*
 * Non-local jumps (PCCE section 7): setjmp records the thread's context
 * block for its jmp_buf (jumps.S), longjmp puts it back before jumping.
 * getcontext records it for its ucontext alike, for setcontext and
 * swapcontext (coroutines.c) to put back.  The
 * mark is taken inside the setjmp call, so it includes the entry of the call
 * edge into setjmp; longjmp lands where setjmp returned, in that edge's
 * trampoline, whose "after" pops the entry: the caller's state, exactly.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "rt.h"
#include "tls.h"

typedef void (*longjmp_fn)(void *, int);

/* Read by jumps.S. */
void *dacce_real__setjmp __attribute__((visibility("hidden")));
void *dacce_real_setjmp __attribute__((visibility("hidden")));
void *dacce_real___sigsetjmp __attribute__((visibility("hidden")));
void *dacce_real_getcontext __attribute__((visibility("hidden")));

static longjmp_fn real_longjmp, real__longjmp, real_siglongjmp, real___longjmp_chk;

/* Before any program code runs: setjmp works with or without the runtime. */
__attribute__((constructor)) static void find_real_jumps(void)
{
	dacce_real__setjmp = dlsym(RTLD_NEXT, "_setjmp");
	dacce_real_setjmp = dlsym(RTLD_NEXT, "setjmp");
	dacce_real___sigsetjmp = dlsym(RTLD_NEXT, "__sigsetjmp");
	dacce_real_getcontext = dlsym(RTLD_NEXT, "getcontext");
	real_longjmp = (longjmp_fn)dlsym(RTLD_NEXT, "longjmp");
	real__longjmp = (longjmp_fn)dlsym(RTLD_NEXT, "_longjmp");
	real_siglongjmp = (longjmp_fn)dlsym(RTLD_NEXT, "siglongjmp");
	real___longjmp_chk = (longjmp_fn)dlsym(RTLD_NEXT, "__longjmp_chk");
	if (!dacce_real__setjmp || !dacce_real_setjmp || !dacce_real___sigsetjmp ||
	    !dacce_real_getcontext ||
	    !real_longjmp || !real__longjmp || !real_siglongjmp || !real___longjmp_chk)
		abort(); /* a libc without them: nothing sensible to run */
}

/* Called by setjmp_stubs.S with the jmp_buf and the slot of setjmp's return address. */
void dacce_rt_setjmp_mark(void *env, uintptr_t *ret_slot) __attribute__((visibility("hidden")));

void dacce_rt_setjmp_mark(void *env, uintptr_t *ret_slot)
{
	dacce_rt_mark_save(env, ret_slot, false);
}

/* getcontext's, likewise: setcontext and swapcontext come back to it (coroutines.c). */
void dacce_rt_getcontext_mark(void *ucp, uintptr_t *ret_slot) __attribute__((visibility("hidden")));

void dacce_rt_getcontext_mark(void *ucp, uintptr_t *ret_slot)
{
	dacce_rt_mark_save(ucp, ret_slot, true);
}

/*
 * The longjmp family, with the jmp_buf as an opaque pointer (their
 * <setjmp.h> types would only be cast away).  None of them returns.
 */
__attribute__((visibility("default"), noreturn)) void longjmp(void *env, int val);
__attribute__((visibility("default"), noreturn)) void _longjmp(void *env, int val);
__attribute__((visibility("default"), noreturn)) void siglongjmp(void *env, int val);
__attribute__((visibility("default"), noreturn)) void __longjmp_chk(void *env, int val);

static _Noreturn void jump(longjmp_fn real, void *env, int val)
{
	/* Before the rewind: from here the context is the landing's, the frames not yet. */
	__atomic_store_n(&dacce_tls_self()->jump_sp, (uint64_t)(uintptr_t)__builtin_frame_address(0),
			 __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	dacce_rt_mark_rewind(env);
	real(env, val);
	abort();
}

void longjmp(void *env, int val)
{
	jump(real_longjmp, env, val);
}

void _longjmp(void *env, int val)
{
	jump(real__longjmp, env, val);
}

void siglongjmp(void *env, int val)
{
	jump(real_siglongjmp, env, val);
}

void __longjmp_chk(void *env, int val)
{
	jump(real___longjmp_chk, env, val);
}
