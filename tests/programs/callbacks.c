// SPDX-License-Identifier: MIT
/*
 * Callbacks from libc: qsort and qsort_r comparators (one sorting again from
 * inside its comparison), a bsearch comparator (glibc inlines bsearch when
 * optimising: the comparator is then called by the program itself, and its
 * context must be exact), a pthread_once init routine, twalk actions, and
 * dl_iterate_phdr's visits of the loaded modules.  Probes inside the
 * callbacks (partial under the runtime when the native stack runs through
 * libc) and in their callers after each returns (always exact).
 */
#include <link.h>
#include <pthread.h>
#include <search.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define N 64

static volatile int sink;
static int calls;

NOINLINE static int key_of(const int *p)
{
	/* A call inside the callback, so its context has program frames above libc's. */
	if (calls == 5)
		probe("key-in-compare");
	return *p % 1000 + sink;
}

static int by_key(const void *a, const void *b)
{
	int x = key_of(a), y = key_of(b);

	if (++calls == 1)
		probe("compare-first");
	return (x > y) - (x < y);
}

static int by_key_r(const void *a, const void *b, void *arg)
{
	int *count = arg;

	if (++*count == 3)
		probe("compare-r");
	return by_key(a, b);
}

/* Sorts a small array from inside the outer sort's first comparison. */
static int nested(const void *a, const void *b)
{
	static int done;

	if (!done) {
		int inner[] = { 3, 1, 2 };

		done = 1;
		qsort(inner, 3, sizeof(int), by_key);
		probe("nested-after-inner-sort");
	}
	return by_key(a, b);
}

static int find_key(const void *key, const void *elem)
{
	int k = *(const int *)key, e = *(const int *)elem % 1000;

	if (k == 260 && e == 260)
		probe("bsearch-hit");
	return (k > e) - (k < e);
}

NOINLINE static int lookup(const int *sorted, int key)
{
	const int *hit = bsearch(&key, sorted, N, sizeof(int), find_key);

	probe("after-bsearch");
	return hit ? (int)(hit - sorted) : -1;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int initialised;

NOINLINE static void init_deeper(void)
{
	probe("once-init-deeper");
	initialised++;
}

static void init_once(void)
{
	probe("once-init");
	init_deeper();
}

NOINLINE static void ensure_init(int round)
{
	pthread_once(&once, init_once);
	if (round < 2)
		probe("after-once");
}

static void *thread_init(void *arg)
{
	(void)arg;
	ensure_init(5);
	probe("thread-after-once");
	return NULL;
}

static void visit(const void *node, VISIT which, int depth)
{
	if (which == leaf && **(int *const *)node == 45)
		probe("twalk-leaf");
	sink += depth;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

NOINLINE static void tree(void)
{
	static int keys[] = { 50, 42, 70, 10, 60, 90, 45 };
	void *root = NULL;

	for (int i = 0; i < 7; i++)
		tsearch(&keys[i], &root, cmp_int);
	twalk(root, visit);
	probe("after-twalk");
	while (root)
		tdelete(*(int **)root, &root, cmp_int);
}

/* Once per loaded module (more under the runtime, which brings its own): probes the first. */
static int each_module(struct dl_phdr_info *info, size_t size, void *data)
{
	int *seen = data;

	(void)size;
	if ((*seen)++ == 0 && info->dlpi_name[0] == 0) /* the program itself comes first */
		probe("phdr-program");
	return 0;
}

NOINLINE static void modules(void)
{
	int seen = 0;

	dl_iterate_phdr(each_module, &seen);
	probe("after-dl-iterate-phdr");
}

NOINLINE static void sorts(int *values)
{
	int count = 0;

	qsort(values, N, sizeof(int), by_key);
	probe("after-qsort");
	qsort_r(values, N, sizeof(int), by_key_r, &count);
	probe("after-qsort-r");
	for (int i = 0; i < N; i++)
		values[i] = (i * 37 + 11) % N * 1000 + (N - i) * 13 % 1000;
	qsort(values, N, sizeof(int), nested);
	probe("after-nested-qsort");
}

int main(void)
{
	int values[N], r = 0;
	pthread_t thread;

	for (int i = 0; i < N; i++)
		values[i] = (i * 7919) % 1000 + 1000 * i;
	sorts(values);
	r += lookup(values, 260) + lookup(values, 501); /* keys are multiples of 13 */
	for (int round = 0; round < 3; round++)
		ensure_init(round);
	pthread_create(&thread, NULL, thread_init, NULL);
	pthread_join(thread, NULL);
	tree();
	modules();
	probe("main");
	printf("result %d calls %d initialised %d\n", r, calls, initialised);
	return 0;
}
