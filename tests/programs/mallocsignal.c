// SPDX-License-Identifier: MIT
/*
 * First calls from a signal handler that interrupted malloc.  The main
 * thread allocates and frees blocks too large for malloc's per-thread cache,
 * so most of its time is spent inside the arena's lock, while a timer aimed
 * at it alone fires every 100 us.  Each handler calls a function no one has
 * called before, which tail-calls a leaf: the runtime decodes it then, and
 * must read its unwind rules (is that jmp a tail call?) without malloc,
 * whose lock the interrupted code below holds.  A deadlock there hangs the
 * program.  Afterwards main calls some of the same functions again and
 * probes in the leaf they tail-called.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define STEPS 256

static volatile int probing;
static atomic_int next_step;
static volatile long total;

NOINLINE static long leaf(long x)
{
	if (probing)
		probe("leaf");
	return x * 3 + 1;
}

/* Sixteen distinct functions per use, each ending in a tail call of leaf. */
#define STEP(k) \
	NOINLINE static long step_##k(long x) { return leaf(x ^ (k)); }
#define STEP16(k)                                                                     \
	STEP(k##0) STEP(k##1) STEP(k##2) STEP(k##3) STEP(k##4) STEP(k##5) STEP(k##6)   \
	STEP(k##7) STEP(k##8) STEP(k##9) STEP(k##a) STEP(k##b) STEP(k##c) STEP(k##d)   \
	STEP(k##e) STEP(k##f)
#define NAME16(k)                                                                      \
	step_##k##0, step_##k##1, step_##k##2, step_##k##3, step_##k##4, step_##k##5,   \
	step_##k##6, step_##k##7, step_##k##8, step_##k##9, step_##k##a, step_##k##b,   \
	step_##k##c, step_##k##d, step_##k##e, step_##k##f

STEP16(0x0) STEP16(0x1) STEP16(0x2) STEP16(0x3) STEP16(0x4) STEP16(0x5) STEP16(0x6)
STEP16(0x7) STEP16(0x8) STEP16(0x9) STEP16(0xa) STEP16(0xb) STEP16(0xc) STEP16(0xd)
STEP16(0xe) STEP16(0xf)

static long (*const steps[STEPS])(long) = {
	NAME16(0x0), NAME16(0x1), NAME16(0x2), NAME16(0x3), NAME16(0x4), NAME16(0x5),
	NAME16(0x6), NAME16(0x7), NAME16(0x8), NAME16(0x9), NAME16(0xa), NAME16(0xb),
	NAME16(0xc), NAME16(0xd), NAME16(0xe), NAME16(0xf),
};

static void on_alarm(int sig)
{
	int k = atomic_load(&next_step);

	(void)sig;
	if (k < STEPS) {
		total += steps[k](k * 7L);
		atomic_store(&next_step, k + 1);
	}
}

/* Blocks of 2 KiB to 64 KiB: past the thread cache, below the mmap threshold. */
NOINLINE static void churn(void)
{
	static void *held[64];
	unsigned seed = 1;

	while (atomic_load(&next_step) < STEPS) {
		unsigned slot = (seed = seed * 1103515245u + 12345u) >> 26;

		free(held[slot]);
		held[slot] = malloc(2048 + (seed >> 8) % (62 * 1024));
		if (held[slot])
			memset(held[slot], 1, 16);
	}
	for (int i = 0; i < 64; i++)
		free(held[i]);
}

static int start_timer(timer_t *timer)
{
	struct sigevent event = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM };
	struct itimerspec every = { .it_value = { 0, 100000 }, .it_interval = { 0, 100000 } };

	/* Aimed at this thread: the runtime's own threads never take it. */
	event._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &event, timer) != 0)
		return -1;
	return timer_settime(*timer, 0, &every, NULL);
}

int main(void)
{
	struct sigaction action = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	timer_t timer;

	probe("main"); /* stdio's buffer and backtrace's libgcc are set up outside handlers */
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGALRM, &action, NULL) != 0 || start_timer(&timer) != 0) {
		perror("timer");
		return 1;
	}
	churn();
	timer_delete(timer);
	printf("steps %d, total %ld\n", atomic_load(&next_step), total);
	probing = 1;
	for (int k = 0; k < STEPS; k += 37)
		printf("step %d: %ld\n", k, steps[k](k * 7L));
	return 0;
}
