/* SPDX-License-Identifier: MIT */
/*
 * The controller's end of the control channel (include/dacce_control.h):
 * a listening socket in a private directory, one connection per followed
 * process, found by the pid its runtime says hello with.  Never blocks.
 */
#ifndef DACCE_USER_CONTROL_H
#define DACCE_USER_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "dacce_control.h"

struct dacce_control;

/* Listens on a new socket; its path is dacce_control_path().  0 or -errno. */
int dacce_control_listen(struct dacce_control **out);
/* Closes everything and removes the socket; NULL-safe.  Runtimes fall back to their own policy. */
void dacce_control_free(struct dacce_control *ctl);
const char *dacce_control_path(const struct dacce_control *ctl);

/* Accepts connections and reads what runtimes sent; calls done() for each answer. */
void dacce_control_serve(struct dacce_control *ctl,
			 void (*done)(void *arg, uint32_t pid, int result, uint64_t epoch),
			 void *arg);

/* Whether the runtime of pid is connected. */
int dacce_control_connected(const struct dacce_control *ctl, uint32_t pid);

/* Asks the runtime of pid for an epoch with these hints (at most DACCE_CONTROL_MAX_HINTS). */
int dacce_control_request_epoch(struct dacce_control *ctl, uint32_t pid,
				const struct dacce_control_hint *hints, uint32_t n_hints);

#endif
