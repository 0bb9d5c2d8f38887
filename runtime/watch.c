// SPDX-License-Identifier: MIT
#include "watch.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "keptfd.h"
#include "thread_registry.h"

static struct dacce_kept_fd tasks;
/* The main thread's stat: the one other thread when the kernel counts two. */
static struct dacce_kept_fd leader_stat;

static int leader_stat_fd(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)getpid());
	return dacce_kept_fd_get(&leader_stat, path, O_RDONLY);
}

void dacce_watch_open(void)
{
	(void)dacce_threads_in_process_kept(&tasks);
	(void)leader_stat_fd();
}

int dacce_watch_threads(void)
{
	return dacce_threads_in_process_kept(&tasks);
}

/*
 * The kernel lists the thread group's leader (the main thread, or the
 * thread that forked a child) until the whole process ends, a zombie once it
 * has exited: so with two counted, the other one is the leader.  Its state
 * follows the command name in stat: Z and X have exited.  Read from offset
 * 0, the file is made anew.
 */
bool dacce_watch_alone(int threads)
{
	char stat[512], *close_paren;
	int fd;
	ssize_t n;

	if (threads != 2 || getpid() == gettid())
		return false;
	fd = leader_stat_fd();
	if (fd < 0)
		return false;
	n = pread(fd, stat, sizeof(stat) - 1, 0);
	if (n <= 0)
		return false;
	stat[n] = '\0';
	close_paren = strrchr(stat, ')');
	return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}
