/* SPDX-License-Identifier: MIT */
/*
 * Probe points for the runtime's integration programs.  probe() prints the
 * calling context as return addresses relative to the program's load
 * address: natively from glibc's backtrace(), under the runtime from
 * dacce_backtrace().  tests/run-programs.sh runs each program both ways and
 * compares the outputs line by line.
 *
 * A native stack that passes through a library (a callback) cannot be
 * reconstructed from the program's own code: such lines read "outside"
 * natively and must read "partial" under the runtime (never a wrong context).
 *
 * A program whose library, linked at start, is instrumented as well defines
 * PROBE_LIBRARY (a file name prefix, such as "libfoo-") before including
 * this file, in the program and in the library alike: frames in a module
 * whose file name starts with it then count as the program's, printed as
 * "L" and the offset from that module's load address.
 */
#ifndef DACCE_PROBE_H
#define DACCE_PROBE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../include/dacce.h"

#ifdef PROBE_LIBRARY
#include <sys/auxv.h>
#endif

typedef int (*probe_backtrace_fn)(void **, int);

#define PROBE_MAX 200000
#define PROBE_PRINT_MAX 64

#ifdef PROBE_LIBRARY
#define PROBE_IN_EXECUTABLE 1
#define PROBE_IN_LIBRARY 2

/* Where addr lies: the executable, PROBE_LIBRARY, or (0) another module. */
static int probe_module(void *addr)
{
	static void *program_base;
	const char *name;
	Dl_info info;

	if (!program_base) {
		Dl_info self;

		/* The executable's entry point: this copy of probe.h may be the library's. */
		if (dladdr((void *)getauxval(AT_ENTRY), &self))
			program_base = self.dli_fbase;
	}
	if (!dladdr(addr, &info))
		return 0;
	if (info.dli_fbase == program_base)
		return PROBE_IN_EXECUTABLE;
	if (!info.dli_fname)
		return 0;
	name = strrchr(info.dli_fname, '/');
	name = name ? name + 1 : info.dli_fname;
	return strncmp(name, PROBE_LIBRARY, strlen(PROBE_LIBRARY)) == 0 ? PROBE_IN_LIBRARY : 0;
}

/* Whether addr lies in the program itself: the executable or PROBE_LIBRARY. */
static int probe_in_program(void *addr)
{
	return probe_module(addr) != 0;
}
#else
/* Whether addr lies in the program itself (not a library). */
static int probe_in_program(void *addr)
{
	static void *program_base;
	Dl_info info;

	if (!program_base) {
		Dl_info self;

		if (dladdr((void *)&probe_in_program, &self))
			program_base = self.dli_fbase;
	}
	return dladdr(addr, &info) && info.dli_fbase == program_base;
}
#endif

static uintptr_t probe_offset(void *addr)
{
	Dl_info info;

	if (!dladdr(addr, &info))
		return (uintptr_t)addr;
	return (uintptr_t)addr - (uintptr_t)info.dli_fbase;
}

#ifdef PROBE_LIBRARY
/* Appends addr's frame to line at len: " offset", or " Loffset" in PROBE_LIBRARY. */
static int probe_append(char *line, size_t size, int len, void *addr)
{
	const char *format = probe_module(addr) == PROBE_IN_LIBRARY ? " L%lx" : " %lx";

	return len + snprintf(line + len, size - (size_t)len, format, (unsigned long)probe_offset(addr));
}

/* What a deep stack's hash takes of a frame: its offset, marked for PROBE_LIBRARY's. */
static unsigned long long probe_hash_key(void *addr)
{
	unsigned long long mark = probe_module(addr) == PROBE_IN_LIBRARY ? 1ULL << 63 : 0;

	return probe_offset(addr) ^ mark;
}

#define PROBE_APPEND(line, len, addr) ((len) = probe_append(line, sizeof(line), len, addr))
#define PROBE_HASH_KEY(addr) probe_hash_key(addr)
#else
/* The code of before PROBE_LIBRARY, token for token: other programs' layouts do not move. */
#define PROBE_APPEND(line, len, addr) \
	len += snprintf(line + len, sizeof(line) - (size_t)len, " %lx", (unsigned long)probe_offset(addr))
#define PROBE_HASH_KEY(addr) probe_offset(addr)
#endif

/*
 * The one call site of backtrace() or dacce_backtrace(): frame 0, the return
 * address of that call, is then the same address natively and under the runtime.
 */
static __attribute__((noinline)) int probe_take(void **frames, int max, int *native)
{
	/* Looked up at run time: a weak reference would be bound to 0 in a non-PIE program. */
	probe_backtrace_fn dacce = (probe_backtrace_fn)dlsym(RTLD_DEFAULT, "dacce_backtrace");
	probe_backtrace_fn volatile bt = dacce ? dacce : backtrace;
	int n = bt(frames, max);

	*native = dacce == NULL;
	return n;
}

/*
 * Prints "tag: off off ..." up to the first frame outside the program; when
 * program frames follow outside ones (other than the final _start), the
 * native stack went through a library: "tag: outside".  Deep stacks print a
 * count and a hash of every frame.  One line per stdio call, so threads do
 * not interleave.
 */
/* Prints frames[0..n) as probe() does; n < 0 reads "partial". */
static void probe_print(const char *tag, void **probe_frames, int n)
{
	unsigned long long hash = 1469598103934665603ULL;
	char line[PROBE_PRINT_MAX * 20 + 64];
	int end, len;

	if (n < 0) {
		printf("%s: partial\n", tag);
		return;
	}
	for (end = 0; end < n && probe_in_program(probe_frames[end]); end++)
		;
	for (int i = end; i < n - 1; i++) {
		if (probe_in_program(probe_frames[i])) {
			printf("%s: outside\n", tag);
			return;
		}
	}
	if (end > PROBE_PRINT_MAX) {
		for (int i = 0; i < end; i++)
			hash = (hash ^ PROBE_HASH_KEY(probe_frames[i])) * 1099511628211ULL;
		printf("%s: %d frames, hash %llx\n", tag, end, hash);
		return;
	}
	len = snprintf(line, sizeof(line), "%s:", tag);
	for (int i = 0; i < end; i++)
		PROBE_APPEND(line, len, probe_frames[i]);
	printf("%s\n", line);
}

static __attribute__((noinline)) void probe(const char *tag)
{
	void **probe_frames = (void **)malloc(PROBE_MAX * sizeof(void *)); /* per call: threads */
	int native, n = probe_frames ? probe_take(probe_frames, PROBE_MAX, &native) : -1;

	probe_print(tag, probe_frames, n);
	free(probe_frames);
}

/*
 * For signal handlers: the native stack runs through the kernel's signal
 * trampoline and libc (raise) between the handler and the interrupted code.
 * Keeps only the program's frames (natively also dropping the last one,
 * _start, which the context does not include) and prints them.
 */
/* Prints the program's frames of n taken ones; natively without _start and without drop. */
static void probe_print_program(const char *tag, void **frames, int n, int native,
				const void *drop)
{
	char line[256 * 20 + 64];
	int len;

	if (n < 0) {
		printf("%s: partial\n", tag);
		return;
	}
	if (native)
		n--; /* _start */
	len = snprintf(line, sizeof(line), "%s:", tag);
	for (int i = 0; i < n; i++)
		if (probe_in_program(frames[i]) && !(native && drop && frames[i] == drop))
			PROBE_APPEND(line, len, frames[i]);
	printf("%s\n", line);
}

static __attribute__((noinline)) void probe_through(const char *tag)
{
	void *frames[256];
	int native, n = probe_take(frames, 256, &native);

	probe_print_program(tag, frames, n, native, NULL);
}

/*
 * As probe_through, for a fault in the program's own code (interrupted at
 * pc): glibc's backtrace() shows the signal trampoline and the interrupted
 * pc itself below the handler's frames, and so does dacce_backtrace; a
 * list without pc says so.
 */
static __attribute__((noinline)) void probe_fault_at(const char *tag, void *pc)
{
	void *frames[256];
	int native, n = probe_take(frames, 256, &native), found = 0;

	for (int i = 0; i < n; i++)
		found |= frames[i] == pc;
	if (n >= 0 && !found)
		printf("%s: no frame at the fault\n", tag);
	probe_print_program(tag, frames, n, native, NULL);
}

/* Milliseconds of CLOCK_MONOTONIC, for programs that wait a bounded time. */
static __attribute__((unused)) long probe_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

typedef int (*probe_context_get_fn)(struct dacce_context *);

/* The runtime's dacce_context_get, or NULL natively (looked up, as probe_take does). */
static __attribute__((unused)) probe_context_get_fn probe_context_get(void)
{
	return (probe_context_get_fn)dlsym(RTLD_DEFAULT, "dacce_context_get");
}

/* The epoch the thread's context is in (0 natively): for programs waiting for a re-encoding. */
static __attribute__((unused)) uint64_t probe_epoch_now(probe_context_get_fn get)
{
	struct dacce_context ctx;

	return get && get(&ctx) == 0 ? ctx.epoch : 0;
}

#endif
