// SPDX-License-Identifier: MIT
/*
 * glibc's belief that the process has one thread (__libc_single_threaded,
 * which malloc, mutexes and libstdc++ read too) must be what it is natively:
 * set while main runs alone, even while the runtime's policy thread works
 * beside it (about 300 first calls through pointers, each a new edge, so
 * DACCE_EPOCH_STRESS re-encodes all along while main allocates), set in a
 * fork child, and clear for good once the program makes a thread of its
 * own, in the parent and in a child that makes one.  Under the runtime it
 * read 0 from the start: the policy thread had ended it.
 */
#include <pthread.h>
#include <sys/single_threaded.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define N_STEPS 300

static volatile int sink;

static void say(const char *where)
{
	printf("%s: single-threaded %d\n", where, __libc_single_threaded);
	fflush(stdout);
}

NOINLINE static void *churn(int round)
{
	void *kept[16];

	for (int i = 0; i < 16; i++) {
		kept[i] = malloc((size_t)(16 + 40 * ((round + i) % 30)));
		memset(kept[i], round, 16);
	}
	for (int i = 0; i < 15; i++)
		free(kept[i]);
	return kept[15];
}

/* N_STEPS functions of their own, each met first through a pointer. */
#define STEP(n)                                                                   \
	NOINLINE static int step##n(int x)                                        \
	{                                                                         \
		free(churn(x + n));                                               \
		return x + n + sink;                                              \
	}
#define STEP10(t) STEP(t##0) STEP(t##1) STEP(t##2) STEP(t##3) STEP(t##4) \
	STEP(t##5) STEP(t##6) STEP(t##7) STEP(t##8) STEP(t##9)
STEP10(1) STEP10(2) STEP10(3) STEP10(4) STEP10(5) STEP10(6) STEP10(7) STEP10(8)
STEP10(9) STEP10(10) STEP10(11) STEP10(12) STEP10(13) STEP10(14) STEP10(15)
STEP10(16) STEP10(17) STEP10(18) STEP10(19) STEP10(20) STEP10(21) STEP10(22)
STEP10(23) STEP10(24) STEP10(25) STEP10(26) STEP10(27) STEP10(28) STEP10(29)
STEP10(30)

#define REF(n) step##n,
#define REF10(t) REF(t##0) REF(t##1) REF(t##2) REF(t##3) REF(t##4) \
	REF(t##5) REF(t##6) REF(t##7) REF(t##8) REF(t##9)
static int (*const steps[N_STEPS])(int) = {
	REF10(1) REF10(2) REF10(3) REF10(4) REF10(5) REF10(6) REF10(7) REF10(8)
	REF10(9) REF10(10) REF10(11) REF10(12) REF10(13) REF10(14) REF10(15)
	REF10(16) REF10(17) REF10(18) REF10(19) REF10(20) REF10(21) REF10(22)
	REF10(23) REF10(24) REF10(25) REF10(26) REF10(27) REF10(28) REF10(29)
	REF10(30)
};

NOINLINE static long walk_steps(int rounds)
{
	long total = 0;

	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < N_STEPS; i++)
			total += steps[i](r);
	probe("steps");
	return total;
}

static void *worker(void *arg)
{
	probe("worker");
	return arg;
}

NOINLINE static void make_a_thread(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
		exit(2);
}

int main(void)
{
	pid_t child;
	int status;

	say("start");
	printf("steps: %ld\n", walk_steps(3));
	say("after the steps");
	child = fork();
	if (child == 0) {
		say("child");
		walk_steps(1);
		make_a_thread();
		say("child after its thread");
		_exit(0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return 1;
	say("parent after the child");
	make_a_thread();
	say("after a thread");
	walk_steps(1);
	return 0;
}
