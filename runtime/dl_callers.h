/* SPDX-License-Identifier: MIT */
/*
 * dlopen, dlmopen, dlsym and dlvsym, interposed (dl_callers_stubs.S): glibc reads
 * its caller's return address to know who calls.  dlsym(RTLD_NEXT, ...)
 * searches the modules after the caller's, and dlopen searches the caller's
 * RUNPATH and expands $ORIGIN from it.  Called from a patched site, the
 * return address is a trampoline's, in no module: RTLD_NEXT then fails
 * ("RTLD_NEXT used in code not dynamically loaded") and dlopen searches the
 * program's paths instead of a library's.
 *
 * So a call from generated code whose caller matters reaches the real
 * function with a return address in the caller's own module: a `ret` byte
 * the runtime wrote into the module's padding (padding.h), which returns on
 * to the stub, which returns to the trampoline.  The caller matters for
 * dlsym and dlvsym with RTLD_NEXT, and with RTLD_DEFAULT or for dlopen and
 * dlmopen when it is a library (glibc takes the program as the caller it
 * cannot find).  Any other call jumps straight to the real function, which
 * then sees the stack exactly as without the runtime.
 */
#ifndef DACCE_RT_DL_CALLERS_H
#define DACCE_RT_DL_CALLERS_H

#include <stdint.h>

/* The functions interposed, in the order of dl_callers_stubs.S. */
enum dacce_dl_function {
	DACCE_DL_OPEN,
	DACCE_DL_MOPEN,
	DACCE_DL_SYM,
	DACCE_DL_VSYM,
	DACCE_DL_FUNCTIONS,
};

/*
 * Called by the stub of function with the slot of its return address and
 * the call's first argument: sets *real to the real function and
 * returns the address the real function must return to instead (a `ret`
 * byte in the caller's module), or 0 to jump to it as it is.
 */
uintptr_t dacce_dl_route(unsigned function, const uintptr_t *ret_slot, void **real, uintptr_t arg0)
	__attribute__((visibility("hidden")));

#endif
