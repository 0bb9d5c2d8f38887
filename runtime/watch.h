/* SPDX-License-Identifier: MIT */
/*
 * What the policy thread looks at in the process at every wake-up: how
 * many threads the kernel counts, and whether every thread but it has
 * exited.  It reads /proc through descriptors kept open (keptfd.h), opened
 * by dacce_watch_open before the policy thread starts: at start-up, and in
 * a fork child before the program goes on.  Only the policy thread uses
 * them after that.
 */
#ifndef DACCE_RT_WATCH_H
#define DACCE_RT_WATCH_H

#include <stdbool.h>

/* Opens what the watch reads (again, in a fork child).  Nothing fails: a file not open now is opened at use. */
void dacce_watch_open(void);

/* Threads the kernel counts in the process, this one included, or -1. */
int dacce_watch_threads(void);

/*
 * Whether the process's other thread has exited, with THREADS (from
 * dacce_watch_threads) counting two.  glibc ends a process with exit(0)
 * when its last thread exits (main having called pthread_exit), but it
 * counts the policy thread too: so the policy thread must notice, and do it.
 */
bool dacce_watch_alone(int threads);

#endif
