// SPDX-License-Identifier: MIT
/*
 * Coroutines on makecontext and swapcontext.  They run on stacks of their
 * own and interleave on one thread; under the runtime all of them pushed
 * onto the thread's one ccStack and tail-record stack, each popping what
 * another pushed, and a tail stub that found no record for its frame killed
 * the program (SIGILL) until each context got a state of its own
 * (runtime/coroutines.c).  Two coroutines take turns with main, yielding
 * from recursion and from a frame entered by a tail call; one gets three
 * arguments; one starts and resumes a third; one returns, main resumes
 * through its uc_link and makes the same context again; a timer's handler
 * makes calls on whichever stack it interrupts; one started by a thread
 * that then ends is resumed by main.  Every probe's context is
 * a coroutine's own, rooted at its function, as natively.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <ucontext.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define STACK (256 * 1024)
#define TURNS 300

static ucontext_t main_context, worker[2], inner, finisher;
static volatile int sink;
static volatile sig_atomic_t ticks;

NOINLINE static int count(int n)
{
	return n == 0 ? 0 : count(n - 1) + 1 + sink;
}

static int (*const counting)(int) = count;

NOINLINE static void yield(int who)
{
	swapcontext(&worker[who], &main_context);
}

/* Yields from n calls deep; probes on the way back on some turns. */
NOINLINE static int descend(int who, int n, int turn)
{
	if (n == 0) {
		yield(who);
		if (turn % 100 == 0)
			probe(who ? "worker 1 resumed" : "worker 0 resumed");
		return 0;
	}
	return descend(who, n - 1, turn) + 1 + sink;
}

/* Ends in a tail call to a function that yields: the frame's record waits on the coroutine's stack. */
NOINLINE static int tail_to_yield(int who, int turn)
{
	sink = sink + counting(2);
	return descend(who, 1 + turn % 3, turn);
}

static int (*volatile tail_target)(int, int) = tail_to_yield;

NOINLINE static int via_tail(int who, int turn)
{
	return tail_target(who, turn);
}

static int done[2];

static void work(int who, int depth_base, int factor)
{
	for (int turn = 0; turn < TURNS; turn++) {
		sink = sink + counting(depth_base + turn % 4) * factor;
		if (turn % 2)
			via_tail(who, turn);
		else
			descend(who, depth_base + turn % 5, turn);
	}
	probe(who ? "worker 1 done" : "worker 0 done");
	done[who] = 1;
}

static void inner_body(void)
{
	probe("inner");
	sink = sink + counting(4);
	swapcontext(&inner, &worker[1]);
	probe("inner again");
}

static void worker_with_inner(int who, int depth_base, int factor)
{
	char *stack = malloc(STACK);

	getcontext(&inner);
	inner.uc_stack.ss_sp = stack;
	inner.uc_stack.ss_size = STACK;
	inner.uc_link = &worker[1];
	makecontext(&inner, inner_body, 0);
	swapcontext(&worker[1], &inner);
	probe("back from inner");
	swapcontext(&worker[1], &inner); /* inner returns: uc_link brings us back */
	probe("inner finished");
	work(who, depth_base, factor);
	free(stack);
}

static int finished_runs;

static void finishing(void)
{
	probe("finishing");
	finished_runs++;
}

static void on_tick(int sig)
{
	(void)sig;
	ticks++;
	sink = sink + counting(3);
}

/* A coroutine started on one thread and resumed on another. */
static ucontext_t wanderer, thread_context, *wanderer_resumer;

NOINLINE static int wander_down(int n)
{
	if (n == 0) {
		swapcontext(&wanderer, wanderer_resumer);
		probe("wanderer resumed");
		return 0;
	}
	return wander_down(n - 1) + 1 + sink;
}

static void wandering(void)
{
	for (int i = 0; i < 3; i++) {
		sink = sink + counting(3);
		wander_down(2 + i);
	}
	probe("wanderer done");
}

static void *start_wanderer(void *unused)
{
	(void)unused;
	wanderer_resumer = &thread_context;
	swapcontext(&thread_context, &wanderer);
	probe("thread back");
	return NULL;
}

static void make(ucontext_t *c, void *stack, ucontext_t *link)
{
	getcontext(c);
	c->uc_stack.ss_sp = stack;
	c->uc_stack.ss_size = STACK;
	c->uc_link = link;
}

int main(void)
{
	struct itimerval every = { { 0, 200 }, { 0, 200 } }, off = { { 0, 0 }, { 0, 0 } };
	char *stacks[3] = { malloc(STACK), malloc(STACK), malloc(STACK) };

	probe("main");
	signal(SIGALRM, on_tick);
	setitimer(ITIMER_REAL, &every, NULL);
	make(&worker[0], stacks[0], &main_context);
	make(&worker[1], stacks[1], &main_context);
	makecontext(&worker[0], (void (*)(void))work, 3, 0, 2, 3);
	makecontext(&worker[1], (void (*)(void))worker_with_inner, 3, 1, 1, 5);
	for (int round = 0; !done[0] || !done[1]; round++) {
		for (int who = 0; who < 2; who++)
			if (!done[who])
				swapcontext(&main_context, &worker[who]);
		if (round % 100 == 0)
			probe("main between turns");
	}
	setitimer(ITIMER_REAL, &off, NULL);
	for (int i = 0; i < 2; i++) {
		make(&finisher, stacks[2], &main_context);
		makecontext(&finisher, finishing, 0);
		swapcontext(&main_context, &finisher);
		probe("finisher returned");
	}
	make(&wanderer, stacks[2], &main_context);
	makecontext(&wanderer, wandering, 0);
	{
		pthread_t thread;

		pthread_create(&thread, NULL, start_wanderer, NULL);
		pthread_join(thread, NULL);
	}
	wanderer_resumer = &main_context;
	for (int i = 0; i < 3; i++)
		swapcontext(&main_context, &wanderer);
	probe("wanderer back home");
	printf("sink %d, finished %d\n", sink, finished_runs);
	return 0;
}
