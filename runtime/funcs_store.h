/* SPDX-License-Identifier: MIT */
/*
 * A module's function table (funcs.h) kept in a file between runs
 * (scan_cache.h decides where and when).  Reading the table from the ELF
 * file walks every symbol and FDE, and runs each FDE's rules at its start to
 * tell entries from fragments: a few milliseconds for a big program (cc1's
 * 45,000 functions), paid at every start.  The file holds the table relative
 * to the module's bias, under a key that names the module file and the
 * runtime that read it.  The whole file is checked against its hash before
 * anything of it is used: a damaged file reads as none.
 *
 * funcs_store.c allocates as funcs.c does (glibc's heap): dacce_funcs_fini
 * frees a table read from either.
 */
#ifndef DACCE_RT_FUNCS_STORE_H
#define DACCE_RT_FUNCS_STORE_H

#include <stdint.h>

#include "funcs.h"

/* The table kept in path under key, moved to bias: 0, -ENOENT, -EINVAL (not one), -ENOMEM. */
int dacce_funcs_store_read(const char *path, uint64_t key, uintptr_t bias,
			   struct dacce_funcs *out);

/* Writes funcs (its module at bias) to path under key, through a rename: 0 or a negative errno. */
int dacce_funcs_store_write(const char *path, uint64_t key, uintptr_t bias,
			    const struct dacce_funcs *funcs);

#endif
