// SPDX-License-Identifier: MIT
/*
 * Signals landing in a function that runs from its copy (DACCE_RELOCATE,
 * runtime/relocated.h): a thread sends SIGUSR1 to main every millisecond
 * while main's worker loops (its calls of step go inline in the copy).  The
 * handler must see the pc of the function's own code, as natively: it is
 * what the handler, unwinders and backtrace() are shown, and where the thread
 * resumes.  Without the runtime moving the pc out of the copy, no signal
 * after the first epoch lands "in worker", and the count is never reached.
 * The handler's context (frames but the interrupted pc) is probed once.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define WANTED 50

/* worker alone in a section of its own: its bounds, for telling where a signal landed. */
extern const char __start_moved_worker[], __stop_moved_worker[];

static volatile int landed, done, probed;
static volatile long sink;
static pthread_t main_thread;

NOINLINE static long step(long x)
{
	return x ^ (x >> 7);
}

NOINLINE static void in_handler(uintptr_t pc)
{
	void *frames[256];
	int native, n = probe_take(frames, 256, &native);
	char line[256 * 20 + 64];
	int len = snprintf(line, sizeof(line), "handler:");

	if (n < 0) {
		printf("handler: partial\n");
		return;
	}
	for (int i = 0; i < n - native; i++)
		if (probe_in_program(frames[i]) && (uintptr_t)frames[i] != pc)
			PROBE_APPEND(line, len, frames[i]);
	printf("%s\n", line);
}

static void handler(int sig, siginfo_t *info, void *uc_void)
{
	const ucontext_t *uc = uc_void;
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)info;
	if (pc < (uintptr_t)__start_moved_worker || pc >= (uintptr_t)__stop_moved_worker)
		return;
	if (!probed) {
		probed = 1;
		in_handler(pc);
	}
	if (++landed >= WANTED)
		done = 1;
}

__attribute__((section("moved_worker"), noinline)) static long worker(long x)
{
	for (long i = 0; !done; i++) {
		x = x * 31 + i;
		x ^= x << 13;
		x += (x >> 3) * 5;
		if ((i & 255) == 0)
			x += step(x);
	}
	return x;
}

static void *sender(void *unused)
{
	struct timespec ms = { .tv_nsec = 1000000 };

	(void)unused;
	for (int i = 0; i < 4000 && !done; i++) {
		pthread_kill(main_thread, SIGUSR1);
		nanosleep(&ms, NULL);
	}
	done = 1;
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();
	if (pthread_create(&t, NULL, sender, NULL) != 0)
		return 1;
	sink = worker(1);
	pthread_join(t, NULL);
	probe("main");
	printf("worker interrupted %s\n", landed >= WANTED ? "enough times" : "too few times");
	return 0;
}
