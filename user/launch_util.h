/* SPDX-License-Identifier: MIT */
/* Small helpers of `dacce launch`: finding things, checking the program, numbers. */
#ifndef DACCE_USER_LAUNCH_UTIL_H
#define DACCE_USER_LAUNCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns. */
uint64_t dacce_now_ns(void);

/* Parses a decimal number in [min, max]; 0 or -EINVAL. */
int dacce_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * The runtime to preload, as an absolute path: explicit (--runtime), else
 * $DACCE_RUNTIME, else libdacce.so next to this binary, else
 * ../lib/dacce/libdacce.so from it.  0, or -ENOENT with a reason in why.
 */
int dacce_find_runtime(const char *explicit_path, char *out, size_t out_len, char *why,
		       size_t why_len);

/*
 * Whether program (as execvp would find it) can run under the runtime: it
 * exists, is executable, and is a script or a dynamically linked x86-64 ELF
 * (LD_PRELOAD does nothing to a static one).  0, or a negative errno with
 * a one-line reason in why.
 */
int dacce_check_program(const char *program, char *why, size_t why_len);

#endif
