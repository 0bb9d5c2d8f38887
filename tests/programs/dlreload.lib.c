// SPDX-License-Identifier: MIT
/*
 * The library dlreload.c opens, closes and opens again (built by
 * run-programs.sh as libdlreload-VARIANT.so with the program's flags), and
 * instrumented by the runtime at each load: calls into it and the
 * program's callbacks it calls have exact contexts.  No call back is in tail
 * position: natively the library's frame must stay on the stack, or the
 * native stack would not show that the callback came from the library.
 */
typedef int (*callback_fn)(int);

static volatile int lib_sink;

int lib_square(int x)
{
	return x * x + lib_sink;
}

int lib_apply(callback_fn f, int x)
{
	int r = f(x + 1);

	return r * 2 + 1 + lib_sink;
}

/* Calls back from n frames down inside the library. */
__attribute__((noinline)) int lib_nested(callback_fn f, int n)
{
	if (n <= 0)
		return f(n) + 1 + lib_sink;
	return lib_nested(f, n - 1) + 1 + lib_sink;
}

int lib_generation(void)
{
	static int opened;

	return ++opened; /* 1 after every load: a fresh copy of the data each time */
}
