// SPDX-License-Identifier: MIT
/*
 * Handlers on an alternate signal stack (sigaltstack, SA_ONSTACK), in the
 * main thread and in a second thread with its own alternate stack: a signal
 * raised at several depths, a second one raised inside its handler (nested,
 * already on the alternate stack), and SIGSEGV on a page the program
 * protected, faulting in its own code and inside libc (memset); the SIGSEGV
 * handler opens the page and returns, so the faulting instruction runs again.
 * Probes in every handler, and after each signal in the interrupted code.
 * (Leaving a SIGSEGV handler with siglongjmp: segvjump.c.)
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define ALT_SIZE (64 * 1024)

static volatile int sink;
static char *page;
static size_t page_size;
static volatile int faults, not_on_alt_stack;

static bool running_on_alt_stack(void)
{
	stack_t now;

	return sigaltstack(NULL, &now) == 0 && (now.ss_flags & SS_ONSTACK);
}

/* probe_fault_at for the pc a fault interrupted. */
NOINLINE static void probe_fault(const char *tag, const ucontext_t *uc)
{
	probe_fault_at(tag, (void *)uc->uc_mcontext.gregs[REG_RIP]);
}

static void alt_stack_on(void)
{
	stack_t alt = { .ss_sp = malloc(ALT_SIZE), .ss_size = ALT_SIZE, .ss_flags = 0 };

	sigaltstack(&alt, NULL);
}

static void alt_stack_off(void)
{
	stack_t alt = { .ss_flags = SS_DISABLE }, old;

	sigaltstack(NULL, &old);
	sigaltstack(&alt, NULL);
	free(old.ss_sp);
}

/* SIGUSR1, and SIGUSR2 raised inside its handler. */
static __thread const char *who = "main";

NOINLINE static void in_usr2(void)
{
	char tag[48];

	snprintf(tag, sizeof(tag), "%s usr2-handler", who);
	probe_through(tag);
	not_on_alt_stack += !running_on_alt_stack();
}

static void on_usr2(int sig)
{
	(void)sig;
	in_usr2();
}

NOINLINE static void in_usr1(int depth)
{
	char tag[48];

	snprintf(tag, sizeof(tag), "%s usr1-handler", who);
	probe_through(tag);
	not_on_alt_stack += !running_on_alt_stack();
	if (depth % 2)
		raise(SIGUSR2); /* nested, on the alternate stack already */
}

static __thread int raised_at;

static void on_usr1(int sig)
{
	(void)sig;
	in_usr1(raised_at);
}

NOINLINE static void raise_from(int depth, int at)
{
	char tag[48];

	if (depth > 0) {
		raise_from(depth - 1, at);
		sink++;
		return;
	}
	raised_at = at;
	raise(SIGUSR1);
	snprintf(tag, sizeof(tag), "%s after-raise", who);
	probe(tag);
}

/* SIGSEGV: a protected page; the handler opens it and the access runs again. */
static void on_segv(int sig, siginfo_t *info, void *context)
{
	char tag[48];
	char *at = info->si_addr;

	(void)sig;
	faults++;
	not_on_alt_stack += !running_on_alt_stack();
	snprintf(tag, sizeof(tag), "%s segv-handler", who);
	if (probe_in_program((void *)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP]))
		probe_fault(tag, context);
	else
		probe_through(tag); /* inside libc: its pc is not a program frame */
	if (at >= page && at < page + page_size)
		mprotect(page, page_size, PROT_READ | PROT_WRITE);
	else
		abort();
}

NOINLINE static void write_protected(int depth, int value)
{
	if (depth > 0) {
		write_protected(depth - 1, value);
		sink++;
		return;
	}
	page[value] = (char)value; /* faults in the program's own code */
}

NOINLINE static void clear_protected(int depth)
{
	if (depth > 0) {
		clear_protected(depth - 1);
		sink++;
		return;
	}
	memset(page, 0, page_size); /* faults inside libc */
	sink += page[1];
}

NOINLINE static void fault_rounds(int rounds)
{
	char tag[48];

	for (int round = 0; round < rounds; round++) {
		mprotect(page, page_size, PROT_NONE);
		if (round % 2)
			clear_protected(round % 4);
		else
			write_protected(round % 5, round + 1);
		if (round % 3 == 0) {
			snprintf(tag, sizeof(tag), "%s after-fault", who);
			probe(tag);
		}
	}
}

static void *second_thread(void *arg)
{
	(void)arg;
	who = "thread";
	alt_stack_on(); /* alternate stacks are per thread */
	for (int depth = 0; depth < 3; depth++)
		raise_from(depth * 3, depth);
	fault_rounds(6);
	alt_stack_off();
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t thread;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	page = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	alt_stack_on();
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_ONSTACK;
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_flags = SA_ONSTACK | SA_SIGINFO;
	sa.sa_sigaction = on_segv;
	sigaction(SIGSEGV, &sa, NULL);

	for (int depth = 0; depth < 4; depth++)
		raise_from(depth * 2, depth);
	fault_rounds(8);
	/* After the main thread's faults: page is shared. */
	pthread_create(&thread, NULL, second_thread, NULL);
	pthread_join(thread, NULL);
	probe("main");
	printf("faults %d, handlers not on the alternate stack %d\n", faults, not_on_alt_stack);
	return 0;
}
