// SPDX-License-Identifier: MIT
/*
 * A qsort comparator calls probe() before the program ever called it through
 * an instrumented edge.  probe() and probe_take() are then not instrumented,
 * so dacce_backtrace() (and, in a second comparison, dacce_context_get()) is
 * reached from code the runtime never saw while the thread's ccStack top is
 * still the boundary edge main -> qsort.  Natively the stack runs through
 * libc ("outside"), so the runtime must answer partial, not the context of
 * the qsort call.  Then the same calls from instrumented code, where the
 * answer must be exact again, including dacce_backtrace reached by a tail
 * jump (at -O2), which returns through the runtime's tail stub.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

/* struct dacce_context: include/dacce.h, through probe.h */
typedef int (*get_fn)(struct dacce_context *);
typedef int (*decode_fn)(const struct dacce_context *, void **, int);

static probe_backtrace_fn volatile backtrace_fn;

/* The one call site of dacce_context_get or backtrace; frame 0 (its own call) left out. */
NOINLINE static void snapshot(const char *tag)
{
	get_fn get = (get_fn)dlsym(RTLD_DEFAULT, "dacce_context_get");
	decode_fn decode = (decode_fn)dlsym(RTLD_DEFAULT, "dacce_context_decode");
	static struct dacce_context ctx;
	void *frames[64];
	int n;

	if (get)
		n = get(&ctx) < 0 ? -1 : decode(&ctx, frames, 64);
	else
		n = backtrace(frames, 64);
	probe_print(tag, frames + 1, n < 0 ? n : n - 1);
}

/* A tail jump to the backtrace function at -O2: frame 0 is then our caller's. */
NOINLINE static int take_by_tail(void **frames, int max)
{
	return backtrace_fn(frames, max);
}

static int compare(const void *a, const void *b)
{
	static int calls;
	int x = *(const int *)a, y = *(const int *)b;

	++calls;
	if (calls == 1)
		probe("compare-first");
	else if (calls == 2)
		snapshot("compare-snapshot");
	return (x > y) - (x < y);
}

int main(void)
{
	int values[] = { 5, 3, 9, 1, 7 };
	void *frames[64];
	probe_backtrace_fn dacce = (probe_backtrace_fn)dlsym(RTLD_DEFAULT, "dacce_backtrace");

	qsort(values, 5, sizeof(values[0]), compare);
	probe("main");
	snapshot("main-snapshot");
	backtrace_fn = dacce ? dacce : backtrace;
	probe_print("main-tail", frames, take_by_tail(frames, 64));
	printf("sorted %d %d\n", values[0], values[4]);
	return 0;
}
