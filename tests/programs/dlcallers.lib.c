// SPDX-License-Identifier: MIT
// flags: -Wl,-rpath,$ORIGIN/dlcallers.dir
/*
 * The library of dlcallers.c, linked with it, and instrumented as it is: the
 * loader's functions called from here must know the library is calling.
 */
#include <dlfcn.h>

#include "dlcallers.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

int dlcallers_shared(void)
{
	return 2 + sink;
}

NOINLINE void *lib_next_symbol(const char *name)
{
	void *found = dlsym(RTLD_NEXT, name);

	sink++; /* not a tail call */
	return found;
}

/* Not a tail call: from one, the library's caller would be the caller natively too. */
NOINLINE void *lib_open(const char *name)
{
	void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	sink++;
	return handle;
}
