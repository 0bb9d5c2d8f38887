// SPDX-License-Identifier: MIT
/*
 * SIGSEGV handlers on an alternate stack that leave with siglongjmp, for
 * faults in the program's own code, in libc (strlen of a bad pointer) and a
 * stack overflow in a thread with a small stack (its own alternate stack);
 * plus raised signals handled on the alternate stack.  Probes in the
 * handlers, and after each siglongjmp, where the context must be the one
 * sigsetjmp saw, also when a re-encoding came in between
 * (DACCE_EPOCH_STRESS=1: the setjmp marks are translated).
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <ucontext.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define ALT_SIZE (64 * 1024)

static volatile int sink;
static char *volatile nowhere; /* NULL: faults, and the compiler cannot know */
static sigjmp_buf recover;
static volatile sig_atomic_t faults;
static bool on_alt_stack;

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

/* SIGUSR1 and SIGUSR2 on the alternate stack. */
NOINLINE static void in_usr2(void)
{
	probe_through("usr2-handler");
	sink++;
}

static void on_usr2(int sig)
{
	(void)sig;
	in_usr2();
}

NOINLINE static void in_usr1(int round)
{
	on_alt_stack = running_on_alt_stack();
	probe_through("usr1-handler");
	if (round == 1)
		raise(SIGUSR2); /* nested, already on the alternate stack */
	sink++;
}

static int usr1_round;

static void on_usr1(int sig)
{
	(void)sig;
	in_usr1(usr1_round);
}

NOINLINE static void raise_from(int depth, int round)
{
	if (depth > 0) {
		raise_from(depth - 1, round);
		sink++;
		return;
	}
	usr1_round = round;
	raise(SIGUSR1);
	probe("after-raise");
}

/* SIGSEGV: record, probe, and leave through siglongjmp. */
NOINLINE static void in_segv(const ucontext_t *uc, int kind)
{
	char tag[48];

	faults++;
	snprintf(tag, sizeof(tag), "segv-handler kind %d", kind);
	if (kind == 0)
		probe_fault(tag, uc);
	else
		probe_through(tag); /* the fault is in libc: its pc is not a program frame */
}

static volatile int fault_kind;

static void on_segv(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)info;
	if (fault_kind != 2) /* the stack overflow: too deep to compare frame by frame */
		in_segv(context, fault_kind);
	siglongjmp(recover, 1);
}

NOINLINE static void poke(int depth)
{
	if (depth > 0) {
		poke(depth - 1);
		sink++;
		return;
	}
	*nowhere = 1; /* a fault in the program's own code */
	sink++;
}

NOINLINE static size_t measure(int depth)
{
	if (depth > 0)
		return measure(depth - 1) + (size_t)sink;
	return strlen(nowhere); /* a fault in libc */
}

NOINLINE static int guarded(int round)
{
	volatile int recovered = 0; /* across siglongjmp */

	fault_kind = round % 2;
	if (sigsetjmp(recover, 1) == 0) {
		if (fault_kind == 0)
			poke(round % 5);
		else
			sink += (int)measure(round % 4);
	} else {
		recovered = 1;
	}
	if (round % 3 == 0)
		probe("after-siglongjmp");
	return recovered;
}

/* Overflow: each level keeps a page busy so a small stack runs out quickly. */
static volatile long never = 1L << 40;

NOINLINE static long overflow(long n)
{
	volatile char page[4096];

	if (n == never)
		return 0;
	page[0] = (char)n;
	page[4095] = (char)n;
	return overflow(n + 1) + page[0] + page[4095];
}

static void *overflow_thread(void *arg)
{
	stack_t alt = { .ss_sp = malloc(ALT_SIZE), .ss_size = ALT_SIZE, .ss_flags = 0 };
	volatile long recovered = 0; /* across siglongjmp */

	(void)arg;
	sigaltstack(&alt, NULL); /* per thread: the overflowed stack cannot run the handler */
	for (int round = 0; round < 3; round++) {
		fault_kind = 2;
		if (sigsetjmp(recover, 1) == 0)
			sink += (int)overflow(0);
		else
			recovered++;
		probe("thread-after-overflow");
	}
	alt.ss_flags = SS_DISABLE;
	sigaltstack(&alt, NULL);
	free(alt.ss_sp);
	return (void *)recovered;
}

int main(void)
{
	stack_t alt = { .ss_sp = malloc(ALT_SIZE), .ss_size = ALT_SIZE, .ss_flags = 0 };
	struct sigaction sa;
	pthread_attr_t attr;
	pthread_t thread;
	void *thread_recovered;
	int recovered = 0;

	sigaltstack(&alt, NULL);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_ONSTACK;
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_flags = SA_ONSTACK | SA_SIGINFO | SA_NODEFER;
	sa.sa_sigaction = on_segv;
	sigaction(SIGSEGV, &sa, NULL);

	for (int round = 0; round < 3; round++)
		raise_from(round * 2, round);
	for (int round = 0; round < 12; round++)
		recovered += guarded(round);

	/* Serialised after the faults above: recover and fault_kind are shared. */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_create(&thread, &attr, overflow_thread, NULL);
	pthread_join(thread, &thread_recovered);
	probe("main");
	printf("on alternate stack %d, recovered %d + %ld, faults %d\n", on_alt_stack, recovered,
	       (long)thread_recovered, (int)faults);
	return 0;
}
