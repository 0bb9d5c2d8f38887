/* SPDX-License-Identifier: MIT */
/*
 * glibc runs faster in a process it believes has one thread: malloc takes
 * no arena lock, mutexes (default and recursive) and glibc's own locks skip
 * their atomic instructions, libstdc++ counts references without them.
 * Starting the policy thread (epoch.c) ends that belief for good: 2 to 3 %
 * of sqlite3's, bash's and perl's time natively, with an idle thread
 * preloaded.  So when glibc believed it before the policy thread started,
 * the runtime makes it believe so again once the thread runs: the program's
 * own threads, if it makes any, end it as they would natively.
 *
 * The price is a rule for the policy thread: from then on it touches
 * nothing that glibc guards that way, since a lock the program's thread
 * takes without atomics would let both in.  It allocates from the runtime's
 * heap, sorts with sort.h, locks with lock.h, writes with write(2) and
 * snprintf (no stdio stream), and calls no dl* function, no malloc of
 * glibc's (strdup, realpath, qsort, opendir) and no stdio.
 */
#ifndef DACCE_RT_SINGLE_THREAD_H
#define DACCE_RT_SINGLE_THREAD_H

#include <stdbool.h>

/* What glibc believed before a thread of the runtime's started. */
struct dacce_single_thread {
	char *own;	 /* glibc's own flag (single_thread.c), NULL: left alone */
	bool one_thread; /* it and the program's copy said one thread */
	bool tcb_clear;	 /* the thread's tcbhead_t.multiple_threads was 0 */
};

/* Notes glibc's belief; DACCE_SINGLE_THREADED=0, or a glibc not known, notes nothing. */
void dacce_single_thread_note(struct dacce_single_thread *before);

/*
 * After the runtime's thread started: glibc's belief as noted, when it
 * believed in one thread and the start alone changed that.  Returns whether
 * it did.
 */
bool dacce_single_thread_restore(const struct dacce_single_thread *before);

#endif
