// SPDX-License-Identifier: MIT
/*
 * Context-sensitive logging (include/dacce.h): contexts taken with
 * dacce_context_get at many points, kept, and decoded only at the end, after
 * the runtime may have re-encoded many times; each must equal what glibc's
 * backtrace() said at that point in the native run.  Includes a context
 * deeper than a snapshot keeps (recursion 2,000 deep, through an indirect
 * call so that every level is a ccStack entry): only its innermost frames
 * decode, and those must match.
 */
#include <unistd.h>

#include "probe.h"

#define MAX_LOGS 64
#define DEEP 2000
#define FRAMES 64

/* struct dacce_context: include/dacce.h, through probe.h */
typedef int (*get_fn)(struct dacce_context *);
typedef int (*decode_fn)(const struct dacce_context *, void **, int);

static struct log {
	char tag[32];
	struct dacce_context ctx; /* under the runtime */
	void *frames[FRAMES];	  /* natively */
	int n;
} logs[MAX_LOGS];
static int n_logs;
static get_fn get;

static __attribute__((noinline)) void log_here(const char *tag)
{
	struct log *l = &logs[n_logs++];

	snprintf(l->tag, sizeof(l->tag), "%s", tag);
	if (get)
		l->n = get(&l->ctx);
	else
		l->n = backtrace(l->frames, FRAMES);
}

static int (*volatile next)(int, int);

static __attribute__((noinline)) int deep(int n, int tag)
{
	if (n == 0) {
		char name[32];

		snprintf(name, sizeof(name), "deep-%d", tag);
		log_here(name);
		return 0;
	}
	return next(n - 1, tag) + 1;
}

static __attribute__((noinline)) int work(int round)
{
	char name[32];
	int s = 0;

	for (int i = 0; i < 200; i++)
		s += i % (round + 1);
	snprintf(name, sizeof(name), "work-%d", round);
	log_here(name);
	return s;
}

static __attribute__((noinline)) int rounds(int n)
{
	int s = 0;

	for (int r = 0; r < n; r++) {
		s += r % 2 ? work(r) : deep(5 + r, r);
		usleep(3000); /* time for re-encodings between snapshots (DACCE_EPOCH_STRESS) */
	}
	return s;
}

int main(void)
{
	decode_fn decode = (decode_fn)dlsym(RTLD_DEFAULT, "dacce_context_decode");
	long sum;

	get = (get_fn)dlsym(RTLD_DEFAULT, "dacce_context_get");
	next = deep;
	sum = rounds(40);
	sum += deep(DEEP, 99);
	/* Truncated natively the same way: only the frames a snapshot's entries determine. */
	for (int i = 0; i < n_logs; i++) {
		void *frames[FRAMES];
		int n = logs[i].n;

		if (decode)
			n = logs[i].n < 0 ? -1 : decode(&logs[i].ctx, frames, FRAMES);
		else
			memcpy(frames, logs[i].frames, sizeof(frames));
		/* The deep one: compare the innermost frames either way. */
		if (strcmp(logs[i].tag, "deep-99") == 0 && n > 40)
			n = 40;
		/* Frame 0 is log_here's own call (to backtrace, or to dacce_context_get): left out. */
		probe_print(logs[i].tag, frames + 1, n < 0 ? n : n - 1);
	}
	printf("sum %ld\n", sum);
	return 0;
}
