// SPDX-License-Identifier: MIT
/*
 * Three threads each open a library (dlthreads.lib.c), call into it through
 * a dlsym'd pointer, are called back from its frames, and close it, 60
 * times, while the others do the same: the library is instrumented when a
 * lookup first sees it loaded, forgotten whenever the last handle closes
 * and it is unmapped, and loaded again, often at the same place, while
 * other threads are between their dlopen and their call.  PROBE_LIBRARY
 * makes its frames count as the program's: every probe in a callback must
 * be exact, library frames included.
 */
#define PROBE_LIBRARY "libdlthreads-"
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "probe.h"
#include "programplace.h"

#define NOINLINE __attribute__((noinline))
#define THREADS 3
#define ROUNDS 60

typedef int (*callback_fn)(int);
typedef int (*work_fn)(callback_fn, int);

static char lib_path[PATH_MAX];
static volatile int sink;

NOINLINE static int deeper(int x)
{
	if (x % 20 == 0)
		probe("callback-deeper");
	return x + sink;
}

static int callback(int x)
{
	return deeper(x) + 1;
}

NOINLINE static int one_round(int round)
{
	void *handle = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	work_fn work;
	int r;

	if (!handle) {
		printf("dlopen: %s\n", dlerror());
		exit(3);
	}
	work = (work_fn)dlsym(handle, "lib_work");
	if (!work)
		exit(4);
	r = work(callback, round);
	if (round % 20 == 0)
		probe("after-work");
	dlclose(handle);
	return r;
}

static void *thread_main(void *unused)
{
	int r = 0;

	(void)unused;
	for (int round = 0; round < ROUNDS; round++)
		r += one_round(round);
	return (void *)(long)r;
}

int main(void)
{
	pthread_t threads[THREADS];
	long total = 0;

	library_next_to_program(lib_path, sizeof(lib_path));
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&threads[i], NULL, thread_main, NULL))
			return 2;
	for (int i = 0; i < THREADS; i++) {
		void *r;

		pthread_join(threads[i], &r);
		total += (long)r;
	}
	printf("total %ld\n", total);
	return 0;
}
