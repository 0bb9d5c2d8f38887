/* SPDX-License-Identifier: MIT */
/*
 * Descriptors the runtime keeps open on files it reads again and again
 * while the program runs (/proc/self/task, /proc/self/maps).
 *
 * Opening a file takes the lowest free descriptor number.  Opened anew from
 * the policy thread, one of ours would sit for a moment on a number the
 * program just closed, and a program that counts on that number being free
 * (CPython's test_os checks that a closed descriptor gives EBADF) would find
 * a file of ours there.  So each is opened once, at a moment no program
 * thread runs beside the runtime (start-up, a fork child before it goes on),
 * moved to a high number, and checked to still be ours before each use: the
 * program may close every descriptor it did not open (closefrom) and get
 * the number again for a file of its own, and a fork child's copy names the
 * parent's process.  Only then is it opened again.
 */
#ifndef DACCE_RT_KEPTFD_H
#define DACCE_RT_KEPTFD_H

#include <sys/types.h>

/* Where kept descriptors go: above what programs commonly use. */
#define DACCE_KEPT_FD_FLOOR 512

/* Zeroed: not open yet. */
struct dacce_kept_fd {
	int fd;
	pid_t pid;	/* the process that opened it; 0: none */
	dev_t dev;
	ino_t ino;
};

/*
 * The descriptor of PATH (opened with FLAGS | O_CLOEXEC), opened again when
 * it is missing, no longer ours, or inherited across fork.  Returns it, or a
 * negative errno.
 */
int dacce_kept_fd_get(struct dacce_kept_fd *kept, const char *path, int flags);

/* Closes the descriptor if it is still ours, and forgets it. */
void dacce_kept_fd_close(struct dacce_kept_fd *kept);

/* FD moved to DACCE_KEPT_FD_FLOOR or above (FD itself when there is no room). */
int dacce_fd_move_high(int fd);

#endif
