// SPDX-License-Identifier: MIT
/*
 * Notifications glibc runs on threads it starts itself (SIGEV_THREAD): a
 * timer's expiry, a message arriving on an empty queue, a list of I/O
 * requests done (lio_listio) and name lookups done (getaddrinfo_a), and
 * single I/O requests done (aio_read, aio_write, aio_fsync, and each request
 * of a list), whose notification glibc reads from the request block itself:
 * a block submitted again as it was, and one whose value alone was written
 * again, must still notify the program's function with the program's value.  The threads are
 * made by glibc's internal pthread_create, which the runtime cannot
 * interpose; the program died at the notification's first pushed call (a
 * null ccStack) before they were interposed
 * (runtime/notify.c).  Each notification is a root, as a thread's start
 * routine is: it recurses, calls through a pointer, sorts with a comparator
 * (a callback through libc) and probes on the way.
 */
#include <aio.h>
#include <fcntl.h>
#include <mqueue.h>
#include <netdb.h>
#include <pthread.h>
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
/* The requests of a list notify at once: their lines must not interleave. */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

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

	static const char *const kinds[] = { "timer", "queue", "io list", "lookups", "io request",
					     "io list request" };

	pthread_mutex_lock(&one_at_a_time);
	probe(kinds[value.sival_int]);
	sink += through_pointer(3 + value.sival_int);
	qsort(values, 2, sizeof(values[0]), by_value);
	printf("notification %d sorted %d %d\n", value.sival_int, values[0], values[1]);
	fflush(stdout);
	pthread_mutex_unlock(&one_at_a_time);
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

NOINLINE static int io_list_rounds(void)
{
	struct sigevent event = {
		.sigev_notify = SIGEV_THREAD,
		.sigev_notify_function = on_notification,
		.sigev_value.sival_int = 2,
	};
	char path[] = "/tmp/dacce-notify-XXXXXX", bytes[8];
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, "payload", 8) != 8)
		return -1;
	unlink(path);
	for (int i = 0; i < ROUNDS; i++) {
		struct aiocb read_it = { .aio_fildes = fd, .aio_buf = bytes, .aio_nbytes = sizeof(bytes),
					 .aio_lio_opcode = LIO_READ };
		struct aiocb *const list[] = { &read_it };

		if (lio_listio(LIO_NOWAIT, list, 1, &event) != 0)
			return -1;
		sem_wait(&done);
		if (aio_return(&read_it) != (ssize_t)sizeof(bytes))
			return -1;
	}
	close(fd);
	return 0;
}

NOINLINE static int lookup_rounds(void)
{
	struct sigevent event = {
		.sigev_notify = SIGEV_THREAD,
		.sigev_notify_function = on_notification,
		.sigev_value.sival_int = 3,
	};

	for (int i = 0; i < ROUNDS; i++) {
		struct addrinfo hints = { .ai_flags = AI_NUMERICHOST, .ai_family = AF_INET };
		struct gaicb request = { .ar_name = "127.0.0.1", .ar_request = &hints };
		struct gaicb *list[] = { &request };

		if (getaddrinfo_a(GAI_NOWAIT, list, 1, &event) != 0)
			return -1;
		sem_wait(&done);
		if (gai_error(&request) != 0)
			return -1;
		freeaddrinfo(request.ar_result);
	}
	return 0;
}

/* Waits for a request's notification, then checks what the request did. */
NOINLINE static int finished(struct aiocb *block, ssize_t expected)
{
	sem_wait(&done);
	return aio_error(block) == 0 && aio_return(block) == expected ? 0 : -1;
}

NOINLINE static int io_request_rounds(void)
{
	char path[] = "/tmp/dacce-notify-XXXXXX", bytes[8];
	int fd = mkstemp(path);
	struct aiocb block = {
		.aio_buf = bytes,
		.aio_nbytes = sizeof(bytes),
		.aio_sigevent = { .sigev_notify = SIGEV_THREAD,
				  .sigev_notify_function = on_notification,
				  .sigev_value.sival_int = 4 },
	};

	if (fd < 0 || write(fd, "payload", 8) != 8)
		return -1;
	unlink(path);
	block.aio_fildes = fd;
	for (int i = 0; i < ROUNDS; i++) {
		/* Round 1 submits the block as it was; round 2 writes its value again first. */
		if (i == 2)
			block.aio_sigevent.sigev_value.sival_int = 4;
		if (aio_read(&block) != 0 || finished(&block, sizeof(bytes)) != 0)
			return -1;
	}
	if (aio_write(&block) != 0 || finished(&block, sizeof(bytes)) != 0 ||
	    aio_fsync(O_SYNC, &block) != 0 || finished(&block, 0) != 0)
		return -1;
	close(fd);
	return 0;
}

/* Two requests of one list, each with its own notification, and none for the list. */
NOINLINE static int io_list_request_rounds(void)
{
	char path[] = "/tmp/dacce-notify-XXXXXX", first[4], second[4];
	int fd = mkstemp(path);
	struct sigevent each = { .sigev_notify = SIGEV_THREAD,
				 .sigev_notify_function = on_notification,
				 .sigev_value.sival_int = 5 };
	struct aiocb a = { .aio_buf = first, .aio_nbytes = 4, .aio_lio_opcode = LIO_READ,
			   .aio_sigevent = each };
	struct aiocb b = { .aio_buf = second, .aio_nbytes = 4, .aio_offset = 4,
			   .aio_lio_opcode = LIO_READ, .aio_sigevent = each };
	struct aiocb skipped = { .aio_lio_opcode = LIO_NOP, .aio_sigevent = each };
	struct aiocb *const list[] = { &a, &skipped, &b };

	if (fd < 0 || write(fd, "payload", 8) != 8)
		return -1;
	unlink(path);
	a.aio_fildes = b.aio_fildes = fd;
	if (lio_listio(LIO_NOWAIT, list, 3, NULL) != 0 || finished(&a, 4) != 0 ||
	    finished(&b, 4) != 0)
		return -1;
	close(fd);
	return 0;
}

int main(void)
{
	sem_init(&done, 0, 0);
	probe("main");
	if (timer_rounds() != 0 || queue_rounds() != 0 || io_list_rounds() != 0 ||
	    lookup_rounds() != 0 || io_request_rounds() != 0 || io_list_request_rounds() != 0) {
		printf("a notification could not be set up\n");
		return 1;
	}
	printf("done\n");
	return 0;
}
