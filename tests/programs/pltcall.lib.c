// SPDX-License-Identifier: MIT
/*
 * pltcall.c's library: plt_outer, called by the program through its PLT,
 * calls plt_inner, which it exports, through the library's own PLT (or its
 * GOT slot when built with -fno-plt), as libsqlite3 calls its own API.
 */
#include "pltcall.h"

#define NOINLINE __attribute__((noinline))

static volatile int lib_sink;
static void *outer_return, *inner_return;

NOINLINE int plt_inner(int x)
{
	inner_return = __builtin_return_address(0);
	if (x < 0)
		probe("inner");
	return 2 * x + lib_sink;
}

NOINLINE int plt_outer(int x)
{
	int r;

	outer_return = __builtin_return_address(0);
	r = plt_inner(x);
	return r + 1 + lib_sink;
}

void *plt_outer_returned_to(void)
{
	return outer_return;
}

void *plt_inner_returned_to(void)
{
	return inner_return;
}
