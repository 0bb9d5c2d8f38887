// SPDX-License-Identifier: MIT
/*
 * forkhandlers.c's library: it registers fork handlers in its constructor,
 * before the runtime registers its own, so in a fork child its child handler
 * runs first, while the runtime still holds what it took for the fork.  Each
 * handler calls functions of the library nobody has called yet (their first
 * entries trap there), and the child's handler makes first calls too.
 */
#include <pthread.h>

#include "forkhandlers.h"

#define NOINLINE __attribute__((noinline))

static struct fork_counts counts;
static volatile int sink;

NOINLINE static int count_up(int *counter, int by)
{
	*counter += by;
	return *counter;
}

NOINLINE static int in_prepare(void)
{
	return count_up(&counts.prepare, 1);
}

NOINLINE static int in_parent(void)
{
	return count_up(&counts.parent, 1);
}

NOINLINE static int child_again(int n)
{
	return n ? child_again(n - 1) + 1 : 0;
}

NOINLINE static int in_child(void)
{
	return count_up(&counts.child, child_again(2) - 1);
}

static void on_prepare(void)
{
	sink += in_prepare();
}

static void on_parent(void)
{
	sink += in_parent();
}

static void on_child(void)
{
	sink += in_child();
}

__attribute__((constructor)) static void register_handlers(void)
{
	pthread_atfork(on_prepare, on_parent, on_child);
}

void lib_fork_counts(struct fork_counts *out)
{
	*out = counts;
}

NOINLINE int lib_work(int depth)
{
	if (depth == 0) {
		probe("lib-work");
		return 1;
	}
	return lib_work(depth - 1) + 1;
}
