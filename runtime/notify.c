// SPDX-License-Identifier: MIT
/*
 * Notifications glibc runs on threads of its own (SIGEV_THREAD): a timer's
 * expiry (timer_create), a message arriving on an empty queue (mq_notify),
 * a list of I/O requests or name lookups done (lio_listio, getaddrinfo_a).
 * glibc starts each such thread with its internal pthread_create, which the
 * runtime cannot interpose: the thread would run instrumented code with no
 * context set up, and the program died at the notification function's
 * first pushed call (a null ccStack).  So these are interposed: glibc
 * is handed a wrapper that starts the thread's context with the program's
 * function as its root, as pthread_create's wrapper does (start.c), and
 * calls it.
 *
 * The wrapper's argument (the program's function and value) must outlive
 * every notification already on its way when the timer is deleted or the
 * registration is replaced, which glibc does not wait for: it is never
 * freed, 16 bytes per call with SIGEV_THREAD (and kept after a failed
 * lio_listio or getaddrinfo_a, which may have started some of the work).
 *
 * glibc copies the sigevent each of them is given.  Not covered (their
 * threads still run without context, docs/runtime.md): the notification of
 * a single asynchronous I/O request (aio_read, aio_write, aio_fsync), whose
 * sigevent glibc reads from the program's own request block when the
 * request completes, after the program may already see it complete.
 */
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <mqueue.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "graph.h"
#include "rt.h"

struct notification {
	void (*function)(union sigval);
	union sigval value;
};

static void notify_with_context(union sigval wrapped)
{
	const struct notification *n = wrapped.sival_ptr;
	uint32_t root_edge;

	if (dacce_rt_root_edge(DACCE_ROOT_SITE_THREAD, (uintptr_t)n->function, &root_edge) ||
	    dacce_rt_thread_begin(root_edge))
		dacce_rt_log(true, "a notification thread runs without context");
	pthread_cleanup_push((void (*)(void *))dacce_rt_thread_end, NULL);
	n->function(n->value);
	dacce_rt_thread_outside();
	pthread_cleanup_pop(1);
}

/*
 * The sigevent to hand glibc instead of event: a copy calling the wrapper,
 * in *copy.  event itself when nothing needs wrapping.  NULL with errno set
 * when memory ran out.
 */
static const struct sigevent *wrapped_event(const struct sigevent *event, struct sigevent *copy)
{
	struct notification *n;

	if (!event || event->sigev_notify != SIGEV_THREAD || !event->sigev_notify_function ||
	    !dacce_rt_enabled())
		return event;
	n = malloc(sizeof(*n));
	if (!n) {
		errno = EAGAIN;
		return NULL;
	}
	n->function = event->sigev_notify_function;
	n->value = event->sigev_value;
	*copy = *event;
	copy->sigev_notify_function = notify_with_context;
	copy->sigev_value.sival_ptr = n;
	return copy;
}

/*
 * The pointer the wrapper stands for, when the call failed: never seen by
 * glibc, so it can go.
 */
static void forget_unused(const struct sigevent *given, const struct sigevent *copy)
{
	if (given == copy)
		free(copy->sigev_value.sival_ptr);
}

typedef int (*timer_create_fn)(clockid_t, struct sigevent *, timer_t *);
typedef int (*mq_notify_fn)(mqd_t, const struct sigevent *);
typedef int (*lio_listio_fn)(int, struct aiocb *const[], int, struct sigevent *);
typedef int (*getaddrinfo_a_fn)(int, struct gaicb *[], int, struct sigevent *);

/* The next definition of name (libc's), or NULL with errno set. */
static void *next_definition(const char *name)
{
	void *real = dlsym(RTLD_NEXT, name);

	if (!real)
		errno = ENOSYS;
	return real;
}

__attribute__((visibility("default"))) int timer_create(clockid_t clock, struct sigevent *event,
							 timer_t *timer)
{
	static timer_create_fn real;
	const struct sigevent *given;
	struct sigevent copy;
	int ret;

	if (!real && !(real = (timer_create_fn)next_definition("timer_create")))
		return -1;
	given = wrapped_event(event, &copy);
	if (!given && event)
		return -1;
	ret = real(clock, (struct sigevent *)given, timer);
	if (ret != 0)
		forget_unused(given, &copy);
	return ret;
}

__attribute__((visibility("default"))) int mq_notify(mqd_t queue, const struct sigevent *event)
{
	static mq_notify_fn real;
	const struct sigevent *given;
	struct sigevent copy;
	int ret;

	if (!real && !(real = (mq_notify_fn)next_definition("mq_notify")))
		return -1;
	given = wrapped_event(event, &copy);
	if (!given && event)
		return -1;
	ret = real(queue, given);
	if (ret != 0)
		forget_unused(given, &copy);
	return ret;
}

/* lio_listio and lio_listio64 (one function on x86-64, struct aiocb64 being struct aiocb). */
static int listio(const char *name, lio_listio_fn *real, int mode, struct aiocb *const list[], int n,
		  struct sigevent *event)
{
	const struct sigevent *given;
	struct sigevent copy;

	if (!*real && !(*real = (lio_listio_fn)next_definition(name)))
		return -1;
	given = wrapped_event(event, &copy);
	if (!given && event)
		return -1;
	return (*real)(mode, list, n, (struct sigevent *)given);
}

__attribute__((visibility("default"))) int lio_listio(int mode, struct aiocb *const list[], int n,
						       struct sigevent *event)
{
	static lio_listio_fn real;

	return listio("lio_listio", &real, mode, list, n, event);
}

_Static_assert(sizeof(struct aiocb) == sizeof(struct aiocb64), "one layout on x86-64");

__attribute__((visibility("default"))) int lio_listio64(int mode, struct aiocb64 *const list[],
							 int n, struct sigevent *event)
{
	static lio_listio_fn real;

	return listio("lio_listio64", &real, mode, (struct aiocb *const *)list, n, event);
}

__attribute__((visibility("default"))) int getaddrinfo_a(int mode, struct gaicb *list[], int n,
							  struct sigevent *event)
{
	static getaddrinfo_a_fn real;
	const struct sigevent *given;
	struct sigevent copy;

	if (!real && !(real = (getaddrinfo_a_fn)next_definition("getaddrinfo_a")))
		return EAI_SYSTEM;
	given = wrapped_event(event, &copy);
	if (!given && event)
		return EAI_AGAIN;
	return real(mode, list, n, (struct sigevent *)given);
}
