// SPDX-License-Identifier: MIT
/*
 * Program code first reached from a library, interrupted inside a library it
 * calls: a qsort comparator that no instrumented code has called raises a
 * signal (libc's raise), and the handler probes.  Natively the handler's
 * stack runs through the signal frame, raise, the comparator and qsort:
 * "outside", so the runtime must say partial.  A comparator left
 * uninstrumented would make the interrupted pc (in raise) read as inside the
 * program's last call out, qsort from main, and the handler's context would
 * be main's: a wrong one.  The watched entries (runtime/entries.h) decode
 * the comparator before it runs.  The same through a second program
 * function the comparator calls, and a bsearch callback calling the handler
 * directly, for a callback's own calls.
 */
#include <signal.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static void in_handler(void)
{
	probe("handler");
	sink++;
}

static void handler(int sig)
{
	(void)sig;
	in_handler();
	sink++;
}

NOINLINE static void raise_from_helper(void)
{
	raise(SIGUSR1);
	sink++;
}

static int compare(const void *a, const void *b)
{
	static int calls;
	int x = *(const int *)a, y = *(const int *)b;

	++calls;
	if (calls == 1)
		raise(SIGUSR1);
	else if (calls == 2)
		raise_from_helper();
	return (x > y) - (x < y);
}

static int find(const void *key, const void *member)
{
	int x = *(const int *)key, y = *(const int *)member;

	if (x == y)
		in_handler();
	return (x > y) - (x < y);
}

int main(void)
{
	int values[] = { 5, 3, 9, 1, 7 }, key = 7;

	signal(SIGUSR1, handler);
	qsort(values, 5, sizeof(values[0]), compare);
	if (!bsearch(&key, values, 5, sizeof(values[0]), find))
		return 1;
	probe("main");
	printf("sorted %d %d %d\n", values[0], values[4], sink);
	return 0;
}
