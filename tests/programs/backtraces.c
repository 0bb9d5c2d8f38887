// SPDX-License-Identifier: MIT
// glibc's backtrace() under the runtime returns the frames of the native run (it is interposed:
// the stack is shown to the unwinder with original return addresses, then put back), at the
// places of walkplaces.h (a deep chain, recursion, a frame left by a tail call, a qsort
// comparator, a signal handler and a thread); and the program goes on returning through its
// trampolines afterwards (the probes after each check the contexts).  libgcc's
// _Unwind_Backtrace, which programs call to walk their own stacks, is interposed the same way:
// each place also prints the frames a direct walk with it sees.  Frames outside the program
// are counted too: the runtime's own wrappers (under main, thread start routines, handlers)
// must not show.
#include <unwind.h>

#include "walkplaces.h"

#define NOINLINE __attribute__((noinline))

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

static NOINLINE void walk_here(const char *tag)
{
	void *frames[4096];
	struct walk w = { .frames = frames, .max = 4096 };
	char unwind_tag[64];

	show_walk(tag, frames, backtrace(frames, 4096));
	_Unwind_Backtrace(walk_frame, &w);
	snprintf(unwind_tag, sizeof(unwind_tag), "%s, _Unwind_Backtrace", tag);
	show_walk(unwind_tag, frames, w.n);
}

int main(void)
{
	return walk_everywhere(1000);
}
