// SPDX-License-Identifier: MIT
#include "perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env.h"

/*
 * The map's descriptor, and the file it names.  A program may close every
 * descriptor it did not open (ssh's closefrom) and get the number again for
 * a file of its own: each write first checks the number still names our
 * file, and opens it again (appending) when it does not.
 */
static int map_fd = -1;
static dev_t map_dev;
static ino_t map_ino;
static pid_t map_pid;
static off_t size_at_fork;

static void path_of(pid_t pid, char *path, size_t len)
{
	snprintf(path, len, "/tmp/perf-%d.map", (int)pid);
}

static int open_map(pid_t pid, int flags)
{
	struct stat st;
	char path[64];
	int fd;

	path_of(pid, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | flags, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	map_fd = fd;
	map_dev = st.st_dev;
	map_ino = st.st_ino;
	map_pid = pid;
	return 0;
}

static int open_fresh(pid_t pid)
{
	return open_map(pid, O_TRUNC);
}

static bool still_ours(void)
{
	struct stat st;

	return map_fd >= 0 && fstat(map_fd, &st) == 0 && st.st_dev == map_dev &&
	       st.st_ino == map_ino;
}

int dacce_perfmap_start(void)
{
	const char *on = dacce_env("DACCE_PERF_MAP");

	if (!on || !*on || strcmp(on, "0") == 0)
		return 0;
	return open_fresh(getpid());
}

/* Whole lines or nothing: a reader never sees half a line. */
static void write_all(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t done = write(map_fd, buf, len);

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0)
			return;
		buf += done;
		len -= (size_t)done;
	}
}

bool dacce_perfmap_on(void)
{
	return map_fd >= 0;
}

void dacce_perfmap_add(uintptr_t start, size_t len, const char *name)
{
	char line[256];
	int n;

	if (map_fd < 0 || len == 0)
		return;
	/* Closed behind our back: opened again, the number left to the program. */
	if (!still_ours() && open_map(map_pid, 0) != 0)
		return;
	n = snprintf(line, sizeof(line), "%lx %zx %s\n", (unsigned long)start, len, name);
	if (n > 0 && (size_t)n < sizeof(line))
		write_all(line, (size_t)n);
}

void dacce_perfmap_before_fork(void)
{
	struct stat st;

	size_at_fork = still_ours() && fstat(map_fd, &st) == 0 ? st.st_size : 0;
}

void dacce_perfmap_after_fork_child(void)
{
	char path[64], buf[4096];
	pid_t parent = map_pid;
	off_t left = size_at_fork;
	ssize_t got;
	int from, saved_errno = errno;

	if (map_fd < 0)
		return;
	if (still_ours())
		close(map_fd);
	map_fd = -1;
	if (open_fresh(getpid()))
		goto out;
	path_of(parent, path, sizeof(path));
	from = open(path, O_RDONLY | O_CLOEXEC);
	if (from < 0)
		goto out;
	/* What the parent made after the fork is not in this process. */
	while (left > 0 && (got = read(from, buf, left < (off_t)sizeof(buf) ? (size_t)left
									  : sizeof(buf))) > 0) {
		write_all(buf, (size_t)got);
		left -= got;
	}
	close(from);
out:
	errno = saved_errno;
}
