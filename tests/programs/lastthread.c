// SPDX-License-Identifier: MIT
/*
 * main ends with pthread_exit and a thread it made finishes later: the
 * process must end with status 0 when that last thread does (glibc's rule),
 * although the runtime keeps a thread of its own.  Memory patched after the
 * leader is gone must still be writable (a first call in the worker).
 */
#include <pthread.h>
#include <unistd.h>

#include "probe.h"

static __attribute__((noinline)) void late_first_call(void)
{
	probe("worker-after-main");
}

static void *worker(void *unused)
{
	(void)unused;
	usleep(100000); /* main has left by now */
	late_first_call();
	return NULL;
}

int main(void)
{
	pthread_t thread;

	if (pthread_create(&thread, NULL, worker, NULL))
		return 1;
	probe("main");
	pthread_exit(NULL);
}
