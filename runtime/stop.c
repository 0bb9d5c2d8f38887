// SPDX-License-Identifier: MIT
#include "stop.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "tls.h"

/* Rounds of asking before giving up, the pause between them, and how long to wait for answers. */
#define MAX_ROUNDS 40
#define ROUND_PAUSE_NS (300 * 1000)
#define ANSWER_TIMEOUT_NS (200 * 1000 * 1000L)

static struct {
	atomic_bool active;
	atomic_uint round;
	atomic_uint release; /* futex word: bumped by every resume */
	atomic_uint answers; /* futex word: bumped by every answer */
} stop;

int dacce_stop_signal(void)
{
	return SIGRTMAX - 1;
}

/* The runtime's own machine code: a thread there is in the middle of something of ours. */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
static uintptr_t own_code_start, own_code_end;

static void find_own_code(void)
{
	const ElfW(Ehdr) *header = &__ehdr_start;
	const ElfW(Phdr) *ph = (const void *)((const char *)header + header->e_phoff);
	uintptr_t bias = 0;

	for (int i = 0; i < header->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
			bias = (uintptr_t)header - ph[i].p_vaddr;
	for (int i = 0; i < header->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		own_code_start = bias + ph[i].p_vaddr;
		own_code_end = own_code_start + ph[i].p_memsz;
	}
}

static long futex(atomic_uint *word, int op, unsigned value)
{
	return syscall(SYS_futex, word, op, value, NULL, NULL, 0);
}

/* Gives the stopper this thread's answer, and wakes it if it sleeps. */
static void answer(struct dacce_thread *self, int answer)
{
	atomic_store(&self->answer, answer);
	atomic_fetch_add(&stop.answers, 1);
	futex(&stop.answers, FUTEX_WAKE_PRIVATE, 1);
}

static void on_stop_signal(int sig, siginfo_t *info, void *uc_void)
{
	struct dacce_thread *self;
	ucontext_t *uc = uc_void;
	int saved_errno;
	unsigned release = atomic_load(&stop.release);
	unsigned round = atomic_load(&stop.round);

	(void)sig;
	(void)info;
	dacce_tls_handler_work_begin(); /* first: errno lives in libc */
	self = dacce_thread_self();
	self->stops_taken++;
	saved_errno = errno;
	/* Late or repeated signals (they queue) find nothing to do. */
	if (!self->registered || !atomic_load(&stop.active) ||
	    atomic_load(&self->answered_round) == round)
		goto out;
	self->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	self->resume_pc = 0;
	atomic_store(&self->answered_round, round);
	if (self->in_runtime || (self->pc >= own_code_start && self->pc < own_code_end)) {
		answer(self, DACCE_STOP_BUSY);
		goto out;
	}
	self->parked = true;
	answer(self, DACCE_STOP_PARKED);
	while (atomic_load(&stop.release) == release)
		futex(&stop.release, FUTEX_WAIT_PRIVATE, release);
	self->parked = false;
	if (self->resume_pc)
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)self->resume_pc;
	/* A SIGILL sent while it was parked (patch.c) is the program's now. */
	if (self->trap_signal_deferred && !self->in_runtime)
		dacce_thread_send_deferred_trap_signal(self);
out:
	errno = saved_errno;
	dacce_tls_handler_work_end();
	dacce_tls_leaving_handler(uc_void);
}

void dacce_stop_thread_gone(void)
{
	atomic_fetch_add(&stop.answers, 1);
	futex(&stop.answers, FUTEX_WAKE_PRIVATE, 1);
}

int dacce_stop_init(void)
{
	struct sigaction act;

	find_own_code();
	memset(&act, 0, sizeof(act));
	act.sa_sigaction = on_stop_signal;
	act.sa_flags = SA_SIGINFO | SA_RESTART;
	/* Nothing else interrupts a parked thread: its context must stay as the stopper left it. */
	sigfillset(&act.sa_mask);
	sigdelset(&act.sa_mask, SIGSEGV);
	sigdelset(&act.sa_mask, SIGBUS);
	sigdelset(&act.sa_mask, SIGILL);
	sigdelset(&act.sa_mask, SIGFPE);
	return sigaction(dacce_stop_signal(), &act, NULL) ? -errno : 0;
}

static void pause_ns(long ns)
{
	struct timespec t = { .tv_sec = 0, .tv_nsec = ns };

	nanosleep(&t, NULL);
}

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Asks every thread not parked yet; returns how many were asked. */
static int ask_all(pid_t pid)
{
	int asked = 0;

	for (struct dacce_thread *t = dacce_threads_first(); t; t = t->next) {
		if (atomic_load(&t->gone) || atomic_load(&t->answer) == DACCE_STOP_PARKED)
			continue;
		atomic_store(&t->answer, DACCE_STOP_ASKED);
		if (syscall(SYS_tgkill, pid, t->tid, dacce_stop_signal()) != 0) {
			/* Exited without unregistering (killed by the kernel): nothing to stop. */
			atomic_store(&t->gone, true);
			continue;
		}
		asked++;
	}
	return asked;
}

/*
 * Waits for every asked thread's answer; true when all answered PARKED.
 * Sleeps between answers rather than spinning: on a machine with few
 * cores the threads asked need the CPU to run their handlers.
 */
static bool wait_answers(long deadline, bool *timed_out)
{
	bool all_parked;

	*timed_out = false;
	for (;;) {
		unsigned answers = atomic_load(&stop.answers);
		struct timespec left;
		bool waiting = false;
		long now;

		all_parked = true;
		for (struct dacce_thread *t = dacce_threads_first(); t; t = t->next) {
			int answer = atomic_load(&t->answer);

			if (atomic_load(&t->gone))
				continue;
			waiting |= answer == DACCE_STOP_ASKED;
			all_parked &= answer == DACCE_STOP_PARKED;
		}
		if (!waiting)
			return all_parked;
		now = now_ns();
		if (now > deadline) {
			*timed_out = true;
			return false;
		}
		left = (struct timespec){ .tv_sec = (deadline - now) / 1000000000L,
					  .tv_nsec = (deadline - now) % 1000000000L };
		syscall(SYS_futex, &stop.answers, FUTEX_WAIT_PRIVATE, answers, &left, NULL, 0);
	}
}

int dacce_stop_world(void)
{
	pid_t pid = getpid();

	for (struct dacce_thread *t = dacce_threads_first(); t; t = t->next)
		atomic_store(&t->answer, DACCE_STOP_ASKED);
	atomic_store(&stop.active, true);
	for (int round = 0; round < MAX_ROUNDS; round++) {
		bool timed_out;

		atomic_fetch_add(&stop.round, 1);
		if (ask_all(pid) == 0)
			return 0;
		if (wait_answers(now_ns() + ANSWER_TIMEOUT_NS, &timed_out))
			return 0;
		if (timed_out)
			break; /* a thread keeps the signal blocked: not now */
		pause_ns(ROUND_PAUSE_NS);
	}
	dacce_resume_world();
	return -EAGAIN;
}

bool dacce_world_stopping(void)
{
	return atomic_load(&stop.active);
}

void dacce_resume_world(void)
{
	atomic_store(&stop.active, false);
	for (struct dacce_thread *t = dacce_threads_first(); t; t = t->next)
		atomic_store(&t->answer, DACCE_STOP_ASKED);
	atomic_fetch_add(&stop.release, 1);
	futex(&stop.release, FUTEX_WAKE_PRIVATE, INT32_MAX);
}
