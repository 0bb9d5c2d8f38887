// SPDX-License-Identifier: MIT
/*
 * pthread_exit, interposed: glibc leaves by unwinding the thread's frames
 * (forced unwinding to the frame that started it), so no patched return
 * ever pops what those frames pushed.  Without this the thread's context
 * would go on naming the frames it left: a sample after main's
 * pthread_exit read "main called pthread_exit" while main's frame was gone
 * (caught by `dacce launch --validate` on tests/programs/lastthread.c).
 * From the call on, the thread is outside any context, as after main
 * returns: cleanup handlers and TLS destructors it runs read partial.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "rt.h"

typedef void (*pthread_exit_fn)(void *);

__attribute__((visibility("default"), noreturn)) void pthread_exit(void *retval)
{
	pthread_exit_fn real = (pthread_exit_fn)dlsym(RTLD_NEXT, "pthread_exit");

	if (!real)
		abort(); /* no libc to leave the thread with */
	if (dacce_rt_enabled())
		dacce_rt_thread_outside();
	real(retval);
	__builtin_unreachable();
}
