// SPDX-License-Identifier: MIT
/*
 * Exit handlers: atexit handlers (one registered from inside another while
 * exit runs them), an on_exit handler and a destructor function, all probing
 * and calling program functions that ran instrumented before.  exit() is
 * called from three calls deep, so natively the handlers' stacks run through
 * libc down to main ("outside": partial under the runtime; after main
 * returns, the runtime reads partial where the native stack starts in libc,
 * so main does not return here).  Probes before exit must be exact, and the
 * exit status must survive.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static int order[16], n_order;

NOINLINE static int helper(int depth)
{
	if (depth == 0) {
		probe("helper");
		return 1;
	}
	return helper(depth - 1) + 1 + sink;
}

static void late(void)
{
	order[n_order++] = 4;
	probe("late-handler");
	printf("late handler ran after %d others\n", n_order - 1);
}

static void first_registered(void)
{
	order[n_order++] = 3;
	probe("first-registered");
	helper(2);
}

static void second_registered(void)
{
	order[n_order++] = 2;
	atexit(late); /* registered while exit is running the list: runs next */
	probe("second-registered");
}

static void with_status(int status, void *arg)
{
	order[n_order++] = 1;
	probe("on-exit");
	printf("on_exit: status %d, arg %s\n", status, (const char *)arg);
}

__attribute__((destructor)) static void destructor(void)
{
	probe("destructor");
	helper(3);
	printf("destructor: handler order");
	for (int i = 0; i < n_order; i++)
		printf(" %d", order[i]);
	printf("\n");
	fflush(stdout);
}

NOINLINE static void leave(int status)
{
	probe("leave");
	helper(1);
	fflush(stdout);
	exit(status);
}

NOINLINE static void work(int status)
{
	probe("work");
	leave(status + 2);
}

NOINLINE static void setup(void)
{
	atexit(first_registered);
	probe("setup");
}

int main(void)
{
	static char arg[] = "hello";

	setup();
	atexit(second_registered);
	on_exit(with_status, arg);
	helper(4);
	work(1);
	probe("not-reached");
	return 0;
}
