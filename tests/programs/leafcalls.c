// SPDX-License-Identifier: MIT
// flags: -lm
/*
 * Calls into libc functions that cannot call back (leaf calls,
 * runtime/leaves.h) are encoded in their own id space instead of pushed: a
 * thread in library code is then inside the leaf call its id names.  Checked
 * where only that id says where the thread is: a fault inside memcpy, strlen
 * and memset (the handler's context sits on top of the leaf call), from two
 * call paths, under recursion (a sub-path above pushed entries), at the end
 * of a tail call; and a thread stopped by re-encodings while it runs memset
 * (its state moves to the new epoch's leaf id space).  The contexts after
 * each leaf call (libc's and libm's) are probed too.  The faulting sites run first on good memory
 * until the runtime re-encodes: a leaf call is pushed until then, like any
 * edge found since the last epoch.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static sigjmp_buf escape;
static char *volatile guard;  /* a page nothing may touch */
static char *volatile target; /* guard, or a buffer while the sites warm up */
static char room[4096];
static size_t volatile length = 64;
static volatile int sink;

static void probe_faulted(const char *tag)
{
	if (target == guard)
		probe(tag);
}

static void on_segv(int sig)
{
	(void)sig;
	probe_through("in-leaf-handler");
	siglongjmp(escape, 1);
}

NOINLINE static void fault_in_memcpy(const char *tag)
{
	char src[64] = { 1 };

	if (!sigsetjmp(escape, 1))
		memcpy(target, src, length);
	probe_faulted(tag);
}

NOINLINE static void fault_in_strlen(void)
{
	if (!sigsetjmp(escape, 1))
		sink += (int)strlen(target);
	probe_faulted("after-strlen-fault");
}

NOINLINE static void path_a(void)
{
	fault_in_memcpy("after-memcpy-fault-a");
	sink++;
}

NOINLINE static void path_b(void)
{
	fault_in_memcpy("after-memcpy-fault-b");
	fault_in_strlen();
	sink++;
}

NOINLINE static void recurse(int depth)
{
	if (depth == 0)
		fault_in_memcpy("after-memcpy-fault-deep");
	else
		recurse(depth - 1);
	sink++;
}

/* Its memset is a tail call: the fault lands after the caller's frame is gone. */
NOINLINE static void *clear_tail(void *to, size_t n)
{
	return memset(to, 0, n);
}

NOINLINE static void fault_after_tail(void)
{
	if (!sigsetjmp(escape, 1))
		clear_tail(target, length);
	probe_faulted("after-tail-memset-fault");
}

/* Ordinary leaf calls: the context after each is the caller's again. */
NOINLINE static size_t measure(const char *s)
{
	size_t n = strlen(s);
	char *copy = malloc(n + 1);

	memcpy(copy, s, n + 1);
	probe("after-malloc-memcpy");
	n += (size_t)strcmp(copy, s);
	free(copy);
	probe("after-free");
	return n;
}

/* libm's functions are leaves too (runtime/leaves.c). */
NOINLINE static double curve(double x)
{
	double y = exp(x) + sin(x) + pow(x, 1.5);

	probe("after-libm");
	return y;
}

static volatile int worker_started;

static void *worker(void *arg)
{
	size_t size = 8u << 20;
	char *buf = malloc(size);

	(void)arg;
	worker_started = 1;
	for (int i = 0; i < 60 && buf; i++)
		memset(buf, i, size);
	probe("worker-after-memsets");
	free(buf);
	return NULL;
}

/* New edges while the worker runs memset: each may start a re-encoding. */
#define STEP(n) NOINLINE static void step##n(void) { sink += n; }
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9)
STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)

NOINLINE static void new_edges(void)
{
	step0(); step1(); step2(); step3(); step4(); step5(); step6(); step7();
	step8(); step9(); step10(); step11(); step12(); step13(); step14(); step15();
}

/* The leaf calls' sites, run until the runtime re-encodes (their pushes make it due), or 1 s. */
NOINLINE static void warm_up(void)
{
	probe_context_get_fn get = probe_context_get();
	uint64_t before = probe_epoch_now(get);
	long deadline = probe_now_ms() + 1000;

	target = room;
	do {
		for (int i = 0; i < 2000; i++) {
			path_a();
			path_b();
			recurse(3);
			fault_after_tail();
		}
	} while (get && probe_epoch_now(get) == before && probe_now_ms() < deadline);
	target = guard;
}

/* New edges while the worker runs memset, until one makes a re-encoding due (or 1 s). */
NOINLINE static void new_edges_until_an_epoch(void)
{
	probe_context_get_fn get = probe_context_get();
	uint64_t before = probe_epoch_now(get);
	long deadline = probe_now_ms() + 1000;

	do
		new_edges();
	while (get && probe_epoch_now(get) == before && probe_now_ms() < deadline);
}

int main(void)
{
	struct sigaction sa;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sa.sa_flags = SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED)
		return 1;

	sink += (int)measure("leaf calls");
	for (int i = 0; i < 3; i++)
		sink += (int)curve(0.5 + i);
	warm_up();
	path_a();
	path_b();
	path_a();
	recurse(3);
	fault_after_tail();

	pthread_create(&t, NULL, worker, NULL);
	while (!worker_started)
		usleep(100);
	new_edges_until_an_epoch();
	pthread_join(t, NULL);
	probe("end");
	return 0;
}
