/* SPDX-License-Identifier: MIT */
/*
 * The runtime's reading of its environment.  getenv is not used: a program
 * may define its own (bash does), which then wins over libc's for every
 * module, the runtime included, and is instrumented program code: called
 * by the runtime before the thread has a context, its patched sites would
 * run on a thread with no ccStack.
 */
#ifndef DACCE_RT_ENV_H
#define DACCE_RT_ENV_H

/* The value of name in the process's environment, or NULL: getenv's contract. */
const char *dacce_env(const char *name);

#endif
