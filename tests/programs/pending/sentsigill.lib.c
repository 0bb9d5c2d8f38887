// SPDX-License-Identifier: MIT
/*
 * The library sentsigill.c's workers open, call and close in a loop (built
 * by run-programs.sh as libsentsigill-VARIANT.so): each load is runtime work
 * (instrumenting it, forgetting it), each first call into it too.
 */
static volatile int lib_sink;

__attribute__((noinline)) static int lib_inner(int x)
{
	return x + 1 + lib_sink;
}

__attribute__((noinline)) int lib_work(int x)
{
	return lib_inner(x * 2) + lib_sink;
}
