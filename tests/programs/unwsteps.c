// SPDX-License-Identifier: MIT
// flags: -lunwind
// libunwind (libunwind.so.8) walking the program's own stack under the runtime sees the frames
// of the native run: unw_backtrace, and a walk step by step with unw_init_local/unw_step/
// unw_get_reg (as gperftools' profiler and crash reporters do), through a deep chain,
// recursion, a frame left by a tail call, a qsort comparator, a signal handler and a thread.
// Each frame of the stepped walk also prints how far its stack pointer is from the frame
// before it (when both are the program's), so a step that went on with the wrong registers
// shows.  Under the runtime, a frame's
// return address is generated code's; natively libunwind finds no unwind information there
// and the walk goes astray or stops.  The runtime's own frames (its wrappers under main,
// thread start routines and handlers) must not show; the probes of probe.h check the
// contexts after each walk (the walks must leave the stack as they found it).
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define MAX_FRAMES 4096

static volatile int sink;

/* The program's frames of a walk, from the caller out to _start, and how many others. */
static NOINLINE void show_walk(const char *tag, void **frames, const uintptr_t *sps, int n)
{
	static char line[4096 * 16];
	int len, kept = 0, others = 0;
	unsigned long long hash = 1469598103934665603ULL;

	len = snprintf(line, sizeof(line), "%s:", tag);
	for (int i = 0; i < n; i++) {
		/* Only between two frames of the program: the runtime's wrappers take stack too. */
		bool delta = sps && i > 0 && probe_in_program(frames[i - 1]);

		if (!probe_in_program(frames[i])) {
			others++;
			continue;
		}
		hash = (hash ^ probe_offset(frames[i])) * 1099511628211ULL;
		if (delta)
			hash = (hash ^ (sps[i] - sps[i - 1])) * 1099511628211ULL;
		if (++kept > 24)
			continue;
		len += snprintf(line + len, sizeof(line) - (size_t)len, " %lx",
				(unsigned long)probe_offset(frames[i]));
		if (delta)
			len += snprintf(line + len, sizeof(line) - (size_t)len, "+%lu",
					(unsigned long)(sps[i] - sps[i - 1]));
	}
	printf("%s (%d frames, hash %llx; %d outside the program)\n", line, kept, hash, others);
}

static NOINLINE void show(const char *tag)
{
	static void *frames[MAX_FRAMES];
	static uintptr_t sps[MAX_FRAMES];
	char step_tag[64];
	unw_context_t uc;
	unw_cursor_t cursor;
	int n = 0;

	show_walk(tag, frames, NULL, unw_backtrace(frames, MAX_FRAMES));
	unw_getcontext(&uc);
	if (unw_init_local(&cursor, &uc) == 0) {
		do {
			unw_word_t ip, sp;

			if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 ||
			    unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0)
				break;
			frames[n] = (void *)ip;
			sps[n++] = sp;
		} while (n < MAX_FRAMES && unw_step(&cursor) > 0);
	}
	snprintf(step_tag, sizeof(step_tag), "%s, unw_step", tag);
	/* The first frame is this function's own, as natively. */
	show_walk(step_tag, frames, sps, n);
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
	sink += recurse(300);
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
