// SPDX-License-Identifier: MIT
/*
 * Eight threads, each with its own call pattern (recursion, an indirect
 * table, mutual recursion, tail calls, a libc callback, longjmp, and threads
 * started from deep inside other threads, three generations deep), all
 * released together so first calls race, each keeping its own thread-local
 * counters (checked at the end: the runtime's TLS block must not overlap the
 * program's).  A thread's context starts at its start routine, whoever
 * created it and from how deep; the creator's context must be intact after
 * pthread_create and pthread_join.
 */
#include <pthread.h>
#include <setjmp.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define THREADS 8
#define ROUNDS 300

static volatile int sink;
static pthread_barrier_t start_together;
static __thread long tls_calls;
static __thread int tls_seed = 7; /* initialised TLS: each thread starts from the image */
static __thread char tls_name[24];
static int bad;
static pthread_mutex_t bad_lock = PTHREAD_MUTEX_INITIALIZER;

NOINLINE static void mark(const char *what, int n)
{
	char tag[80];

	snprintf(tag, sizeof(tag), "%s %s %d", tls_name, what, n);
	probe(tag);
}

NOINLINE static void check(const char *what, long got, long want)
{
	if (got != want) {
		pthread_mutex_lock(&bad_lock);
		printf("BAD %s %s: %ld, expected %ld\n", tls_name, what, got, want);
		bad++;
		pthread_mutex_unlock(&bad_lock);
	}
}

/* Pattern 0: plain recursion. */
NOINLINE static long recurse(int n, int round)
{
	tls_calls++;
	if (n == 0) {
		if (round % 100 == 0)
			mark("recursion-bottom", round);
		return 1;
	}
	return recurse(n - 1, round) + 1 + sink;
}

/* Pattern 1: an indirect call site with ten targets. */
#define T(i) NOINLINE static long t##i(int x) { tls_calls++; if (x == 250 + i) mark("table", i); return x * i + sink; }
T(0) T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9)
static long (*const table[10])(int) = { t0, t1, t2, t3, t4, t5, t6, t7, t8, t9 };

NOINLINE static long through_table(int round)
{
	return table[round % 10](round) + 1;
}

/* Pattern 2: mutual recursion. */
NOINLINE static long odd(int n, int round);

NOINLINE static long even(int n, int round)
{
	tls_calls++;
	if (n == 0) {
		if (round % 75 == 0)
			mark("mutual-bottom", round);
		return 0;
	}
	return odd(n - 1, round) + sink;
}

NOINLINE static long odd(int n, int round)
{
	tls_calls++;
	return n == 0 ? 1 : even(n - 1, round) + sink;
}

/* Pattern 3: tail calls. */
NOINLINE static long tail_end(int x)
{
	tls_calls++;
	if (x % 97 == 0)
		mark("tail-end", x);
	return x + sink;
}

static long (*volatile tail_ptr)(int) = tail_end;
NOINLINE static long tail_b(int x) { tls_calls++; return tail_ptr(x + 1); }
NOINLINE static long tail_a(int x) { tls_calls++; return tail_b(x + 1); }

/* Pattern 4: a qsort callback (partial), and the caller exact afterwards. */
static int compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	tls_calls++;
	return (x > y) - (x < y);
}

NOINLINE static long sort_some(int round)
{
	int v[8];

	for (int i = 0; i < 8; i++)
		v[i] = (round * 7 + i * 5) % 8;
	qsort(v, 8, sizeof(int), compare);
	if (round % 100 == 0)
		mark("after-qsort", round);
	return v[0] + v[7];
}

/* Patterns 5 and 6: threads started from deep inside a thread. */
struct child {
	int generation, index;
};

static void *child_main(void *arg);

NOINLINE static long spawn_at(int depth, int generation, int index)
{
	pthread_t thread;
	struct child c = { generation, index };
	void *result;

	if (depth > 0)
		return spawn_at(depth - 1, generation, index) + sink;
	tls_calls++;
	pthread_create(&thread, NULL, child_main, &c);
	mark("after-create", generation);
	pthread_join(thread, &result);
	mark("after-join", generation);
	return (long)result;
}

NOINLINE static long child_work(int generation)
{
	tls_calls++;
	mark("child-work", generation);
	if (generation < 3) /* a grandchild, from three frames down */
		return spawn_at(3, generation + 1, 0) + 1;
	return 1;
}

static void *child_main(void *arg)
{
	const struct child *c = arg;

	snprintf(tls_name, sizeof(tls_name), "child%d.%d", c->generation, c->index);
	check("fresh tls_calls", tls_calls, 0);
	check("fresh tls_seed", tls_seed, 7);
	return (void *)child_work(c->generation);
}

/* Pattern 7: longjmp out of a recursion. */
static __thread jmp_buf *tls_env;

NOINLINE static void dive(int n)
{
	tls_calls++;
	if (n == 0) {
		if (tls_env)
			longjmp(*tls_env, 1);
		return;
	}
	dive(n - 1);
	sink++;
}

NOINLINE static long jump_round(int round)
{
	jmp_buf env;

	tls_env = &env;
	if (setjmp(env) == 0)
		dive(round % 20);
	if (round % 100 == 0)
		mark("after-longjmp", round);
	return 1;
}

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	long expected = 0, r = 0;

	snprintf(tls_name, sizeof(tls_name), "thread%d", id);
	tls_seed += id;
	pthread_barrier_wait(&start_together);
	for (int round = 0; round < ROUNDS; round++) {
		switch (id) {
		case 0: r += recurse(round % 50, round); expected += round % 50 + 1; break;
		case 1: r += through_table(round); expected += 1; break;
		case 2: r += even(round % 40, round); expected += round % 40 + 1; break;
		case 3: r += tail_a(round); expected += 3; break;
		case 4: r += sort_some(round); break;
		case 5: if (round % 100 == 7) r += spawn_at(4, 1, id); break;
		case 6: if (round == 150) r += spawn_at(8, 2, id); break;
		default: r += jump_round(round); expected += round % 20 + 1; break;
		}
	}
	if (id != 4 && id != 5 && id != 6)
		check("tls_calls", tls_calls, expected);
	check("tls_seed", tls_seed, 7 + id);
	mark("done", (int)(r % 1000));
	return (void *)r;
}

int main(void)
{
	pthread_t threads[THREADS];
	long total = 0;

	snprintf(tls_name, sizeof(tls_name), "main");
	pthread_barrier_init(&start_together, NULL, THREADS);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&threads[i], NULL, worker, (void *)i);
	mark("created", THREADS);
	for (int i = 0; i < THREADS; i++) {
		void *r;

		pthread_join(threads[i], &r);
		total += (long)r;
	}
	check("main tls_calls", tls_calls, 0);
	mark("joined", THREADS);
	printf("total %ld, %d bad\n", total, bad);
	return bad != 0;
}
