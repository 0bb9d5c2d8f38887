// SPDX-License-Identifier: MIT
#include "single_thread.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <stddef.h>
#include <string.h>
#include <sys/single_threaded.h>

#include "env.h"

/*
 * glibc 2.36 keeps the belief in one place of its own (what malloc, the
 * mutexes and pthread_create read: its own definition of
 * __libc_single_threaded, which its hidden alias shares) and, for the
 * program, in the public __libc_single_threaded, which an executable that
 * names it holds a copy of (a copy relocation).  pthread_create clears both,
 * but only while its own still says one thread: so both are put back, or a
 * thread the program makes later would leave the program's copy set.
 * Other versions may keep them apart: glibc's view is then left alone.
 */
static const char *const known_versions[] = { "2.36" };

/*
 * The thread's tcbhead_t.multiple_threads (at %fs:0x18, after tcb, dtv and
 * self), which glibc 2.36 sets in a thread that cancels asynchronously and
 * some system call wrappers test: cleared only if the start set it.
 */
#define TCB_MULTIPLE_THREADS 0x18

static int tcb_multiple_threads(void)
{
	int v;

	__asm__ volatile("movl %%fs:%c1, %0" : "=r"(v) : "i"(TCB_MULTIPLE_THREADS));
	return v;
}

static void clear_tcb_multiple_threads(void)
{
	__asm__ volatile("movl $0, %%fs:%c0" : : "i"(TCB_MULTIPLE_THREADS) : "memory");
}

static bool known_glibc(void)
{
	const char *version = gnu_get_libc_version();

	for (size_t i = 0; i < sizeof(known_versions) / sizeof(known_versions[0]); i++)
		if (strcmp(version, known_versions[i]) == 0)
			return true;
	return false;
}

/* glibc's own definition, which the program's copy (if it has one) is not. */
static char *glibc_own_flag(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	char *own = libc ? dlsym(libc, "__libc_single_threaded") : NULL;

	if (libc)
		dlclose(libc);
	return own;
}

void dacce_single_thread_note(struct dacce_single_thread *before)
{
	const char *setting = dacce_env("DACCE_SINGLE_THREADED");

	*before = (struct dacce_single_thread){ 0 };
	if ((setting && strcmp(setting, "0") == 0) || !known_glibc())
		return;
	before->own = glibc_own_flag();
	before->one_thread = before->own && *before->own && __libc_single_threaded;
	before->tcb_clear = tcb_multiple_threads() == 0;
}

bool dacce_single_thread_restore(const struct dacce_single_thread *before)
{
	/* The start alone must have changed both, as glibc 2.36 does. */
	if (!before->one_thread || *before->own || __libc_single_threaded)
		return false;
	if (before->tcb_clear && tcb_multiple_threads() == 1)
		clear_tcb_multiple_threads();
	__libc_single_threaded = 1;
	*before->own = 1;
	return true;
}
