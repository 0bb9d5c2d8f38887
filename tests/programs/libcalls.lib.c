// SPDX-License-Identifier: MIT
/*
 * The library libcalls.c is linked against (a DT_NEEDED library, loaded at
 * start, which the runtime instruments as it does the program).  Calls
 * inside it of every kind: direct to static helpers, through its own PLT to
 * its exported functions, to a hidden one, recursion, mutual recursion,
 * through a table, tail calls (to a static function, through the PLT, out
 * to the program through a pointer), calls back into the program, a thread
 * whose start routine is here, and qsort with a comparator here (the
 * native stack then runs through libc: partial under the runtime).
 */
#include <pthread.h>

#include "libcalls.h"

#define NOINLINE __attribute__((noinline))

static volatile int lib_sink;
static volatile int lib_last;

/* Exported: its calls from inside the library go through the library's PLT. */
NOINLINE int lib_probed(const char *tag, int x)
{
	probe(tag);
	return x * x + lib_sink;
}

/* ---------------------------------------------------------------- pointers */

NOINLINE static int op_negate(int x)
{
	probe("lib-op-static");
	return -x + lib_sink;
}

NOINLINE int lib_triple(int x)
{
	probe("lib-op-exported");
	return 3 * x + lib_sink;
}

/* For the program to call through: an exported function and a static one. */
lc_fn lib_get_op(int which)
{
	return which ? op_negate : lib_triple;
}

/* ---------------------------------------------------------------- direct */

NOINLINE static int step_two(int x)
{
	probe("lib-static-helper");
	return x - 1 + lib_sink;
}

NOINLINE static int step_one(int x)
{
	return step_two(x * 2) + 1 + lib_sink;
}

/* Called directly, not through the PLT, although not static. */
__attribute__((visibility("hidden"))) NOINLINE int lib_hidden(int x)
{
	probe("lib-hidden");
	return x + 7 + lib_sink;
}

NOINLINE int lib_chain(int x)
{
	int r = step_one(x);

	r += lib_hidden(r);
	r += lib_probed("lib-plt-internal", r);
	probe("lib-after-chain");
	return r + lib_sink;
}

/* ---------------------------------------------------------------- recursion */

NOINLINE static int recurse(int n)
{
	if (n == 0) {
		probe("lib-recursion-bottom");
		return 0;
	}
	return recurse(n - 1) + lib_sink + 1;
}

NOINLINE int lib_recurse(int n)
{
	int r = recurse(n);

	probe("lib-after-recursion");
	return r + lib_sink;
}

NOINLINE static int odd_steps(int n);

NOINLINE static int even_steps(int n)
{
	if (n == 0) {
		probe("lib-mutual-bottom");
		return 0;
	}
	return odd_steps(n - 1) + 1 + lib_sink;
}

NOINLINE static int odd_steps(int n)
{
	return even_steps(n - 1) + 2 + lib_sink;
}

/* n even: even_steps and odd_steps alternate n levels down. */
NOINLINE int lib_mutual(int n)
{
	return even_steps(n) + lib_sink;
}

/* ---------------------------------------------------------------- table */

NOINLINE static int t_add(int x)
{
	probe("lib-table-add");
	return x + 11 + lib_sink;
}

NOINLINE static int t_mul(int x)
{
	probe("lib-table-mul");
	return x * 13 + lib_sink;
}

NOINLINE static int t_chain(int x)
{
	return step_one(x + 20) + 2 + lib_sink; /* step_two probes again, from here */
}

static lc_fn const table[4] = { t_add, t_mul, lib_triple, t_chain };

/* One indirect site, four library functions (one of them exported). */
NOINLINE int lib_dispatch(int i, int x)
{
	return table[i & 3](x) + 1 + lib_sink;
}

/* ---------------------------------------------------------------- tail calls */

NOINLINE static int tail_target(int x)
{
	probe("lib-tail-target");
	return x * 5 + lib_sink;
}

/* At -O2 and above, jumps: natively these frames are gone from the stack. */
NOINLINE int lib_tail_in(int x)
{
	lib_last = x;
	return tail_target(x + 1);
}

NOINLINE int lib_tail_plt(int x)
{
	lib_last = x;
	return lib_probed("lib-tail-plt", x + 1);
}

NOINLINE int lib_tail_out(lc_fn f, int x)
{
	lib_last = x;
	return f(x * 2);
}

/* ---------------------------------------------------------------- callbacks */

/* Not a tail call: the library's frame stays under the callback's. */
NOINLINE int lib_apply(lc_fn f, int x)
{
	int r = f(x + 1);

	probe("lib-after-callback");
	return r * 2 + 1 + lib_sink;
}

/* Calls back from n frames down inside the library. */
NOINLINE int lib_nested(lc_fn f, int n)
{
	if (n <= 0)
		return f(n) + 1 + lib_sink;
	return lib_nested(f, n - 1) + 1 + lib_sink;
}

/* ---------------------------------------------------------------- thread */

struct lib_job {
	lc_fn f;
	int x;
	int r;
};

NOINLINE static int thread_helper(int x)
{
	probe("lib-thread-helper");
	return x + 3 + lib_sink;
}

/* The thread's start routine: a root of its own contexts, in the library. */
static void *lib_thread(void *arg)
{
	struct lib_job *job = arg;
	int r;

	probe("lib-thread-start");
	probe_through("lib-thread-through");
	r = thread_helper(job->x);
	r += job->f(job->x);
	r += lib_probed("lib-thread-probed", job->x);
	job->r = r;
	return NULL;
}

NOINLINE int lib_spawn(lc_fn f, int x)
{
	struct lib_job job = { f, x, 0 };
	pthread_t thread;

	if (pthread_create(&thread, NULL, lib_thread, &job) != 0)
		return -1;
	pthread_join(thread, NULL);
	probe("lib-after-join");
	return job.r + lib_sink;
}

/* ---------------------------------------------------------------- qsort */

#define LIB_N 32

static int lib_values[LIB_N];
static int compares;

NOINLINE static int key_of(const int *p)
{
	/* A call inside the comparator: library frames above libc's. */
	if (compares == 5)
		probe("lib-compare-key");
	return *p % 100 + lib_sink;
}

static int lib_compare(const void *a, const void *b)
{
	int x = key_of(a), y = key_of(b);

	if (++compares == 1)
		probe("lib-compare-first");
	return (x > y) - (x < y);
}

NOINLINE int lib_sort(int seed)
{
	for (int i = 0; i < LIB_N; i++)
		lib_values[i] = (i * 7919 + seed) % 1000;
	qsort(lib_values, LIB_N, sizeof(int), lib_compare);
	probe("lib-after-qsort");
	return lib_values[0] + lib_values[LIB_N - 1] + compares + lib_sink;
}
