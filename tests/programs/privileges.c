// SPDX-License-Identifier: MIT
/*
 * A fork child that drops its privileges (as a service does before exec)
 * and then calls code never called before: the runtime may no longer open
 * its own memory to patch it, and must still instrument it.  (Run as root,
 * as CI is; otherwise setuid fails the same way natively and under the
 * runtime.)
 */
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

static __attribute__((noinline)) int never_called_before(int x)
{
	probe("child-after-setuid");
	return x * 3;
}

static __attribute__((noinline)) int in_child(int x)
{
	return never_called_before(x) + 1;
}

int main(void)
{
	pid_t child;
	int status;

	fflush(stdout);
	child = fork();
	if (child == 0) {
		if (setuid(65534) != 0)
			printf("setuid failed\n");
		printf("child %d\n", in_child(2));
		fflush(stdout);
		_exit(0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child)
		return 1;
	probe("parent");
	printf("child status %d\n", WEXITSTATUS(status));
	return 0;
}
