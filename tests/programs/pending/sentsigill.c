// SPDX-License-Identifier: MIT
/*
 * SIGILL sent to the program (kill, pthread_kill) while its threads are in
 * the runtime's work: opening, calling into and closing a library over and
 * over (instrumenting it, first calls, forgetting it).  The runtime's traps
 * are SIGILL too, and that signal is never blocked in its work (a trap met
 * blocked kills the thread: runtime/trap.h), so one sent there must wait
 * until the work is over: the program's handler, run inside it, waited for
 * the runtime's lock its own thread held.  Nor may the runtime's own thread
 * take a signal sent to the process.  Each signal is sent once the previous
 * one was handled: every one must reach the handler, on a program thread.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"
#include "programplace.h"

#define NOINLINE __attribute__((noinline))
#define WORKERS 2
#define SIGNALS 300
#define LOADS 300 /* per worker; then it goes on calling, with no runtime work */

typedef int (*work_fn)(int);

static char lib_path[PATH_MAX];
static pid_t program_tids[WORKERS + 1];
static volatile int handled, on_other_thread, stop;
static volatile long sink;

static void on_sigill(int sig, siginfo_t *info, void *uc)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int ours = 0;

	(void)sig, (void)info, (void)uc;
	for (int i = 0; i <= WORKERS; i++)
		ours |= program_tids[i] == tid;
	if (!ours)
		on_other_thread++;
	__atomic_add_fetch(&handled, 1, __ATOMIC_SEQ_CST);
}

NOINLINE static void one_round(int round)
{
	void *handle = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	work_fn work = handle ? (work_fn)dlsym(handle, "lib_work") : NULL;

	if (!work)
		exit(3);
	sink += work(round);
	dlclose(handle);
}

static void *worker(void *slot)
{
	void *handle;
	work_fn work;

	*(pid_t *)slot = (pid_t)syscall(SYS_gettid);
	for (int round = 0; round < LOADS && !stop; round++)
		one_round(round);
	handle = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	work = handle ? (work_fn)dlsym(handle, "lib_work") : NULL;
	if (!work)
		exit(3);
	while (!stop)
		sink += work(1);
	dlclose(handle);
	return NULL;
}

/* Waits until the handler has seen `want` signals: 1 when it has, 0 after 5 s. */
static int wait_handled(int want)
{
	long until = probe_now_ms() + 5000;

	while (__atomic_load_n(&handled, __ATOMIC_SEQ_CST) < want)
		if (probe_now_ms() > until)
			return 0;
	return 1;
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigill, .sa_flags = SA_SIGINFO | SA_RESTART };
	pthread_t threads[WORKERS];
	int delivered = 0;

	library_next_to_program(lib_path, sizeof(lib_path));
	program_tids[WORKERS] = (pid_t)syscall(SYS_gettid);
	sigaction(SIGILL, &sa, NULL);
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&threads[i], NULL, worker, &program_tids[i]))
			return 2;
	while (!program_tids[0] || !program_tids[WORKERS - 1])
		usleep(1000);
	for (int i = 0; i < SIGNALS; i++) {
		if (i % 3 == 2)
			kill(getpid(), SIGILL); /* to the process: any thread that does not block it */
		else
			pthread_kill(threads[i % 3], SIGILL);
		delivered += wait_handled(i + 1);
	}
	stop = 1;
	for (int i = 0; i < WORKERS; i++)
		pthread_join(threads[i], NULL);
	printf("handled %d of %d, on another thread %d\n", delivered, SIGNALS, on_other_thread);
	probe("end");
	return 0;
}
