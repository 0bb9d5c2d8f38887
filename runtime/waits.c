// SPDX-License-Identifier: MIT
/*
 * Blocking calls the kernel does not restart after a signal handler, even
 * with SA_RESTART (signal(7)): sleeps, poll, select, epoll_wait, the signal
 * waits, timed semaphore waits.  An epoch's stop signal would make them
 * return early with EINTR (and sleep() return 0 a second early, and pause()
 * return with no handler of the program run), which the program never sees
 * natively.  Each wrapper makes the call again, for the time left, when the
 * only handler that ran on the thread while it waited was the stop signal's
 * (threads.h counts both kinds).
 *
 * Not covered: calls libc makes inside itself (system(), say), raw
 * syscall(2), SysV IPC (msgrcv, semop), io_getevents, sockets with
 * SO_RCVTIMEO, and a handler installed with a raw rt_sigaction that runs
 * in the same wait as a stop signal (its EINTR would be taken for ours).
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "signals.h"
#include "thread_registry.h"

#define EXPORT __attribute__((visibility("default")))
#define NS_PER_S 1000000000LL

/* The functions wrapped here, as the next definition after ours (libc's). */
#define WRAPPED(X)                                                                          \
	X(nanosleep) X(clock_nanosleep) X(poll) X(ppoll) X(select) X(pselect) X(epoll_wait) \
	X(epoll_pwait) X(pause) X(sigsuspend) X(sigwaitinfo) X(sigtimedwait)                \
	X(sem_timedwait) X(sem_clockwait)
#define SLOT(name) void *name;
static struct {
	WRAPPED(SLOT)
} reals;

static void *real_function(void **slot, const char *name)
{
	if (!*slot)
		*slot = dlsym(RTLD_NEXT, name);
	return *slot;
}

/*
 * Looked up when the library is loaded: the policy thread sleeps while
 * other threads are parked, maybe inside the dynamic linker, whose lock
 * dlsym takes.
 */
#define LOOK_UP(name) real_function(&reals.name, #name);
__attribute__((constructor)) static void look_up_reals(void)
{
	WRAPPED(LOOK_UP)
}

/* real_NAME: the next definition of NAME, or a failure with ENOSYS. */
#define REAL(name, type)                                                                   \
	type real_##name = (type)real_function(&reals.name, #name);                        \
	if (!real_##name) {                                                                \
		errno = ENOSYS;                                                            \
		return -1;                                                                 \
	}

/* What had run on the thread before a wait. */
struct handlers_seen {
	unsigned stops, program;
};

static struct handlers_seen handlers_now(void)
{
	const struct dacce_thread *self = dacce_thread_self();

	return (struct handlers_seen){ .stops = self->stops_taken, .program = self->handlers_run };
}

/* Whether a wait that ended in EINTR was cut short by the stop signal alone. */
static bool only_stopped(struct handlers_seen before, bool interrupted)
{
	struct handlers_seen after = handlers_now();

	return interrupted && dacce_rt_enabled() && after.program == before.program &&
	       after.stops != before.stops;
}

static int64_t monotonic_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * NS_PER_S + t.tv_nsec;
}

static int64_t timespec_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * NS_PER_S + t->tv_nsec;
}

/* The time left until deadline (never negative). */
static struct timespec left_until(int64_t deadline)
{
	int64_t left = deadline - monotonic_ns();

	if (left < 0)
		left = 0;
	return (struct timespec){ .tv_sec = left / NS_PER_S, .tv_nsec = left % NS_PER_S };
}

/* The deadline of a relative timeout (0 when there is none). */
static int64_t deadline_after(const struct timespec *timeout)
{
	return timeout ? monotonic_ns() + timespec_ns(timeout) : 0;
}

/* For a call's timeout argument: NULL when there was none, else the time left, in *left. */
static const struct timespec *timeout_left(const struct timespec *timeout, int64_t deadline,
					   struct timespec *left)
{
	if (!timeout)
		return NULL;
	*left = left_until(deadline);
	return left;
}

/*
 * Makes call (it sets ret) again until it ends other than in EINTR from the
 * stop signal alone, and returns ret.
 */
#define RESTARTING(call)                                                                   \
	for (;;) {                                                                         \
		struct handlers_seen before_call = handlers_now();                         \
                                                                                           \
		ret = (call);                                                              \
		if (!(ret < 0 && only_stopped(before_call, errno == EINTR)))               \
			return ret;                                                        \
	}

/* A timeout in milliseconds (negative: none) for the time left until deadline, rounded up. */
static int ms_left(int timeout_ms, int64_t deadline)
{
	int64_t left;

	if (timeout_ms < 0)
		return timeout_ms;
	left = deadline - monotonic_ns();
	return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

static int64_t ms_deadline(int timeout_ms)
{
	return monotonic_ns() + (int64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000;
}

/* ------------------------------------------------------------------ sleeps */

typedef int (*nanosleep_fn)(const struct timespec *, struct timespec *);
typedef int (*clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);

EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	REAL(nanosleep, nanosleep_fn);
	struct timespec want, left;
	int ret;

	if (!req)
		return real_nanosleep(req, rem);
	want = *req;
	for (;;) {
		struct handlers_seen before = handlers_now();

		ret = real_nanosleep(&want, &left);
		if (!(ret < 0 && only_stopped(before, errno == EINTR)))
			break;
		want = left;
	}
	if (ret < 0 && errno == EINTR && rem)
		*rem = left;
	return ret;
}

EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
			   struct timespec *rem)
{
	clock_nanosleep_fn real = (clock_nanosleep_fn)real_function(&reals.clock_nanosleep,
								     "clock_nanosleep");
	struct timespec want, left;
	int ret;

	if (!real)
		return ENOSYS; /* an error number, as clock_nanosleep returns them */
	if (!req)
		return real(clock, flags, req, rem);
	want = *req;
	for (;;) {
		struct handlers_seen before = handlers_now();

		ret = real(clock, flags, &want, &left);
		if (!only_stopped(before, ret == EINTR))
			break;
		/* An absolute time stays what it was; a relative one is what is left. */
		if (!(flags & TIMER_ABSTIME))
			want = left;
	}
	if (ret == EINTR && rem && !(flags & TIMER_ABSTIME))
		*rem = left;
	return ret;
}

/* As glibc's: the whole seconds not slept when a handler cut it short. */
EXPORT unsigned int sleep(unsigned int seconds)
{
	struct timespec want = { .tv_sec = (time_t)seconds }, left = { 0 };
	int saved_errno = errno;

	if (nanosleep(&want, &left) < 0)
		return (unsigned int)left.tv_sec;
	errno = saved_errno;
	return 0;
}

EXPORT int usleep(useconds_t us)
{
	struct timespec want = {
		.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000,
	};

	return nanosleep(&want, NULL);
}

/* ------------------------------------------------------------------ polls */

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			  const sigset_t *);
typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	REAL(poll, poll_fn);
	int64_t deadline = ms_deadline(timeout_ms);
	int ret;

	RESTARTING(real_poll(fds, n, ms_left(timeout_ms, deadline)));
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
		 const sigset_t *mask)
{
	REAL(ppoll, ppoll_fn);
	int64_t deadline = deadline_after(timeout);
	struct timespec left;
	sigset_t copy;
	const sigset_t *during = dacce_signals_program_mask(SIG_SETMASK, mask, &copy);
	int ret;

	RESTARTING(real_ppoll(fds, n, timeout_left(timeout, deadline, &left), during));
}

/* Linux writes the time left into timeout, and leaves the sets alone when interrupted. */
EXPORT int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		  struct timeval *timeout)
{
	REAL(select, select_fn);
	int ret;

	RESTARTING(real_select(nfds, readfds, writefds, exceptfds, timeout));
}

EXPORT int pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		   const struct timespec *timeout, const sigset_t *mask)
{
	REAL(pselect, pselect_fn);
	int64_t deadline = deadline_after(timeout);
	struct timespec left;
	sigset_t copy;
	const sigset_t *during = dacce_signals_program_mask(SIG_SETMASK, mask, &copy);
	int ret;

	RESTARTING(real_pselect(nfds, readfds, writefds, exceptfds,
				 timeout_left(timeout, deadline, &left), during));
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout_ms)
{
	REAL(epoll_wait, epoll_wait_fn);
	int64_t deadline = ms_deadline(timeout_ms);
	int ret;

	RESTARTING(real_epoll_wait(epfd, events, max, ms_left(timeout_ms, deadline)));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout_ms,
		       const sigset_t *mask)
{
	REAL(epoll_pwait, epoll_pwait_fn);
	int64_t deadline = ms_deadline(timeout_ms);
	sigset_t copy;
	const sigset_t *during = dacce_signals_program_mask(SIG_SETMASK, mask, &copy);
	int ret;

	RESTARTING(real_epoll_pwait(epfd, events, max, ms_left(timeout_ms, deadline), during));
}

/* ------------------------------------------------------------------ signal waits */

typedef int (*pause_fn)(void);
typedef int (*sigsuspend_fn)(const sigset_t *);
typedef int (*sigwaitinfo_fn)(const sigset_t *, siginfo_t *);
typedef int (*sigtimedwait_fn)(const sigset_t *, siginfo_t *, const struct timespec *);

/* Returns when a handler of the program ran (or never): a stop signal's handler is not one. */
EXPORT int pause(void)
{
	REAL(pause, pause_fn);
	int ret;

	RESTARTING(real_pause());
}

EXPORT int sigsuspend(const sigset_t *mask)
{
	REAL(sigsuspend, sigsuspend_fn);
	sigset_t copy;
	const sigset_t *during = dacce_signals_program_mask(SIG_SETMASK, mask, &copy);
	int ret;

	RESTARTING(real_sigsuspend(during));
}

EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	REAL(sigwaitinfo, sigwaitinfo_fn);
	int ret;

	RESTARTING(real_sigwaitinfo(set, info));
}

EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	REAL(sigtimedwait, sigtimedwait_fn);
	int64_t deadline = deadline_after(timeout);
	struct timespec left;
	int ret;

	RESTARTING(real_sigtimedwait(set, info, timeout_left(timeout, deadline, &left)));
}

/* ------------------------------------------------------------------ semaphores */

typedef int (*sem_timedwait_fn)(sem_t *, const struct timespec *);
typedef int (*sem_clockwait_fn)(sem_t *, clockid_t, const struct timespec *);

/* Absolute timeouts: the same one again. */
EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
	REAL(sem_timedwait, sem_timedwait_fn);
	int ret;

	RESTARTING(real_sem_timedwait(sem, abstime));
}

EXPORT int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abstime)
{
	REAL(sem_clockwait, sem_clockwait_fn);
	int ret;

	RESTARTING(real_sem_clockwait(sem, clock, abstime));
}
