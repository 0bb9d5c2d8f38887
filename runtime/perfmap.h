/* SPDX-License-Identifier: MIT */
/*
 * Names for the code the runtime generates, in the format perf reads for
 * code that no file describes (/tmp/perf-PID.map: one "START SIZE name"
 * line per piece, hex without 0x).  perf report, perf script and other
 * tools that read the file then show a return address in a trampoline as
 * "dacce:call@main+0x1f" instead of an unknown address.
 *
 * Opt-in, as for the JIT compilers that write one (DACCE_PERF_MAP=1): the
 * file stays in /tmp after the process ends.  Lines are appended as code is
 * made, so a process killed at any point leaves every piece it ran named.
 */
#ifndef DACCE_RT_PERFMAP_H
#define DACCE_RT_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads DACCE_PERF_MAP and starts this process's file afresh.  0 or a negative errno. */
int dacce_perfmap_start(void);

/* Whether the map is on (callers skip building names otherwise). */
bool dacce_perfmap_on(void);

/* Names [start, start + len).  Does nothing when the map is off. */
void dacce_perfmap_add(uintptr_t start, size_t len, const char *name);

/*
 * Around fork (no code being made meanwhile): the child's code is the
 * parent's at the same addresses, so its file starts as a copy of what the
 * parent's held at the fork.
 */
void dacce_perfmap_before_fork(void);
void dacce_perfmap_after_fork_child(void);

#endif
