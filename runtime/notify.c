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
 * glibc copies the sigevent each of them is given, except for a single
 * asynchronous I/O request (aio_read, aio_write, aio_fsync, and each request
 * of an lio_listio): glibc reads that sigevent from the program's own request
 * block when the request completes.  So the block itself is made to name the
 * wrapper, with a record of the program's function and value made for that
 * submission and freed by the notification that reads it (glibc notifies
 * every request it queued once: done, failed or cancelled).  The program
 * sees the wrapper in its block until it writes the block again; a block
 * submitted again as it is still carries the program's notification (the
 * runtime remembers, per block, what it wrote there and what it replaced).
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
#include "keyed.h"
#include "lock.h"
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

/* ------------------------------------------------------------------ request blocks */

/* What the runtime last wrote into a request block's sigevent, and what it replaced. */
struct block_notification {
	struct notification program;
	const struct notification *written; /* compared, never read: freed once notified */
};

static struct dacce_lock blocks_lock = DACCE_LOCK_INIT;
static struct dacce_keyed blocks = DACCE_KEYED_INIT(sizeof(struct block_notification));

static void notify_once_with_context(union sigval wrapped)
{
	struct notification program = *(const struct notification *)wrapped.sival_ptr;

	free(wrapped.sival_ptr);
	notify_with_context((union sigval){ .sival_ptr = &program });
}

/* The slot remembering block, made when missing; NULL when memory ran out. */
static struct block_notification *block_slot(const struct aiocb *block)
{
	return dacce_keyed_get(&blocks, (uintptr_t)block, true);
}

/*
 * The program's notification in a block about to be submitted: what it
 * wrote, or, when the block still names the wrapper (submitted again as it
 * was, or only its value written since), what the runtime replaced there.
 * -EINVAL for a block naming the wrapper that the runtime never wrote.
 */
static int program_notification(const struct aiocb *block, const struct block_notification *slot,
				struct notification *program)
{
	const struct sigevent *event = &block->aio_sigevent;

	program->function = event->sigev_notify_function;
	program->value = event->sigev_value;
	if (program->function != notify_once_with_context)
		return 0;
	if (!slot->written)
		return -EINVAL;
	program->function = slot->program.function;
	if (event->sigev_value.sival_ptr == slot->written)
		program->value = slot->program.value;
	return 0;
}

/* Whether block's notification runs on a thread of glibc's: wrap_block wraps it. */
static bool wants_wrapper(const struct aiocb *block)
{
	return block && block->aio_sigevent.sigev_notify == SIGEV_THREAD &&
	       block->aio_sigevent.sigev_notify_function && dacce_rt_enabled();
}

/*
 * Points block's notification at the wrapper, with a record of the
 * program's for this submission in *record (NULL: nothing to wrap).
 * 0, or -1 with errno set (the block unchanged): EAGAIN when memory ran
 * out, EINVAL for a block naming the wrapper that the runtime never wrote.
 */
static int wrap_block(struct aiocb *block, struct notification **record)
{
	struct block_notification *slot;
	struct notification program;
	int err = 0;

	*record = NULL;
	if (!wants_wrapper(block))
		return 0;
	dacce_lock_acquire(&blocks_lock);
	slot = block_slot(block);
	if (!slot)
		err = -ENOMEM;
	if (!err)
		err = program_notification(block, slot, &program);
	if (!err && !(*record = malloc(sizeof(**record))))
		err = -ENOMEM;
	if (!err) {
		**record = program;
		slot->program = program;
		slot->written = *record;
		block->aio_sigevent.sigev_notify_function = notify_once_with_context;
		block->aio_sigevent.sigev_value.sival_ptr = *record;
	}
	dacce_lock_release(&blocks_lock);
	if (err == -EINVAL)
		dacce_rt_log(true, "an I/O request block names a notification the runtime did not "
				   "write there: refused");
	if (err)
		errno = err == -ENOMEM ? EAGAIN : EINVAL;
	return err ? -1 : 0;
}

/* A block glibc never queued: it names the program's notification again. */
static void unwrap_block(struct aiocb *block, struct notification *record)
{
	int saved = errno;

	if (!record)
		return;
	block->aio_sigevent.sigev_notify_function = record->function;
	block->aio_sigevent.sigev_value = record->value;
	free(record);
	errno = saved;
}

typedef int (*submit_fn)(struct aiocb *);
typedef int (*fsync_fn)(int, struct aiocb *);

/* aio_read and aio_write (their 64 names are the same functions on x86-64). */
#define SUBMIT(name)                                                                  \
	__attribute__((visibility("default"))) int name(struct aiocb *block)          \
	{                                                                             \
		static submit_fn real;                                                \
		struct notification *record;                                          \
		int ret;                                                              \
                                                                                      \
		if (!real && !(real = (submit_fn)next_definition(#name)))             \
			return -1;                                                    \
		if (wrap_block(block, &record))                                       \
			return -1;                                                    \
		ret = real(block);                                                    \
		if (ret != 0)                                                         \
			unwrap_block(block, record);                                  \
		return ret;                                                           \
	}
SUBMIT(aio_read)
SUBMIT(aio_write)

__attribute__((visibility("default"))) int aio_fsync(int op, struct aiocb *block)
{
	static fsync_fn real;
	struct notification *record;
	int ret;

	if (!real && !(real = (fsync_fn)next_definition("aio_fsync")))
		return -1;
	if (wrap_block(block, &record))
		return -1;
	ret = real(op, block);
	if (ret != 0)
		unwrap_block(block, record);
	return ret;
}

_Static_assert(sizeof(struct aiocb) == sizeof(struct aiocb64), "one layout on x86-64");

__attribute__((visibility("default"))) int aio_read64(struct aiocb64 *block)
{
	return aio_read((struct aiocb *)block);
}

__attribute__((visibility("default"))) int aio_write64(struct aiocb64 *block)
{
	return aio_write((struct aiocb *)block);
}

__attribute__((visibility("default"))) int aio_fsync64(int op, struct aiocb64 *block)
{
	return aio_fsync(op, (struct aiocb *)block);
}

/* The requests of a list glibc would queue: the ones a notification is wrapped for. */
static bool queued(const struct aiocb *block)
{
	return block && block->aio_lio_opcode != LIO_NOP;
}

/*
 * lio_listio and lio_listio64 (one function on x86-64): the list's own
 * notification, and each queued request's.  Requests of a failed call may
 * have been queued already, so their records and blocks stay as they are.
 */
static int listio(const char *name, lio_listio_fn *real, int mode, struct aiocb *const list[], int n,
		  struct sigevent *event)
{
	const struct sigevent *given;
	struct notification *record;
	struct sigevent copy;
	int wrapped = 0;

	if (!*real && !(*real = (lio_listio_fn)next_definition(name)))
		return -1;
	for (; list && wrapped < n; wrapped++)
		if (queued(list[wrapped]) && wrap_block(list[wrapped], &record))
			break;
	given = wrapped < n ? NULL : wrapped_event(event, &copy);
	if (!given && (event || wrapped < n)) {
		/*
		 * Nothing was queued: every block wrapped so far (each holds the
		 * record just made for it) names the program's again.
		 */
		for (int i = 0; i < wrapped; i++)
			if (queued(list[i]) && wants_wrapper(list[i]))
				unwrap_block(list[i], list[i]->aio_sigevent.sigev_value.sival_ptr);
		return -1;
	}
	return (*real)(mode, list, n, (struct sigevent *)given);
}

__attribute__((visibility("default"))) int lio_listio(int mode, struct aiocb *const list[], int n,
						       struct sigevent *event)
{
	static lio_listio_fn real;

	return listio("lio_listio", &real, mode, list, n, event);
}

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
