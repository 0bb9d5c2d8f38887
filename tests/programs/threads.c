// SPDX-License-Identifier: MIT
/* Eight threads racing through the first calls of the same sites. */
#include <pthread.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define THREADS 8

static volatile int sink;
static pthread_barrier_t start_together;

NOINLINE static int work(int x)
{
	if (x == 3)
		probe("work");
	return x * 2 + sink;
}

NOINLINE static int layer(int x) { return work(x) + work(x + 1) + sink; }

static void *worker(void *arg)
{
	long id = (long)arg, r = 0;

	pthread_barrier_wait(&start_together);
	for (int i = 0; i < 2000; i++)
		r += layer((int)(i % 7 == 3 && i < 7 ? 2 : 10));
	r += layer((int)id == 0 ? 2 : 20);
	return (void *)r;
}

int main(void)
{
	pthread_t threads[THREADS];
	long total = 0;

	pthread_barrier_init(&start_together, NULL, THREADS);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&threads[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++) {
		void *r;

		pthread_join(threads[i], &r);
		total += (long)r;
	}
	probe("main");
	printf("result %ld\n", total);
	return 0;
}
