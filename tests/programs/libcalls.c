// SPDX-License-Identifier: MIT
// link: lib
/*
 * A library linked at build time (libcalls.lib.c, liblibcalls-VARIANT.so,
 * found next to the program through its rpath): loaded at start, not
 * dlopened, and instrumented by the runtime as the program is.  Calls into
 * it through the PLT and through pointers it hands out, calls inside it,
 * tail calls, callbacks into the program (which call the library again), a
 * thread it starts, and qsort from it.  PROBE_LIBRARY (libcalls.h) makes the
 * library's frames count as the program's: probes inside the library and in
 * its callbacks must be exact ("L" offsets), except under qsort, where the
 * native stack runs through libc ("outside", partial under the runtime).
 */
#include "libcalls.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static int deeper(const char *tag, int x)
{
	probe(tag);
	return x + 100 + sink;
}

/* Called back by the library: the program again, then the library again. */
static int on_value(int x)
{
	char tag[48];
	int r;

	snprintf(tag, sizeof(tag), "callback %d", x);
	probe(tag);
	snprintf(tag, sizeof(tag), "callback %d through", x);
	probe_through(tag);
	snprintf(tag, sizeof(tag), "callback %d deeper", x);
	r = deeper(tag, x);
	snprintf(tag, sizeof(tag), "callback %d into-lib", x);
	return r + lib_probed(tag, x);
}

/* Reached from the library by a tail call (a jump at -O2 and above). */
NOINLINE static int tail_landing(int x)
{
	probe("tail-landing");
	return x - 1 + sink;
}

/* Called back on the thread the library started. */
static int on_thread(int x)
{
	probe("thread-callback");
	return deeper("thread-callback-deeper", x) + lib_probed("thread-callback-into-lib", x);
}

NOINLINE static int into_library(void)
{
	int r = lib_probed("program-to-lib", 2);

	probe("after-program-to-lib");
	for (int i = 0; i < 2; i++) {
		lc_fn op = lib_get_op(i);

		r += op(i + 4); /* the library's functions, from a pointer it gave */
	}
	probe("after-lib-ops");
	return r;
}

NOINLINE static int inside_library(void)
{
	int r = lib_chain(3);

	probe("after-chain");
	r += lib_recurse(1000);
	r += lib_mutual(40);
	probe("after-recursions");
	for (int i = 0; i < 4; i++)
		r += lib_dispatch(i, i + 1);
	probe("after-dispatch");
	r += lib_tail_in(5);
	r += lib_tail_plt(6);
	probe("after-lib-tails");
	return r;
}

NOINLINE static int callbacks(void)
{
	int r = lib_apply(on_value, 2);

	probe("after-apply");
	r += lib_nested(on_value, 20);
	probe("after-nested");
	r += lib_tail_out(tail_landing, 7);
	probe("after-tail-out");
	return r;
}

int main(void)
{
	int r = into_library();

	r += inside_library();
	r += callbacks();
	r += lib_spawn(on_thread, 9);
	probe("after-spawn");
	r += lib_sort(17);
	probe("after-sort");
	probe("main");
	probe_through("main through");
	printf("result %d\n", r);
	return 0;
}
