/* SPDX-License-Identifier: MIT */
/*
 * Which libraries loaded with the program, or later by dlopen, the runtime
 * instruments too.  Not: the dynamic loader, the vDSO, glibc's own libraries
 * (its gconv modules too) and the toolchain's (libc, libm, libpthread, ...,
 * libgcc_s, libstdc++: the runtime calls them, and they run the unwinder and
 * the loader's callbacks), sanitizer runtimes, the runtime itself and every library it
 * depends on (libelf, libdw, libz, ...: the runtime's own calls must never
 * run instrumented code), and a library that replaces libc's allocator
 * (jemalloc, tcmalloc: the runtime's work calls it, libraries.c).
 * DACCE_LIBS=0 instruments the program alone.
 */
#ifndef DACCE_RT_LIBRARIES_H
#define DACCE_RT_LIBRARIES_H

#include <stdbool.h>
#include <stdint.h>

#include "modules.h"

/*
 * Sets wanted[i] for each library of mods (never the program) the runtime
 * should instrument.  self is an address inside the runtime's own module.
 * 0, or a negative errno (wanted then all false).
 */
int dacce_libraries_choose(const struct dacce_modules *mods, uintptr_t self, bool *wanted);

#endif
