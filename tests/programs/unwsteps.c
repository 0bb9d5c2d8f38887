// SPDX-License-Identifier: MIT
// flags: -lunwind
// libunwind (libunwind.so.8) walking the program's own stack under the runtime sees the frames
// of the native run: unw_backtrace, and a walk step by step with unw_init_local/unw_step/
// unw_get_reg (as gperftools' profiler and crash reporters do), at the places of
// walkplaces.h (a chain, recursion, a tail call, a comparator, a handler, a thread).  Each
// frame of the stepped walk also prints how far its stack pointer is from the frame before it
// (when both are the program's), so a step that went on with the wrong registers shows.
// Under the runtime a frame's return address is generated code's, where libunwind finds no
// unwind information: the walk goes astray or stops.  The runtime's own frames (its wrappers
// under main, thread start routines and handlers) must not show, and the walks must leave the
// stack as they found it (the probes after each check the contexts).
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdbool.h>

#include "walkplaces.h"

#define NOINLINE __attribute__((noinline))
#define MAX_FRAMES 4096

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

static NOINLINE void walk_here(const char *tag)
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

int main(void)
{
	return walk_everywhere(300);
}
