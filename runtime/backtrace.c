// SPDX-License-Identifier: MIT
/*
 * glibc's backtrace() and libgcc's _Unwind_Backtrace(), interposed: the
 * frames an uninstrumented run would show.  Natively libgcc's unwinder would
 * stop at the first return into generated code (it has no unwind information
 * there).  So the stack is shown to it as exceptions.c shows it to a throw
 * (original return addresses in every slot), walked, and put back as it was.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdbool.h>
#include <stdint.h>

#include "exceptions.h"

/*
 * Frames in libdacce.so have no native counterpart: this file's own, and the
 * wrappers the runtime puts under main, thread start routines and signal
 * handlers.  Walks leave them out.
 */
struct trace {
	void **buffer;
	int size, n;
	void *self_base;
	uintptr_t last_cfa;
};

static bool in_runtime(void *self_base, uintptr_t ip)
{
	Dl_info info;

	return dladdr((void *)ip, &info) && info.dli_fbase == self_base;
}

static _Unwind_Reason_Code record_frame(struct _Unwind_Context *ctx, void *arg)
{
	const struct dacce_unwinder *unwinder = dacce_unwinder();
	struct trace *t = arg;
	uintptr_t ip = unwinder->get_ip(ctx), cfa = unwinder->get_cfa(ctx);

	if (in_runtime(t->self_base, ip))
		return _URC_NO_REASON;
	/* No progress (same address, same frame): a loop in broken unwind information. */
	if (t->n > 0 && (uintptr_t)t->buffer[t->n - 1] == ip && cfa == t->last_cfa)
		return _URC_END_OF_STACK;
	t->last_cfa = cfa;
	t->buffer[t->n++] = (void *)ip;
	return t->n == t->size ? _URC_END_OF_STACK : _URC_NO_REASON;
}

__attribute__((visibility("default"), noinline)) int backtrace(void **buffer, int size)
{
	const struct dacce_unwinder *unwinder = dacce_unwinder();
	struct trace t = { .buffer = buffer, .size = size };
	const char key = 0; /* this call's own: a handler's backtrace() may run inside another */
	Dl_info self;

	/* Not backtrace itself: in a non-PIE program its address is the program's PLT entry. */
	if (size <= 0 || !unwinder || !dladdr((void *)record_frame, &self))
		return 0;
	t.self_base = self.dli_fbase;
	dacce_unwind_show_native(&key);
	unwinder->backtrace(record_frame, &t);
	dacce_unwind_put_back(&key);
	/* The outermost frame's return address is 0 (above _start): not a frame. */
	if (t.n > 1 && !t.buffer[t.n - 1])
		t.n--;
	return t.n;
}

/* A program's own walk: its callback sees every frame but this file's. */
struct relay {
	_Unwind_Trace_Fn fn;
	void *arg;
	void *self_base;
};

/* The first frame is libgcc's _Unwind_Backtrace itself, as natively. */
static _Unwind_Reason_Code relay_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct relay *r = arg;

	if (in_runtime(r->self_base, dacce_unwinder()->get_ip(ctx)))
		return _URC_NO_REASON;
	return r->fn(ctx, r->arg);
}

/*
 * Programs walk their own stacks with it (glog, abseil, crash reporters).
 * The stack stays native until the walk is over: a callback that jumps out
 * of the walk (longjmp, a throw) would leave it so.
 */
__attribute__((visibility("default"), noinline)) _Unwind_Reason_Code
_Unwind_Backtrace(_Unwind_Trace_Fn fn, void *arg)
{
	const struct dacce_unwinder *unwinder = dacce_unwinder();
	struct relay r = { .fn = fn, .arg = arg };
	const char key = 0;
	_Unwind_Reason_Code rc;
	Dl_info self;

	if (!unwinder || !dladdr((void *)relay_frame, &self))
		return _URC_FATAL_PHASE1_ERROR;
	r.self_base = self.dli_fbase;
	dacce_unwind_show_native(&key);
	rc = unwinder->backtrace(relay_frame, &r);
	dacce_unwind_put_back(&key);
	return rc;
}
