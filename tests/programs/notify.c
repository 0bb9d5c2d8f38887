// SPDX-License-Identifier: MIT
/*
 * Notifications glibc runs on threads it starts itself (SIGEV_THREAD): a
 * timer's expiry and a message arriving on an empty queue.  The threads are
 * made by glibc's internal pthread_create, which the runtime cannot
 * interpose; the program died at the notification's first pushed call (a
 * null ccStack) before timer_create and mq_notify were interposed
 * (runtime/notify.c).  Each notification is a root, as a thread's start
 * routine is: it recurses, calls through a pointer, sorts with a comparator
 * (a callback through libc) and probes on the way.
 */
#include <fcntl.h>
#include <mqueue.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define ROUNDS 3

static sem_t done;
static volatile int sink;

NOINLINE static int by_value(const void *a, const void *b)
{
	probe("comparator");
	return *(const int *)a - *(const int *)b;
}

NOINLINE static int depth(int n)
{
	if (n == 0) {
		probe("depth");
		return 0;
	}
	return depth(n - 1) + 1 + sink;
}

static int (*const through_pointer)(int) = depth;

NOINLINE static void on_notification(union sigval value)
{
	int values[3] = { 3, 1, 2 };

	probe(value.sival_int ? "queue" : "timer");
	sink += through_pointer(3 + value.sival_int);
	qsort(values, 2, sizeof(values[0]), by_value);
	printf("notification %d sorted %d %d\n", value.sival_int, values[0], values[1]);
	fflush(stdout);
	sem_post(&done);
}

NOINLINE static int timer_rounds(void)
{
	struct sigevent event = {
		.sigev_notify = SIGEV_THREAD,
		.sigev_notify_function = on_notification,
		.sigev_value.sival_int = 0,
	};
	struct itimerspec once = { .it_value = { 0, 1000000 } };

	for (int i = 0; i < ROUNDS; i++) {
		timer_t timer;

		if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0 ||
		    timer_settime(timer, 0, &once, NULL) != 0)
			return -1;
		sem_wait(&done);
		timer_delete(timer);
	}
	return 0;
}

NOINLINE static int queue_rounds(void)
{
	struct mq_attr attr = { .mq_maxmsg = 4, .mq_msgsize = 16 };
	struct sigevent event = {
		.sigev_notify = SIGEV_THREAD,
		.sigev_notify_function = on_notification,
		.sigev_value.sival_int = 1,
	};
	char name[64], message[16];
	mqd_t queue;

	snprintf(name, sizeof(name), "/dacce-notify-%d", (int)getpid());
	queue = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
	if (queue == (mqd_t)-1) {
		/* A kernel without POSIX queues: the same line natively and under the runtime. */
		printf("no message queues\n");
		return 0;
	}
	mq_unlink(name);
	for (int i = 0; i < ROUNDS; i++) {
		if (mq_notify(queue, &event) != 0 || mq_send(queue, "x", 2, 0) != 0)
			return -1;
		sem_wait(&done);
		if (mq_receive(queue, message, sizeof(message), NULL) != 2)
			return -1;
	}
	mq_close(queue);
	return 0;
}

int main(void)
{
	sem_init(&done, 0, 0);
	probe("main");
	if (timer_rounds() != 0 || queue_rounds() != 0) {
		printf("a notification could not be set up\n");
		return 1;
	}
	printf("done\n");
	return 0;
}
