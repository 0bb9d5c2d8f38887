// SPDX-License-Identifier: MIT
/*
 * The library dlthreads.c opens and closes from several threads at once
 * (built by run-programs.sh as libdlthreads-VARIANT.so).  It calls the
 * program back from two frames down.
 */
typedef int (*callback_fn)(int);

static volatile int lib_sink;

__attribute__((noinline)) static int lib_inner(callback_fn f, int x)
{
	int r = f(x);

	return r + 1 + lib_sink;
}

__attribute__((noinline)) int lib_work(callback_fn f, int x)
{
	int r = lib_inner(f, x * 2);

	return r + 2 + lib_sink;
}
