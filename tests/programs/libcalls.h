/* SPDX-License-Identifier: MIT */
/*
 * What libcalls.c and its library libcalls.lib.c share: the library's
 * interface, and PROBE_LIBRARY, which both must see before probe.h (the
 * program's probe() and the library's copy of it must agree on which frames
 * are the program's).  run-programs.sh builds the library as
 * liblibcalls-VARIANT.so.
 */
#ifndef LIBCALLS_H
#define LIBCALLS_H

#define PROBE_LIBRARY "liblibcalls-"
#include "probe.h"

typedef int (*lc_fn)(int);

int lib_probed(const char *tag, int x);
lc_fn lib_get_op(int which);
int lib_chain(int x);
int lib_recurse(int n);
int lib_mutual(int n);
int lib_dispatch(int i, int x);
int lib_tail_in(int x);
int lib_tail_plt(int x);
int lib_tail_out(lc_fn f, int x);
int lib_apply(lc_fn f, int x);
int lib_nested(lc_fn f, int n);
int lib_spawn(lc_fn f, int x);
int lib_sort(int seed);

#endif
