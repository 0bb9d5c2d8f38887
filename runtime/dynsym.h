/* SPDX-License-Identifier: MIT */
/*
 * Symbols of loaded modules, read from their dynamic symbol tables in
 * memory (GNU or SysV hash), without dlsym: the runtime interposes dlsym
 * itself (dl_callers.h) and must find libc's before it can forward to it.
 */
#ifndef DACCE_RT_DYNSYM_H
#define DACCE_RT_DYNSYM_H

#include <stdint.h>

/*
 * The address of name's default (not hidden) definition in the first module
 * loaded after the one holding after, in the loader's order, as
 * dlsym(RTLD_NEXT, name) called from that module finds it; 0 when none.
 */
uintptr_t dacce_dynsym_next(uintptr_t after, const char *name);

#endif
