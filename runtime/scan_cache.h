/* SPDX-License-Identifier: MIT */
/*
 * Scans of earlier runs of the same module files (scan_store.h): a function
 * whose bytes were scanned before is not decoded again.  Scanning is the
 * largest part of decoding a function (Zydis reads every instruction), and
 * short processes of big programs decode thousands: gcc's cc1 compiling an
 * empty file spent a quarter of its time under the runtime scanning.
 *
 * Files per module, named after its build-id and the runtime's, in DACCE_CACHE_DIR (default
 * $XDG_CACHE_HOME/dacce, else $HOME/.cache/dacce).  The directory is
 * created 0700 and used only when it belongs to the effective user and
 * nobody else may write to it.  DACCE_CACHE=0 turns the cache off; so does
 * a set-user-ID start (AT_SECURE).  Modules without a build-id are scanned
 * every time.
 *
 * Files are read when a module is opened, and written when the process
 * exits (exit or return from main), and every DACCE_CACHE_SAVE_S seconds
 * while it runs, if it scanned anything new: the file on
 * disk then, merged with what this process added, through a rename.  So
 * processes running side by side never leave a torn file; the last to
 * finish keeps what it saw.
 *
 * Callers hold the runtime's lock.
 */
#ifndef DACCE_RT_SCAN_CACHE_H
#define DACCE_RT_SCAN_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "funcs.h"
#include "modules.h"
#include "scan.h"

struct dacce_scan_cache;

/*
 * Reads the environment; runtime is the module of the runtime's own code,
 * whose build-id names the scanner (a rebuilt runtime trusts no older
 * scans).  Without one, or switched off, every later call is a plain scan.
 */
void dacce_scan_cache_setup(const struct dacce_module_info *runtime);

/*
 * dacce_funcs_load() through the cache: the table kept for m's file (its
 * build-id and size), else read from the file and kept.
 */
int dacce_scan_cache_funcs(const struct dacce_module_info *m, struct dacce_funcs *out);

/* The cache of module m with table funcs, or NULL (none: scans are not kept). */
struct dacce_scan_cache *dacce_scan_cache_for(const struct dacce_module_info *m,
					      const struct dacce_funcs *funcs);

/*
 * dacce_scan_function() on the function [start, end) of cache's module
 * (cache may be NULL), code holding its bytes: from the file when it has a
 * scan of these bytes, else scanned and kept for the file.
 */
int dacce_scan_cached(struct dacce_scan_cache *cache, const uint8_t *code, uintptr_t start,
		      uintptr_t end, const struct dacce_range *plt, size_t n_plt,
		      struct dacce_scan *out);

/* Writes every module's file that this process added to. */
void dacce_scan_cache_save(void);

/*
 * The same, when DACCE_CACHE_SAVE_S (30) seconds have passed since start or
 * the last time: a daemon may never exit cleanly (SIGTERM's default action
 * runs no exit handler).  The policy thread calls it as it goes round; the
 * directory is pruned at exit only.
 */
void dacce_scan_cache_save_if_due(void);

/*
 * In a fork child: the scans it inherited are its parent's to write.  It
 * writes them with its own, if it makes any (a shell's subshells fork and
 * exit by the thousand).
 */
void dacce_scan_cache_after_fork_child(void);

/*
 * Scans found in files, scans made by Zydis while a file could have held
 * them, and function tables found in files.
 */
void dacce_scan_cache_counts(unsigned long *found, unsigned long *scanned, unsigned long *tables);

#endif
