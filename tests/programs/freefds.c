// SPDX-License-Identifier: MIT
/*
 * A program that closes a descriptor and counts on its number staying free
 * (as CPython's test_os does: a closed descriptor must give EBADF), again
 * and again for 600 ms while calling functions for the first time.  The
 * runtime's policy thread wakes up meanwhile (every 100 ms, and every
 * millisecond in the epochs run) and installs epochs: no file of the
 * runtime's may ever show up at the program's free number, even for a
 * moment (runtime/keptfd.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define RUN_NS 600000000L
#define LOOKS 2000

static volatile unsigned sink;

/* Functions met for the first time along the run: new edges, so epochs come. */
NOINLINE static void leaf_a(void) { sink += 1; }
NOINLINE static void leaf_b(void) { sink += 2; }
NOINLINE static void leaf_c(void) { sink += 3; }
NOINLINE static void leaf_d(void) { sink += 4; }
static void (*const leaves[])(void) = { leaf_a, leaf_b, leaf_c, leaf_d };

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* How many of LOOKS looks found something open at FD, which the program closed. */
NOINLINE static unsigned looks_taken(int fd)
{
	unsigned taken = 0;

	for (int i = 0; i < LOOKS; i++)
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			taken++;
	return taken;
}

NOINLINE static unsigned watch(void)
{
	long start = now_ns();
	unsigned taken = 0, rounds = 0;

	while (now_ns() - start < RUN_NS) {
		int fd = open("/dev/null", O_RDONLY);

		if (fd < 0)
			return 1;
		close(fd);
		taken += looks_taken(fd);
		if (rounds++ % 64 == 0)
			leaves[(rounds / 64) % 4]();
	}
	probe("watch");
	return taken;
}

int main(void)
{
	unsigned taken = watch();

	printf("closed descriptor %s\n", taken ? "found open" : "stayed free");
	probe("main");
	return taken != 0;
}
