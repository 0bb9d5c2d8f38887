/* SPDX-License-Identifier: MIT */
/*
 * What pltcall.c and its library pltcall.lib.c share (as libcalls.h): the
 * library's interface and PROBE_LIBRARY.  run-programs.sh builds the library
 * as libpltcall-VARIANT.so.
 */
#ifndef PLTCALL_H
#define PLTCALL_H

#define PROBE_LIBRARY "libpltcall-"
#include "probe.h"

/* Calls plt_inner through the library's own PLT (or GOT slot, -fno-plt). */
int plt_outer(int x);
int plt_inner(int x);
/* Where plt_outer and plt_inner last returned to. */
void *plt_outer_returned_to(void);
void *plt_inner_returned_to(void);

#endif
