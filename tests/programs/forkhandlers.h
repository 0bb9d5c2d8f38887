/* SPDX-License-Identifier: MIT */
/* What forkhandlers.c and its library share. */
#ifndef FORKHANDLERS_H
#define FORKHANDLERS_H

#define PROBE_LIBRARY "libforkhandlers-"
#include "probe.h"

/* How many times each of the library's fork handlers ran in this process. */
struct fork_counts {
	int prepare, parent, child;
};

void lib_fork_counts(struct fork_counts *out);
int lib_work(int depth);

#endif
