// SPDX-License-Identifier: MIT
// link: lib
/*
 * Fork handlers of an instrumented library that run before the runtime's
 * (registered first, in the library's constructor): in the child, the
 * library's child handler runs while the runtime is still in its fork work,
 * with its lock held, and meets the traps of functions not decoded yet.
 * Whatever the runtime writes to the program's code then must go to the
 * child's memory: before, it went to the parent's (a descriptor the parent
 * opened), and the child met the same trap forever.  Every child and the
 * parent then go on with exact contexts, through the library too.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "forkhandlers.h"

#define NOINLINE __attribute__((noinline))

NOINLINE static int in_child(int round)
{
	struct fork_counts c;

	lib_fork_counts(&c);
	printf("child %d: handlers prepare %d parent %d child %d\n", round, c.prepare, c.parent,
	       c.child);
	return lib_work(round + 1);
}

NOINLINE static int fork_round(int round)
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		in_child(round);
		fflush(stdout);
		_exit(round + 10);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	probe("parent-after-child");
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
	struct fork_counts c;
	int statuses = 0;

	for (int round = 0; round < 3; round++)
		statuses += fork_round(round);
	lib_fork_counts(&c);
	printf("parent: statuses %d, handlers prepare %d parent %d child %d\n", statuses, c.prepare,
	       c.parent, c.child);
	return lib_work(2) == 3 ? 0 : 1;
}
