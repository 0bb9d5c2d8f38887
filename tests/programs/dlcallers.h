/* SPDX-License-Identifier: MIT */
/*
 * What dlcallers.c and its library dlcallers.lib.c share.  run-programs.sh
 * builds the library as libdlcallers-VARIANT.so with the RUNPATH named on
 * its "// flags:" line.
 */
#ifndef DLCALLERS_H
#define DLCALLERS_H

/* Defined by both: dlsym(RTLD_NEXT) from the program finds the library's. */
int dlcallers_shared(void);

/* dlsym(RTLD_NEXT, name) called from the library. */
void *lib_next_symbol(const char *name);
/* dlopen(name) called from the library: found through the library's RUNPATH, or not. */
void *lib_open(const char *name);

#endif
