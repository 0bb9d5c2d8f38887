// SPDX-License-Identifier: MIT
/*
 * Blocking calls that the kernel does not restart after a signal handler
 * (signal(7)): sleep, usleep, nanosleep, clock_nanosleep, poll, ppoll,
 * select, pselect, epoll_wait, epoll_pwait, sigtimedwait, sigwaitinfo,
 * pause, sigsuspend, sem_timedwait.  One thread waits in each of them in
 * turn while another meets a new edge every millisecond, so that epochs
 * (with DACCE_EPOCH_STRESS, one per edge) stop the waiting thread again and
 * again.  Each call must return as natively: after its whole timeout, or
 * after the program's own signal handler ran, never early.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define WAIT_MS 40
#define N_TARGETS 64
#define N_SITES 16

static atomic_bool waiting, finished;
static atomic_long send_at_ms; /* when the churning thread sends send_signal to the waiter */
static atomic_int send_signal;
static pthread_t waiter;
static volatile sig_atomic_t handled;
static volatile long sink;

/* Targets and sites for the churning thread: each (site, target) is an edge of its own. */
typedef void (*target_fn)(int);
#define T(i)                                    \
	static NOINLINE void target##i(int n)   \
	{                                       \
		sink += n + i;                  \
	}
T(0) T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9) T(10) T(11) T(12) T(13) T(14) T(15)
T(16) T(17) T(18) T(19) T(20) T(21) T(22) T(23) T(24) T(25) T(26) T(27) T(28) T(29) T(30)
T(31) T(32) T(33) T(34) T(35) T(36) T(37) T(38) T(39) T(40) T(41) T(42) T(43) T(44) T(45)
T(46) T(47) T(48) T(49) T(50) T(51) T(52) T(53) T(54) T(55) T(56) T(57) T(58) T(59) T(60)
T(61) T(62) T(63)
static target_fn targets[N_TARGETS] = {
	target0,  target1,  target2,  target3,	target4,  target5,  target6,  target7,
	target8,  target9,  target10, target11, target12, target13, target14, target15,
	target16, target17, target18, target19, target20, target21, target22, target23,
	target24, target25, target26, target27, target28, target29, target30, target31,
	target32, target33, target34, target35, target36, target37, target38, target39,
	target40, target41, target42, target43, target44, target45, target46, target47,
	target48, target49, target50, target51, target52, target53, target54, target55,
	target56, target57, target58, target59, target60, target61, target62, target63,
};
#define S(k)                                              \
	static NOINLINE void site##k(int i)               \
	{                                                 \
		targets[i](k);                            \
		sink++;                                   \
	}
S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)
static target_fn sites[N_SITES] = {
	site0, site1, site2,  site3,  site4,  site5,  site6,  site7,
	site8, site9, site10, site11, site12, site13, site14, site15,
};

/* Meets a new edge every millisecond while the waiter waits; sends it a signal when asked. */
static NOINLINE void *churn(void *unused)
{
	int next = 0;

	(void)unused;
	while (!atomic_load(&finished)) {
		long due = atomic_load(&send_at_ms);
		long until = probe_now_ms() + 1;

		if (due && probe_now_ms() >= due) {
			atomic_store(&send_at_ms, 0);
			pthread_kill(waiter, atomic_load(&send_signal));
		}
		if (atomic_load(&waiting) && next < N_SITES * N_TARGETS) {
			sites[next / N_TARGETS](next % N_TARGETS);
			next++;
		}
		while (probe_now_ms() < until)
			;
	}
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	handled = 1;
}

static void begin(void)
{
	handled = 0;
	atomic_store(&waiting, true);
}

/* Prints what a timed call returned, and whether its whole timeout went by. */
static void timed(const char *what, long start, long ret, int err)
{
	atomic_store(&waiting, false);
	printf("%s: returned %ld%s%s, %s\n", what, ret, ret < 0 ? " " : "", ret < 0 ? strerror(err) : "",
	       probe_now_ms() - start >= WAIT_MS ? "after its timeout" : "EARLY");
}

/* Prints what a call waiting for a signal returned, and whether the program's handler ran. */
static void signalled(const char *what, long ret, int err)
{
	atomic_store(&waiting, false);
	printf("%s: returned %ld%s%s, %s\n", what, ret, ret < 0 ? " " : "", ret < 0 ? strerror(err) : "",
	       handled ? "after the handler" : "before any handler (EARLY)");
}

static void signal_me_later(int sig)
{
	atomic_store(&send_signal, sig);
	atomic_store(&send_at_ms, probe_now_ms() + WAIT_MS);
}

static struct timespec wait_time(void)
{
	return (struct timespec){ .tv_sec = 0, .tv_nsec = WAIT_MS * 1000000L };
}

static NOINLINE void sleeps(void)
{
	struct timespec t = wait_time(), rem, abs;
	long start;
	int ret;

	begin();
	start = probe_now_ms();
	ret = (int)sleep(1);
	timed("sleep", start, ret, errno);

	begin();
	start = probe_now_ms();
	ret = usleep(WAIT_MS * 1000);
	timed("usleep", start, ret, errno);

	begin();
	start = probe_now_ms();
	ret = nanosleep(&t, &rem);
	timed("nanosleep", start, ret, errno);

	begin();
	start = probe_now_ms();
	ret = clock_nanosleep(CLOCK_MONOTONIC, 0, &t, &rem);
	timed("clock_nanosleep", start, ret, 0);

	begin();
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_nsec += WAIT_MS * 1000000L;
	if (abs.tv_nsec >= 1000000000L) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000L;
	}
	start = probe_now_ms();
	ret = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL);
	timed("clock_nanosleep absolute", start, ret, 0);
}

static NOINLINE void polls(void)
{
	struct timespec t = wait_time();
	struct timeval tv = { .tv_sec = 0, .tv_usec = WAIT_MS * 1000 };
	struct epoll_event events[1];
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	long start;
	int ret;

	begin();
	start = probe_now_ms();
	ret = poll(NULL, 0, WAIT_MS);
	timed("poll", start, ret, errno);

	begin();
	start = probe_now_ms();
	ret = ppoll(NULL, 0, &t, NULL);
	timed("ppoll", start, ret, errno);

	begin();
	start = probe_now_ms();
	ret = select(0, NULL, NULL, NULL, &tv);
	timed("select", start, ret, errno);

	begin();
	start = probe_now_ms();
	ret = pselect(0, NULL, NULL, NULL, &t, NULL);
	timed("pselect", start, ret, errno);

	begin();
	start = probe_now_ms();
	ret = epoll_wait(epfd, events, 1, WAIT_MS);
	timed("epoll_wait", start, ret, errno);

	begin();
	start = probe_now_ms();
	ret = epoll_pwait(epfd, events, 1, WAIT_MS, NULL);
	timed("epoll_pwait", start, ret, errno);
	close(epfd);
}

static NOINLINE void signal_waits(void)
{
	struct timespec t = wait_time();
	struct sigaction act = { .sa_handler = on_signal };
	struct timespec abs;
	sigset_t usr1, usr2, none;
	siginfo_t info;
	sem_t never;
	long start;
	int ret;

	sigaction(SIGUSR1, &act, NULL);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	sigemptyset(&none);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);

	begin();
	start = probe_now_ms();
	ret = sigtimedwait(&usr2, &info, &t);
	timed("sigtimedwait", start, ret, errno);

	begin();
	signal_me_later(SIGUSR2);
	ret = sigwaitinfo(&usr2, &info);
	atomic_store(&waiting, false);
	printf("sigwaitinfo: returned %s\n", ret == SIGUSR2 ? "SIGUSR2" : "something else (EARLY)");

	begin();
	signal_me_later(SIGUSR1);
	ret = pause();
	signalled("pause", ret, errno);

	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	begin();
	signal_me_later(SIGUSR1);
	ret = sigsuspend(&none);
	signalled("sigsuspend", ret, errno);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);

	sem_init(&never, 0, 0);
	clock_gettime(CLOCK_REALTIME, &abs);
	abs.tv_nsec += WAIT_MS * 1000000L;
	if (abs.tv_nsec >= 1000000000L) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000L;
	}
	begin();
	start = probe_now_ms();
	ret = sem_timedwait(&never, &abs);
	timed("sem_timedwait", start, ret, errno);
	sem_destroy(&never);
}

int main(void)
{
	pthread_t churner;

	waiter = pthread_self();
	if (pthread_create(&churner, NULL, churn, NULL))
		return 1;
	sleeps();
	polls();
	signal_waits();
	probe("after the waits");
	atomic_store(&finished, true);
	pthread_join(churner, NULL);
	return 0;
}
