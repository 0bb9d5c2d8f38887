// SPDX-License-Identifier: MIT
/*
 * Process and thread start-up, and the public API.
 *
 * __libc_start_main is interposed (the program's _start calls it through
 * the PLT, and LD_PRELOAD puts us first): main becomes the root, and a thin
 * wrapper around it gives the main thread its context.  pthread_create and
 * thrd_create are interposed the same way for thread start routines.  If the runtime cannot
 * start, one line says why and the program runs uninstrumented.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <unistd.h>

#include "dacce.h"
#include "graph.h"
#include "patch.h"
#include "cancel.h"
#include "env.h"
#include "rt.h"
#include "std_thread.h"
#include "thread_registry.h"

typedef int (*main_fn)(int, char **, char **);
typedef int (*libc_start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
				  void (*)(void), void *);
typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*thrd_create_fn)(thrd_t *, thrd_start_t, void *);

/* Interposed: declared here since no header declares them for us. */
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
		      void (*rtld_fini)(void), void *stack_end);

static main_fn program_main;
static uint32_t main_root_edge;

static int main_with_context(int argc, char **argv, char **envp)
{
	int status;

	if (dacce_rt_thread_begin(main_root_edge))
		dacce_rt_log(true, "main thread runs without context");
	status = program_main(argc, argv, envp);
	/* Exit handlers and destructors run outside main's context. */
	dacce_rt_thread_outside();
	return status;
}

__attribute__((visibility("default"))) int
__libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
		  void (*rtld_fini)(void), void *stack_end)
{
	libc_start_main_fn real = (libc_start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
	const char *off = dacce_env("DACCE_OFF");
	int err;

	if (!real)
		abort(); /* no libc to start the program with: nothing sensible to do */
	if (off && *off && strcmp(off, "0") != 0)
		return real(main, argc, argv, init, fini, rtld_fini, stack_end);
	/*
	 * Runtime work: what the runtime's calls reach of the program (its own
	 * malloc, called by libc's qsort or by libdw) runs natively (rt.c).
	 */
	dacce_runtime_enter();
	err = dacce_rt_start((uintptr_t)main);
	if (!err)
		err = dacce_rt_root_edge(DACCE_ROOT_SITE_MAIN, (uintptr_t)main, &main_root_edge);
	dacce_runtime_leave();
	if (err == -ENOTSUP) {
		dacce_rt_log(true, "not instrumenting this program: %s", dacce_rt_refusal());
		return real(main, argc, argv, init, fini, rtld_fini, stack_end);
	}
	if (err) {
		dacce_rt_log(true, "not instrumenting this program: %s", strerror(-err));
		return real(main, argc, argv, init, fini, rtld_fini, stack_end);
	}
	program_main = main;
	dacce_rt_thread_before_main();
	return real(main_with_context, argc, argv, init, fini, rtld_fini, stack_end);
}

struct thread_start {
	void *(*routine)(void *);
	int (*c11_routine)(void *); /* thrd_create's, instead of routine */
	void *arg;
	uint32_t root_edge;
};

/* Runs a thread's start routine as the root of its context (start is malloc'd, freed here). */
static void *thread_with_context(void *p)
{
	struct thread_start start = *(struct thread_start *)p;
	void *result;

	free(p);
	if (dacce_rt_thread_begin(start.root_edge))
		dacce_rt_log(true, "a thread runs without context");
	pthread_cleanup_push((void (*)(void *))dacce_rt_thread_end, NULL);
	result = start.c11_routine ? (void *)(intptr_t)start.c11_routine(start.arg)
				   : start.routine(start.arg);
	dacce_rt_thread_outside();
	pthread_cleanup_pop(1);
	return result;
}

/* thrd_create's start routine returns an int, which thrd_join hands back. */
static int c11_thread_with_context(void *p)
{
	return (int)(intptr_t)thread_with_context(p);
}

/*
 * What a new thread about to run routine (or c11_routine) needs to start
 * its context, in *start: NULL when the runtime is off or the root edge is
 * missing (the thread runs as it would have).  0, or -ENOMEM: no thread
 * may start then, since it would run the program's code without stacks.
 */
static int prepare_thread(void *(*routine)(void *), int (*c11_routine)(void *), void *arg,
			  uintptr_t entry, struct thread_start **start)
{
	*start = NULL;
	/* The last moment with one thread: cancellation will unwind through patched frames. */
	if (dacce_rt_enabled())
		dacce_cancel_hook_install(true);
	/* From now on another thread may run the program's code: patches take the int3 steps. */
	dacce_patch_sole_thread(false);
	if (!dacce_rt_enabled())
		return 0;
	*start = malloc(sizeof(**start));
	if (!*start)
		return -ENOMEM;
	**start = (struct thread_start){ .routine = routine, .c11_routine = c11_routine, .arg = arg };
	if (dacce_rt_root_edge(DACCE_ROOT_SITE_THREAD, entry, &(*start)->root_edge)) {
		free(*start);
		*start = NULL;
	}
	return 0;
}

__attribute__((visibility("default"))) int
pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*routine)(void *), void *arg)
{
	static pthread_create_fn real;
	struct thread_start *start;
	uintptr_t entry;
	int err;

	if (!real)
		real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (!real)
		return EAGAIN;
	/* A std::thread's root is the program's routine, not libstdc++'s (std_thread.c). */
	entry = dacce_rt_enabled() ? dacce_std_thread_claim(&arg) : 0;
	err = prepare_thread(routine, NULL, arg, entry ? entry : (uintptr_t)routine, &start);
	if (err || !start) {
		if (entry)
			dacce_std_thread_unclaim(&arg);
		return err ? EAGAIN : real(thread, attr, routine, arg);
	}
	err = real(thread, attr, thread_with_context, start);
	if (err) {
		free(start);
		if (entry)
			dacce_std_thread_unclaim(&arg);
	}
	return err;
}

/*
 * C11 threads: glibc's thrd_create calls its internal pthread_create, not
 * the one interposed above, so its threads ran the program's code with no
 * context (a null ccStack: the program died at the thread's first pushed
 * call).  The real thrd_create still makes the thread, so thrd_join,
 * thrd_exit and thrd_detach keep glibc's C11 behaviour.
 */
__attribute__((visibility("default"))) int thrd_create(thrd_t *thread, thrd_start_t routine,
							void *arg)
{
	static thrd_create_fn real;
	struct thread_start *start;
	int err;

	if (!real)
		real = (thrd_create_fn)dlsym(RTLD_NEXT, "thrd_create");
	if (!real)
		return thrd_error;
	if (prepare_thread(NULL, routine, arg, (uintptr_t)routine, &start))
		return thrd_nomem;
	if (!start)
		return real(thread, routine, arg);
	err = real(thread, c11_thread_with_context, start);
	if (err != thrd_success)
		free(start);
	return err;
}

/*
 * A vfork child shares the parent's memory, context block included: its
 * trampolines would pop what the parent pushed, and the parent would pop it
 * again.  POSIX lets vfork be fork, so it is.
 */
__attribute__((visibility("default"))) pid_t vfork(void)
{
	return fork();
}

/* The public entry points pass their return address: the runtime checks who called (rt.h). */
__attribute__((visibility("default"), noinline)) int dacce_backtrace(void **buffer, int size)
{
	uintptr_t ret = (uintptr_t)__builtin_return_address(0);
	int n;

	if (!buffer && size > 0) {
		errno = EINVAL;
		return -1;
	}
	if (!dacce_rt_enabled()) {
		errno = ENOSYS;
		return -1;
	}
	n = dacce_rt_backtrace(buffer, size, ret);
	if (n < 0) {
		errno = -n;
		return -1;
	}
	return n;
}

__attribute__((visibility("default"), noinline)) int dacce_context_get(struct dacce_context *ctx)
{
	uintptr_t ret = (uintptr_t)__builtin_return_address(0);
	int err;

	if (!ctx) {
		errno = EINVAL;
		return -1;
	}
	if (!dacce_rt_enabled()) {
		errno = ENOSYS;
		return -1;
	}
	err = dacce_rt_context_get(ctx, ret);
	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}

__attribute__((visibility("default"))) int dacce_context_decode(const struct dacce_context *ctx,
								 void **buffer, int size)
{
	int n;

	if (!ctx || (!buffer && size > 0)) {
		errno = EINVAL;
		return -1;
	}
	if (!dacce_rt_enabled()) {
		errno = ENOSYS;
		return -1;
	}
	n = dacce_rt_context_decode(ctx, buffer, size);
	if (n < 0) {
		errno = -n;
		return -1;
	}
	return n;
}
