// SPDX-License-Identifier: MIT
/*
 * The library dlunload.c loads and unloads on one thread while other
 * threads load and unload others (built by run-programs.sh as
 * libdlunload-VARIANT.so).  Many small functions: instrumenting it reads
 * much of its code and unwind tables, a long window for an unmapping.
 */
typedef int (*callback_fn)(int);

static volatile int lib_sink;

#define LIB_FN(n)                                                      \
	__attribute__((noinline)) int lib_fn##n(int x)                  \
	{                                                              \
		return x * (n + 1) + lib_sink;                             \
	}
#define LIB_FN10(n)                                                                      \
	LIB_FN(n##0) LIB_FN(n##1) LIB_FN(n##2) LIB_FN(n##3) LIB_FN(n##4) LIB_FN(n##5)      \
	LIB_FN(n##6) LIB_FN(n##7) LIB_FN(n##8) LIB_FN(n##9)
#define LIB_FN100(n)                                                                       \
	LIB_FN10(n##0) LIB_FN10(n##1) LIB_FN10(n##2) LIB_FN10(n##3) LIB_FN10(n##4)          \
	LIB_FN10(n##5) LIB_FN10(n##6) LIB_FN10(n##7) LIB_FN10(n##8) LIB_FN10(n##9)

LIB_FN100(1)
LIB_FN100(2)
LIB_FN100(3)

__attribute__((noinline)) int lib_work(callback_fn f, int x)
{
	int r = f(lib_fn100(x) + lib_fn399(x));

	return r + 2 + lib_sink;
}
