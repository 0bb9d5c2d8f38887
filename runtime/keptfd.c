// SPDX-License-Identifier: MIT
#include "keptfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

int dacce_fd_move_high(int fd)
{
	int high = fcntl(fd, F_DUPFD_CLOEXEC, DACCE_KEPT_FD_FLOOR);

	if (high < 0)
		return fd;
	close(fd);
	return high;
}

static bool still_ours(const struct dacce_kept_fd *kept, pid_t pid)
{
	struct stat st;

	return kept->pid != 0 && kept->pid == pid && fstat(kept->fd, &st) == 0 &&
	       st.st_dev == kept->dev && st.st_ino == kept->ino;
}

/* A fork child closes the copy it inherited too; a number the program took again is left alone. */
void dacce_kept_fd_close(struct dacce_kept_fd *kept)
{
	struct stat st;

	if (kept->pid != 0 && fstat(kept->fd, &st) == 0 && st.st_dev == kept->dev &&
	    st.st_ino == kept->ino)
		close(kept->fd);
	*kept = (struct dacce_kept_fd){ 0 };
}

int dacce_kept_fd_get(struct dacce_kept_fd *kept, const char *path, int flags)
{
	pid_t pid = getpid();
	struct stat st;
	int fd;

	if (still_ours(kept, pid))
		return kept->fd;
	dacce_kept_fd_close(kept);
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fd = dacce_fd_move_high(fd);
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	*kept = (struct dacce_kept_fd){ .fd = fd, .pid = pid, .dev = st.st_dev, .ino = st.st_ino };
	return fd;
}
