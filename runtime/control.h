/* SPDX-License-Identifier: MIT */
/*
 * The runtime's end of the control channel (include/dacce_control.h):
 * used only by the policy thread.
 */
#ifndef DACCE_RT_CONTROL_H
#define DACCE_RT_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Reads DACCE_CONTROL.  At start-up, on the main thread, before the
 * program can change its environment.
 */
void dacce_control_configure(void);

/* Connects to the controller named by DACCE_CONTROL; false when there is none. */
bool dacce_control_connect(void);

/* Whether a controller drives re-encoding now. */
bool dacce_control_attached(void);

/*
 * Waits up to ms for the controller to write: true when something is there
 * to take (or the channel closed), false on a timeout or with no controller.
 */
bool dacce_control_wait(long ms);
/*
 * Takes a pending request without waiting: true when the controller asked
 * for an epoch (its hints are then added to the graph's frequencies, under
 * the runtime lock).  A closed channel detaches (the built-in policy resumes).
 */
bool dacce_control_take_request(void);

/* Tells the controller what came of its request. */
void dacce_control_done(int result, uint64_t epoch);

/* In a fork child: the parent's connection is not ours. */
void dacce_control_forget(void);

#endif
