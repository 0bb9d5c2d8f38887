// SPDX-License-Identifier: MIT
// link: lib
// C++ exceptions through the frames of an instrumented library (libthrow.lib.cpp,
// liblibthrow-VARIANT.so, linked at build time, loaded at start): the C++ counterpart of
// libcalls.c and exceptions.cpp.  Every probe (in destructors run by the unwinding, in catch
// blocks, after catches, inside the library) must read the native context, library frames as
// "L" offsets:
//   - a throw from 10 frames of library recursion deep, each with a destructor, caught here;
//   - a throw from a callback of the program called by the library through a pointer, under
//     library frames with destructors, caught here;
//   - a throw caught inside the library and rethrown (`throw;`) to the program, from the
//     library and from a callback;
//   - a callback's throw caught by the library, which returns normally;
//   - a throw through a library virtual method, its own and from a callback it makes;
//   - a std::function passed to the library and invoked there, which throws;
//   - a thread started by the library, in which throws cross its frames both ways;
// four rounds, each after a re-encoding when the runtime is there (later rounds run through
// the edges of the earlier ones encoded, or, under DACCE_EPOCH_STRESS, through new epochs).
#include <pthread.h>

#include "libthrow.h"

static volatile int sink;

NOINLINE static void after_catch(const char *tag)
{
	lt_probe(tag, -1);
}

// ------------------------------------------------------------ callbacks the library calls
NOINLINE static int raise_here(int x)
{
	Guard g("cb-raise-dtor", x);

	lt_probe("cb-raise", x);
	if (x >= 0)
		throw LtError("callback", 40 + x);
	return sink;
}

// Called back by the library: the program's frames above the library's, then the throw.
NOINLINE static int throwing_cb(int x)
{
	Guard g("cb-dtor", x);

	return raise_here(x) + 1 + sink;
}

NOINLINE static int quiet_cb(int x)
{
	lt_probe("cb-quiet", x);
	return x + sink;
}

// ------------------------------------------------------------ the scenarios
NOINLINE static void deep_library_throw(void)
{
	try {
		sink += lib_deep_throw(10, 1);
	} catch (const LtError &e) {
		lt_probe("deep-caught", e.code);
		sink += e.code;
	}
	after_catch("deep-after");
	sink += lib_deep_throw(2, 0); // the same frames, returning
	after_catch("deep-after-return");
}

NOINLINE static void callback_throw(void)
{
	Guard g("callback-frame-dtor", 0);

	try {
		sink += lib_through(throwing_cb, 4, 1);
	} catch (const LtError &e) {
		lt_probe("callback-caught", e.code);
	}
	after_catch("callback-after");
	sink += lib_through(quiet_cb, 2, 2);
	after_catch("callback-after-return");
}

NOINLINE static void rethrown(void)
{
	try {
		sink += lib_rethrow(NULL, 3);
	} catch (const LtError &e) {
		lt_probe("rethrow-caught", e.code);
	}
	after_catch("rethrow-after");
	try {
		sink += lib_rethrow(throwing_cb, 2);
	} catch (const std::exception &e) {
		lt_probe("rethrow-callback-caught", e.what()[0]);
	}
	after_catch("rethrow-callback-after");
}

NOINLINE static void absorbed(void)
{
	sink += lib_absorb(throwing_cb, 2);
	after_catch("absorb-after");
}

NOINLINE static void virtual_method(void)
{
	LtShape *s = lib_shape();

	sink += s->area(2);
	try {
		sink += s->area(5);
	} catch (const LtError &e) {
		lt_probe("virtual-caught", e.code);
	}
	after_catch("virtual-after");
	try {
		sink += s->visit(throwing_cb, 3);
	} catch (const LtError &e) {
		lt_probe("visit-caught", e.code);
	}
	after_catch("visit-after");
	delete s;
}

NOINLINE static int lambda_raise(int x)
{
	Guard g("lambda-dtor", x);

	if (x > 0)
		throw LtError("lambda", 60 + x);
	lt_probe("lambda-quiet", x);
	return sink;
}

NOINLINE static void function_object(void)
{
	int (*volatile fp)(int) = lambda_raise;
	std::function<int(int)> fn = [fp](int x) {
		lt_probe("lambda", x);
		return fp(x) + 1;
	};

	sink += lib_invoke(fn, 2, 0);
	try {
		sink += lib_invoke(fn, 3, 4);
	} catch (const LtError &e) {
		lt_probe("function-caught", e.code);
	}
	after_catch("function-after");
}

// ------------------------------------------------------------ on the library's thread
NOINLINE static int thread_catcher(int x)
{
	int r = 0;

	try {
		r = lib_deep_throw(4, 1);
	} catch (const LtError &e) {
		lt_probe("thread-program-caught", e.code);
		r = e.code + x;
	}
	after_catch("thread-program-after");
	return r;
}

NOINLINE static void library_thread(void)
{
	sink += lib_spawn(throwing_cb, thread_catcher, 5);
	after_catch("thread-after-spawn");
}

// Calls into the library until the runtime re-encodes (the pushes make it due), or 1 s.
NOINLINE static void settle(void)
{
	probe_context_get_fn get = probe_context_get();
	uint64_t before = probe_epoch_now(get);
	long deadline = probe_now_ms() + 1000;

	do {
		for (int i = 0; i < 2000; i++)
			sink += lib_spin(4);
	} while (get && probe_epoch_now(get) == before && probe_now_ms() < deadline);
}

int main(void)
{
	for (int round = 0; round < 4; round++) {
		lt_round = round;
		lib_set_round(round);
		deep_library_throw();
		callback_throw();
		rethrown();
		absorbed();
		virtual_method();
		function_object();
		library_thread();
		settle();
	}
	probe("main-end");
	return 0;
}
