// SPDX-License-Identifier: MIT
/*
 * fork, then exec of the program itself in the child: the child's code
 * cache is its own (the parent keeps patching after the fork), exec starts
 * the new image clean (no stop signal pending across it), and the parent
 * goes on with its context intact.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

static __attribute__((noinline)) int work(int x)
{
	probe(x ? "parent-work" : "exec-child-work");
	return x + 1;
}

static __attribute__((noinline)) int more_work(int x)
{
	probe("parent-after-fork");
	return work(x) * 2;
}

int main(int argc, char **argv)
{
	pid_t child;
	int status;

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return work(0) == 1 ? 7 : 1;
	work(1);
	fflush(stdout);
	child = fork();
	if (child == 0) {
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		_exit(127);
	}
	if (child < 0)
		return 1;
	more_work(2); /* new code patched in the parent while the child execs */
	if (waitpid(child, &status, 0) != child)
		return 1;
	printf("child status %d\n", WEXITSTATUS(status));
	return 0;
}
