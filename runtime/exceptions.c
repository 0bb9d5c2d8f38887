// SPDX-License-Identifier: MIT
/*
 * Exceptions (C++ throw, C cleanups under -fexceptions) through patched
 * frames.
 *
 * A frame entered through a trampoline returns into generated code, an
 * address the unwinder has no unwind information for: it would stop there
 * and call std::terminate.  So the unwinder is shown a native stack:
 *
 *   1. _Unwind_RaiseException, _Unwind_Resume_or_Rethrow (libstdc++ calls
 *      them through its PLT) and _Unwind_Resume (a cleanup's last call, from
 *      the program) are interposed.  Before the real one runs, the
 *      stack is walked and every return-address slot holding generated
 *      code's address gets the original return address back, recorded
 *      (slot, value, exception).  The program's own personality routines
 *      and LSDAs then find their landing pads as natively.
 *   2. __gxx_personality_v0 and __gcc_personality_v0 are interposed (the
 *      program's unwind tables reach them by symbol).  When one installs a
 *      landing pad for an exception with recorded slots, the landing is
 *      sent to dacce_unwind_landing (exceptions_landing.S) first, which calls
 *      dacce_unwind_land with the frame's stack pointer: the returns of the
 *      frames now gone (recorded slots below it) are applied to the
 *      thread's context, innermost first, as the trampolines would have;
 *      for a handler (a catch), the slots above it get generated code's
 *      addresses back, since those frames will return normally.
 *   3. A throw nothing catches returns from _Unwind_RaiseException: every
 *      slot is put back, and std::terminate runs as natively.
 *
 * The walk finds a frame's return-address slot from its CFA.  In the
 * program, the CFA rule comes from its .eh_frame (cfa.c); elsewhere (a
 * library function the program called, whose return is into a trampoline)
 * the walk stops at the unknown address, whose slot libgcc just read (the
 * CFA of the frame below it), shows it and starts over.
 *
 * Forced unwinding (pthread_exit) is shown the native stack too, so that
 * C++ destructors above a trampoline run.  The thread is outside any
 * context then (thread_exit.c), except while a cleanup runs: its frame's
 * context is put back for it, and _Unwind_Resume leaves again.
 * Cancellation unwinds from inside glibc, through libgcc_s's
 * _Unwind_ForcedUnwind, whose entry the runtime patches (cancel.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unwind.h>

#include "cfa.h"
#include "returns.h"
#include "rt.h"
#include "rt_state.h"
#include "thread_registry.h"
#include "tls.h"
#include "exceptions.h"

typedef _Unwind_Reason_Code (*raise_fn)(struct _Unwind_Exception *);
typedef void (*resume_fn)(struct _Unwind_Exception *);
typedef _Unwind_Reason_Code (*personality_fn)(int, _Unwind_Action, _Unwind_Exception_Class,
					      struct _Unwind_Exception *, struct _Unwind_Context *);

/* libgcc_s's entry points, looked up at run time: libdacce.so is bound now (-z now) and C programs have no libgcc_s. */
static struct {
	raise_fn raise, resume_or_rethrow;
	resume_fn resume;
	personality_fn gxx_personality, gcc_personality;
	struct dacce_unwinder walk;
	_Unwind_Ptr (*get_ip_info)(struct _Unwind_Context *, int *);
	_Unwind_Word (*get_gr)(struct _Unwind_Context *, int);
	void (*set_ip)(struct _Unwind_Context *, _Unwind_Ptr);
} unwinder;
static pthread_once_t unwinder_once = PTHREAD_ONCE_INIT;

static void find_unwinder(void)
{
	void *from;

	unwinder.raise = (raise_fn)dlsym(RTLD_NEXT, "_Unwind_RaiseException");
	unwinder.resume_or_rethrow = (raise_fn)dlsym(RTLD_NEXT, "_Unwind_Resume_or_Rethrow");
	unwinder.resume = (resume_fn)dlsym(RTLD_NEXT, "_Unwind_Resume");
	unwinder.gxx_personality = (personality_fn)dlsym(RTLD_NEXT, "__gxx_personality_v0");
	unwinder.gcc_personality = (personality_fn)dlsym(RTLD_NEXT, "__gcc_personality_v0");
	/*
	 * A C program calling backtrace() may not have it yet: glibc loads it the
	 * same way.  Not RTLD_DEFAULT: that finds backtrace.c's _Unwind_Backtrace.
	 */
	if (!dlsym(RTLD_NEXT, "_Unwind_Backtrace")) {
		from = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!from)
			return;
	} else {
		from = RTLD_NEXT;
	}
	*(void **)&unwinder.walk.backtrace = dlsym(from, "_Unwind_Backtrace");
	*(void **)&unwinder.walk.get_ip = dlsym(from, "_Unwind_GetIP");
	*(void **)&unwinder.walk.get_cfa = dlsym(from, "_Unwind_GetCFA");
	*(void **)&unwinder.get_ip_info = dlsym(from, "_Unwind_GetIPInfo");
	*(void **)&unwinder.get_gr = dlsym(from, "_Unwind_GetGR");
	*(void **)&unwinder.set_ip = dlsym(from, "_Unwind_SetIP");
}

static bool can_walk(void)
{
	pthread_once(&unwinder_once, find_unwinder);
	return unwinder.walk.backtrace && unwinder.get_ip_info && unwinder.walk.get_ip &&
	       unwinder.walk.get_cfa && unwinder.get_gr && unwinder.set_ip;
}

const struct dacce_unwinder *dacce_unwinder(void)
{
	return can_walk() ? &unwinder.walk : NULL;
}

/* A return-address slot shown to the unwinder with the original address. */
struct shown_slot {
	uintptr_t slot;
	uintptr_t value; /* generated code's address it held */
	const void *exception;
};

static __thread struct {
	/*
	 * Outermost first, so the innermost is last: each walk finds slots
	 * innermost first and reverses what it found, and a later walk of the
	 * same exception (from _Unwind_Resume, in a cleanup) only finds slots
	 * below every slot still recorded for it (the frames of that cleanup).
	 */
	struct shown_slot *slots;
	uint32_t n, cap;
	/* The landing pad dacce_unwind_landing goes on to, and for which throw. */
	uintptr_t landing;
	const void *landing_exception;
	bool landing_handler;
	/* glibc's exception for the unwinding of pthread_exit, once its first frame is met. */
	const void *exit_exception;
} unwinding __attribute__((tls_model("initial-exec")));

struct walk {
	struct dacce_tls *tls;
	const void *exception;
	bool again; /* a slot was found at an unknown address: walk once more */
	bool failed;
};

static int record(uintptr_t slot, uintptr_t value, const void *exception)
{
	if (unwinding.n == unwinding.cap) {
		uint32_t cap = unwinding.cap ? unwinding.cap * 2 : 64;
		struct shown_slot *grown = realloc(unwinding.slots, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		unwinding.slots = grown;
		unwinding.cap = cap;
	}
	unwinding.slots[unwinding.n++] = (struct shown_slot){ slot, value, exception };
	return 0;
}

/* Shows the unwinder the original return address in slot: 1 when it held generated code's. */
static int show_slot(struct walk *w, uintptr_t slot)
{
	uintptr_t value = *(const uintptr_t *)slot, native;
	int shown = rt_return_native(w->tls, value, slot, &native);

	if (shown <= 0)
		return shown;
	if (record(slot, value, w->exception) != 0)
		return -ENOMEM;
	*(uintptr_t *)slot = native;
	return 1;
}

/* An instrumented frame's own return-address slot, from its CFA rule; 0 when unknown. */
static uintptr_t program_frame_slot(struct _Unwind_Context *ctx, uintptr_t pc)
{
	int reg;
	int64_t offset;
	/* The frame's %rsp is the CFA of the one below (libgcc keeps no location for it). */
	uintptr_t sp = unwinder.walk.get_cfa(ctx), cfa;
	const struct rt_module *m = rt_module_at(pc);

	if (!m || !m->cfa)
		return 0;
	/* pc is a return address: the call before it is where the frame is. */
	if (dacce_cfa_rule_at(m->cfa, pc - 1, &reg, &offset) != 0 || (reg != 6 && reg != 7))
		return 0;
	cfa = (reg == 7 ? sp : (uintptr_t)unwinder.get_gr(ctx, reg)) + (uintptr_t)offset;
	/* A slot below the frame's stack pointer would be a misread rule: leave it to the slow way. */
	if (cfa < sp + 8 || (cfa & 7))
		return 0;
	return cfa - 8;
}

static _Unwind_Reason_Code show_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	int before_insn = 0;
	uintptr_t pc = unwinder.get_ip_info(ctx, &before_insn), slot;

	if (!pc)
		return _URC_NO_REASON;
	if (dacce_codecache_contains(&rt.cache, pc)) {
		/* libgcc just read pc from the slot just below the last frame's CFA. */
		slot = unwinder.walk.get_cfa(ctx) - 8;
		if (!before_insn && *(const uintptr_t *)slot == pc && show_slot(w, slot) == 1)
			w->again = true;
		else
			w->failed = true;
		return _URC_END_OF_STACK;
	}
	if (!before_insn) {
		slot = program_frame_slot(ctx, pc);
		if (slot && show_slot(w, slot) < 0)
			w->failed = true;
	}
	return w->failed ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static bool has_context(const struct dacce_tls *tls)
{
	return dacce_rt_enabled() && tls->cc_base;
}

void dacce_unwind_show_native(const void *exception)
{
	struct walk w = { .tls = dacce_tls_self(), .exception = exception };
	uint32_t first = unwinding.n;
	sigset_t saved;

	if (!has_context(w.tls) || !can_walk())
		return;
	do {
		w.again = false;
		rt_lock(&saved);
		unwinder.walk.backtrace(show_frame, &w);
		rt_unlock(&saved);
	} while (w.again && !w.failed);
	if (unwinding.n > first) {
		__atomic_add_fetch(&rt.n_unwinds, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&rt.n_frames_shown, unwinding.n - first, __ATOMIC_RELAXED);
	}
	for (uint32_t i = first, k = unwinding.n; i + 1 < k; i++, k--) {
		struct shown_slot outer = unwinding.slots[k - 1];

		unwinding.slots[k - 1] = unwinding.slots[i];
		unwinding.slots[i] = outer;
	}
	if (w.failed)
		dacce_rt_log(true, "an exception meets a return into generated code it cannot show "
				   "as the original: the unwinder will stop there");
}

static void forget(const void *exception)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < unwinding.n; i++)
		if (unwinding.slots[i].exception != exception)
			unwinding.slots[kept++] = unwinding.slots[i];
	unwinding.n = kept;
}

void dacce_unwind_thread_end(void)
{
	free(unwinding.slots);
	unwinding.slots = NULL;
	unwinding.n = unwinding.cap = 0;
}

void dacce_unwind_put_back(const void *exception)
{
	for (uint32_t i = 0; i < unwinding.n; i++)
		if (unwinding.slots[i].exception == exception)
			*(uintptr_t *)unwinding.slots[i].slot = unwinding.slots[i].value;
	forget(exception);
}

static bool has_slots(const void *exception)
{
	for (uint32_t i = 0; i < unwinding.n; i++)
		if (unwinding.slots[i].exception == exception)
			return true;
	return false;
}

/* Called by dacce_unwind_landing (exceptions_landing.S) on the landing frame's stack. */
__attribute__((visibility("hidden"))) uintptr_t dacce_unwind_land(uintptr_t sp);

uintptr_t dacce_unwind_land(uintptr_t sp)
{
	const void *exception = unwinding.landing_exception;
	struct dacce_tls *tls = dacce_tls_self();
	uintptr_t landing = unwinding.landing;
	uint32_t kept = 0, frame_node = DACCE_NONE;
	sigset_t saved;
	int err = 0;

	/* pthread_exit left the context: its cleanups run in frames it has again. */
	if (exception == unwinding.exit_exception)
		dacce_rt_thread_inside_again();
	rt_lock(&saved);
	/* The frames gone: what their returns would have done, innermost (last) first. */
	for (uint32_t i = unwinding.n; i > 0; i--) {
		const struct shown_slot *s = &unwinding.slots[i - 1];

		if (s->exception == exception && s->slot < sp && !err) {
			frame_node = rt_return_caller(tls, s->value, s->slot);
			err = rt_return_apply(tls, s->value, s->slot);
		}
	}
	for (uint32_t i = 0; i < unwinding.n; i++) {
		struct shown_slot *s = &unwinding.slots[i];

		if (s->exception != exception) {
			unwinding.slots[kept++] = *s;
		} else if (s->slot < sp) {
			continue; /* applied above */
		} else if (unwinding.landing_handler) {
			/* Caught here: the frames above return through generated code as before. */
			*(uintptr_t *)s->slot = s->value;
		} else {
			unwinding.slots[kept++] = *s; /* a cleanup: the unwinding goes on */
		}
	}
	unwinding.n = kept;
	/* A landing pad only the unwinder reaches (in foo.cold) is instrumented as part of its frame's function. */
	if (!err && frame_node != DACCE_NONE)
		err = rt_decode_fragment(landing, frame_node);
	rt_unlock(&saved);
	if (err) {
		dacce_rt_log(true, "the context of a landing pad is lost: it reads partial");
		dacce_rt_thread_outside();
	}
	dacce_runtime_leave(); /* entered when the personality routine chose this landing */
	return landing;
}

/* The personality routines, interposed (glibc declares neither). */
_Unwind_Reason_Code __gxx_personality_v0(int version, _Unwind_Action actions,
					 _Unwind_Exception_Class exception_class,
					 struct _Unwind_Exception *exception,
					 struct _Unwind_Context *ctx);
_Unwind_Reason_Code __gcc_personality_v0(int version, _Unwind_Action actions,
					 _Unwind_Exception_Class exception_class,
					 struct _Unwind_Exception *exception,
					 struct _Unwind_Context *ctx);

const char dacce_unwind_exit_key __attribute__((visibility("hidden")));

/* pthread_exit's unwinding is met: what was recorded for it becomes its exception's. */
static void adopt_exit(const void *exception)
{
	bool adopted = false;

	for (uint32_t i = 0; i < unwinding.n; i++) {
		if (unwinding.slots[i].exception == DACCE_UNWIND_EXIT) {
			unwinding.slots[i].exception = exception;
			adopted = true;
		}
	}
	if (adopted)
		unwinding.exit_exception = exception;
}

static _Unwind_Reason_Code personality(personality_fn real, int version, _Unwind_Action actions,
				       _Unwind_Exception_Class exception_class,
				       struct _Unwind_Exception *exception,
				       struct _Unwind_Context *ctx)
{
	_Unwind_Reason_Code code;

	if (!real)
		return _URC_FATAL_PHASE1_ERROR;
	code = real(version, actions, exception_class, exception, ctx);
	if (actions & _UA_FORCE_UNWIND)
		adopt_exit(exception);
	if (code == _URC_INSTALL_CONTEXT && has_slots(exception) && can_walk()) {
		unwinding.landing = unwinder.walk.get_ip(ctx);
		unwinding.landing_exception = exception;
		unwinding.landing_handler = (actions & _UA_HANDLER_FRAME) != 0;
		unwinder.set_ip(ctx, (_Unwind_Ptr)dacce_unwind_landing);
		/*
		 * Runtime work until the context is the landing frame's: in
		 * between, libgcc removes the frames the context still holds.
		 */
		dacce_runtime_enter();
	}
	return code;
}

__attribute__((visibility("default"))) _Unwind_Reason_Code
__gxx_personality_v0(int version, _Unwind_Action actions, _Unwind_Exception_Class exception_class,
		     struct _Unwind_Exception *exception, struct _Unwind_Context *ctx)
{
	pthread_once(&unwinder_once, find_unwinder);
	return personality(unwinder.gxx_personality, version, actions, exception_class, exception,
			   ctx);
}

__attribute__((visibility("default"))) _Unwind_Reason_Code
__gcc_personality_v0(int version, _Unwind_Action actions, _Unwind_Exception_Class exception_class,
		     struct _Unwind_Exception *exception, struct _Unwind_Context *ctx)
{
	pthread_once(&unwinder_once, find_unwinder);
	return personality(unwinder.gcc_personality, version, actions, exception_class, exception,
			   ctx);
}

static _Unwind_Reason_Code raise_shown(raise_fn real, struct _Unwind_Exception *exception)
{
	_Unwind_Reason_Code code;

	if (!real)
		abort(); /* no unwinder behind us: nothing could have caught it anyway */
	dacce_unwind_show_native(exception);
	code = real(exception);
	/* Back here only when nothing catches it (or the unwinder failed): the frames stay. */
	dacce_unwind_put_back(exception);
	return code;
}

__attribute__((visibility("default"))) _Unwind_Reason_Code
_Unwind_RaiseException(struct _Unwind_Exception *exception)
{
	pthread_once(&unwinder_once, find_unwinder);
	return raise_shown(unwinder.raise, exception);
}

__attribute__((visibility("default"))) _Unwind_Reason_Code
_Unwind_Resume_or_Rethrow(struct _Unwind_Exception *exception)
{
	pthread_once(&unwinder_once, find_unwinder);
	return raise_shown(unwinder.resume_or_rethrow, exception);
}

/* A cleanup is done: the unwinding goes on from its frame, whose call to here returns into a trampoline. */
__attribute__((visibility("default"), noreturn)) void _Unwind_Resume(struct _Unwind_Exception *exception)
{
	pthread_once(&unwinder_once, find_unwinder);
	if (!unwinder.resume)
		abort();
	dacce_unwind_show_native(exception);
	/* On with pthread_exit's unwinding: outside any context again, in case no cleanup is left. */
	if (exception == unwinding.exit_exception)
		dacce_rt_thread_outside();
	unwinder.resume(exception);
	abort(); /* it does not return */
}

size_t dacce_unwind_personalities(uintptr_t out[DACCE_UNWIND_PERSONALITIES])
{
	out[0] = (uintptr_t)__gxx_personality_v0;
	out[1] = (uintptr_t)__gcc_personality_v0;
	return DACCE_UNWIND_PERSONALITIES;
}
