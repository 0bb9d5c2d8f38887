// SPDX-License-Identifier: MIT
// glibc's backtrace() under the runtime returns the frames of the native run (it is interposed:
// the stack is shown to the unwinder with original return addresses, then put back), through
// a deep chain, recursion, a frame left by a tail call, a qsort comparator, a signal handler
// and a thread; and the program goes on returning through its trampolines afterwards (the
// probes of probe.h check the contexts after each).  libgcc's _Unwind_Backtrace, which
// programs call to walk their own stacks, is interposed the same way: each place also
// prints the frames a direct walk with it sees.  Frames outside the program are counted too:
// the runtime's own wrappers (under main, thread start routines, handlers) must not show.
#include <pthread.h>
#include <signal.h>
#include <unwind.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

struct walk {
	void **frames;
	int n, max;
};

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;

	if (w->n == w->max)
		return _URC_END_OF_STACK;
	w->frames[w->n++] = (void *)_Unwind_GetIP(ctx);
	return _URC_NO_REASON;
}

/* The program's frames of a backtrace(), from the caller out to _start. */
static NOINLINE void show_walk(const char *tag, void **frames, int n)
{
	char line[4096 * 8];
	int len, kept = 0, others = 0;
	unsigned long long hash = 1469598103934665603ULL;

	len = snprintf(line, sizeof(line), "%s:", tag);
	for (int i = 0; i < n; i++) {
		if (!probe_in_program(frames[i])) {
			others++;
			continue;
		}
		hash = (hash ^ probe_offset(frames[i])) * 1099511628211ULL;
		if (++kept <= 24)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %lx",
					(unsigned long)probe_offset(frames[i]));
	}
	printf("%s (%d frames, hash %llx; %d outside the program)\n", line, kept, hash, others);
}

static NOINLINE void show(const char *tag)
{
	void *frames[4096];
	struct walk w = { .frames = frames, .max = 4096 };
	char unwind_tag[64];

	show_walk(tag, frames, backtrace(frames, 4096));
	_Unwind_Backtrace(walk_frame, &w);
	snprintf(unwind_tag, sizeof(unwind_tag), "%s, _Unwind_Backtrace", tag);
	show_walk(unwind_tag, frames, w.n);
}

NOINLINE static void chain3(void) { show("chain"); sink++; }
NOINLINE static void chain2(void) { chain3(); sink++; }
NOINLINE static void chain1(void) { chain2(); sink++; }

NOINLINE static int recurse(int n)
{
	if (n == 0) {
		show("recursion");
		return 0;
	}
	return recurse(n - 1) + 1 + sink;
}

NOINLINE static int tail_leaf(int x)
{
	show("tail");
	return x + sink;
}

/* A tail call at -O2: this frame is gone when tail_leaf runs (its slot holds the tail stub). */
NOINLINE static int tail_middle(int x) { return tail_leaf(x + 1); }

NOINLINE static int tail_top(int x) { return tail_middle(x) * 2; }

static int shown_in_compare;

NOINLINE static int compare(const void *a, const void *b)
{
	if (!shown_in_compare++)
		show("comparator");
	return *(const int *)a - *(const int *)b;
}

NOINLINE static void sort(void)
{
	int v[] = { 5, 3, 9, 1, 7 };

	qsort(v, 5, sizeof(v[0]), compare);
	sink += v[0];
}

NOINLINE static void on_signal(int sig)
{
	(void)sig;
	show("handler");
}

NOINLINE static void signalled(void)
{
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	sink++;
}

static void *thread_main(void *arg)
{
	(void)arg;
	chain1();
	return NULL;
}

NOINLINE static void threaded(void)
{
	pthread_t t;

	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
}

int main(void)
{
	chain1();
	probe("after-chain");
	sink += recurse(1000);
	probe("after-recursion");
	sink += tail_top(1);
	probe("after-tail");
	sort();
	probe("after-comparator");
	signalled();
	probe("after-handler");
	threaded();
	probe("after-thread");
	return 0;
}
