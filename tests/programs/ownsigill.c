// SPDX-License-Identifier: MIT
/*
 * The program's own SIGILL, now that the runtime's traps are SIGILL too
 * (runtime/trap.h): an undefined instruction of its own (ud2) and a SIGILL
 * sent to it reach its handler, which runs as a nested root on top of the
 * interrupted context like any handler; with the default action back, ud2
 * kills a child by SIGILL, as natively (not a loop of retries, not a
 * different signal).  A handler installed the SysV way (__sysv_signal, what
 * signal() is under -std=c99) is one-shot and must not take the runtime's
 * traps: a comparator qsort calls first traps at its watched entry.
 */
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline, noclone))

extern const char own_ud2[] __attribute__((visibility("hidden")));

static volatile int sink, faults, sent;

NOINLINE static void in_handler(const char *tag)
{
	probe_through(tag);
	sink++;
}

static void on_sigill(int sig, siginfo_t *info, void *uc_void)
{
	ucontext_t *uc = uc_void;

	(void)sig;
	if (info->si_code == ILL_ILLOPN && info->si_addr == (void *)own_ud2) {
		faults++;
		probe_fault_at("ud2-handler", (void *)own_ud2);
		sink++;
		uc->uc_mcontext.gregs[REG_RIP] += 2; /* on past the ud2 */
	} else if (info->si_code == SI_TKILL) {
		sent++;
		in_handler("sent-handler");
	}
}

NOINLINE void undefined_instruction(void)
{
	__asm__ volatile(".globl own_ud2\n.hidden own_ud2\nown_ud2: ud2" ::: "memory");
	probe("after-ud2");
	sink++;
}

NOINLINE static void send_one(void)
{
	raise(SIGILL);
	probe("after-raise");
	sink++;
}

/* Runs body in a child without a core file, then says how the child ended. */
NOINLINE static void in_child(const char *name, void (*body)(void))
{
	struct rlimit no_core = { 0, 0 };
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setrlimit(RLIMIT_CORE, &no_core);
		body();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		printf("%s child killed by signal %d\n", name, WTERMSIG(status));
	else
		printf("%s child exited with status %d\n", name, WEXITSTATUS(status));
}

NOINLINE static void default_action(void)
{
	signal(SIGILL, SIG_DFL);
	undefined_instruction();
}

static volatile int sysv_runs;

static void on_sigill_sysv(int sig)
{
	(void)sig;
	sysv_runs++;
}

NOINLINE static int by_value(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

NOINLINE static void sysv_handler(void)
{
	int values[] = { 5, 3, 9, 1, 7 };

	__sysv_signal(SIGILL, on_sigill_sysv);
	qsort(values, 5, sizeof(values[0]), by_value);
	printf("sorted %d %d %d %d %d, sysv handler ran %d\n", values[0], values[1], values[2],
	       values[3], values[4], sysv_runs);
	fflush(stdout);
	raise(SIGILL); /* the handler runs once and is reset */
	printf("sysv handler ran %d\n", sysv_runs);
	fflush(stdout);
	__asm__ volatile("ud2" ::: "memory"); /* the default action now */
}

/* What the handlers below do for a ud2 of the program: count it and go on past it. */
static void count_and_skip(volatile int *runs, void *uc_void)
{
	ucontext_t *uc = uc_void;

	(*runs)++;
	uc->uc_mcontext.gregs[REG_RIP] += 2;
}

static volatile int early_runs;

static void on_sigill_early(int sig, siginfo_t *info, void *uc_void)
{
	(void)sig;
	(void)info;
	count_and_skip(&early_runs, uc_void);
}

/*
 * Installed before the runtime started (the dynamic linker runs
 * .preinit_array first): the runtime chains to it, wrapped at start, so its
 * entry (a watched one, a trap) is never met from the runtime's handler.
 */
static void install_early(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigill_early;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGILL, &sa, NULL);
}

__attribute__((section(".preinit_array"), used)) static void (*const preinit)(void) = install_early;

static volatile int raw_runs;

static void on_sigill_raw(int sig, siginfo_t *info, void *uc_void)
{
	(void)sig;
	(void)info;
	count_and_skip(&raw_runs, uc_void);
}

extern void probe_raw_restore(void) __attribute__((visibility("hidden")));
__asm__(".pushsection .text\n.hidden probe_raw_restore\nprobe_raw_restore:\n"
	"mov $15, %eax\nsyscall\n.popsection");

NOINLINE static int by_value_again(const void *a, const void *b)
{
	return *(const int *)b - *(const int *)a;
}

/*
 * A handler installed by the rt_sigaction system call itself, past every
 * interposed call: the runtime's policy thread puts its own back within its
 * interval and chains to this one, so a comparator's first entry (a trap)
 * after a moment is the runtime's, and the program's ud2 still reaches it.
 */
NOINLINE static void raw_handler(void)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} act = { (void *)on_sigill_raw, SA_SIGINFO | 0x04000000 /* SA_RESTORER */,
		  (void *)probe_raw_restore, 0 };
	int values[] = { 5, 3, 9, 1, 7 };
	long start = probe_now_ms();

	syscall(SYS_rt_sigaction, SIGILL, &act, NULL, sizeof(act.mask));
	while (probe_now_ms() - start < 400)
		usleep(10 * 1000);
	qsort(values, 5, sizeof(values[0]), by_value_again);
	__asm__ volatile("ud2" ::: "memory");
	printf("raw sorted %d %d %d %d %d, raw handler ran %d\n", values[0], values[1], values[2],
	       values[3], values[4], raw_runs);
	fflush(stdout);
}

int main(void)
{
	struct sigaction sa, old;

	__asm__ volatile("ud2" ::: "memory");
	printf("early handler ran %d\n", early_runs);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigill;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGILL, NULL, &old);
	printf("handler shown: %s\n", old.sa_sigaction == on_sigill ? "the program's" : "another");
	for (int i = 0; i < 3; i++) {
		undefined_instruction();
		send_one();
	}
	printf("faults %d, sent %d\n", faults, sent);
	in_child("default", default_action);
	in_child("sysv", sysv_handler);
	in_child("raw", raw_handler);
	probe("end");
	return 0;
}
