// SPDX-License-Identifier: MIT
/*
 * glibc's backtrace(), interposed: the frames an uninstrumented run would
 * show.  Natively libgcc's unwinder would stop at the first return into
 * generated code (it has no unwind information there).  So the stack is
 * shown to it as exceptions.c shows it to a throw (original return
 * addresses in every slot), walked, and put back as it was.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdbool.h>
#include <stdint.h>

#include "exceptions.h"

struct trace {
	void **buffer;
	int size, n;
	bool past_runtime; /* the frames of this file (libdacce.so) are not the caller's */
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

	if (!t->past_runtime) {
		if (in_runtime(t->self_base, ip))
			return _URC_NO_REASON;
		t->past_runtime = true;
	}
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

	if (size <= 0 || !unwinder || !dladdr((void *)backtrace, &self))
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
