// SPDX-License-Identifier: MIT
/*
 * pthread_exit, interposed: glibc leaves by unwinding the thread's frames
 * (forced unwinding to the frame that started it), so no patched return
 * ever pops what those frames pushed.  Without this the thread's context
 * would go on naming the frames it left: a sample after main's
 * pthread_exit read "main called pthread_exit" while main's frame was gone
 * (caught by `dacce launch --validate` on tests/programs/lastthread.c).
 * From the call on, the thread is outside any context, as after main
 * returns: cleanup handlers and TLS destructors it runs read partial
 * (the runtime gives a handler that pthread_cleanup_push registered its
 * frame's context back, runtime/jumps.c, until it unwinds on).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "rt.h"
#include "exceptions.h"

typedef void (*pthread_exit_fn)(void *);
typedef void (*unwind_next_fn)(__pthread_unwind_buf_t *);

__attribute__((visibility("default"), noreturn)) void pthread_exit(void *retval)
{
	pthread_exit_fn real = (pthread_exit_fn)dlsym(RTLD_NEXT, "pthread_exit");

	if (!real)
		abort(); /* no libc to leave the thread with */
	if (dacce_rt_enabled()) {
		dacce_rt_thread_outside();
		/* glibc unwinds the frames: C++ destructors above a trampoline must run too. */
		dacce_unwind_show_native(DACCE_UNWIND_EXIT);
	}
	real(retval);
	__builtin_unreachable();
}

/*
 * What pthread_cleanup_pop's cancellation path calls after running a cleanup
 * handler, to go on unwinding: the runtime put the context of the handler's
 * frame back when glibc jumped there (a second return of its setjmp site),
 * and that frame is about to go too.
 */
__attribute__((visibility("default"), noreturn)) void
__pthread_unwind_next(__pthread_unwind_buf_t *buf)
{
	unwind_next_fn real = (unwind_next_fn)dlsym(RTLD_NEXT, "__pthread_unwind_next");

	if (!real)
		abort();
	if (dacce_rt_enabled())
		dacce_rt_thread_outside();
	real(buf);
	__builtin_unreachable();
}
