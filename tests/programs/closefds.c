// SPDX-License-Identifier: MIT
/*
 * A program that closes every descriptor it did not open, as ssh and daemons
 * do at start (closefrom), then opens files of its own, which get the
 * numbers the runtime's descriptors had, and goes on calling functions for
 * the first time.  Their code holds 0xcc bytes (the int3 opcode, in
 * immediates), which the runtime reads past a debugger's breakpoints with
 * (pristine.c), and they make tail calls (the unwind tables decide which
 * jumps are tail calls, cfa.c).  Nothing of the runtime may be read from or
 * written to the program's files, and the runtime must not lose what it
 * kept open: its files must hold exactly what it wrote.
 */
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))
#define FILES 16

static volatile unsigned sink;

NOINLINE static unsigned mix(unsigned x)
{
	probe("mix");
	return x * 0xcccccccbu + 0xcc;
}

NOINLINE static unsigned tail_mix(unsigned x)
{
	return mix(x ^ 0xcccc) + sink; /* not a tail call: the add follows */
}

NOINLINE static unsigned jump_to_mix(unsigned x)
{
	return mix(x + 0xcc00cc); /* a tail call at -O2 */
}

NOINLINE static unsigned after_close(unsigned x)
{
	probe("after-close");
	return tail_mix(x) + jump_to_mix(x);
}

NOINLINE static unsigned before_close(unsigned x)
{
	probe("before-close");
	return x + 1;
}

/* Fills each file with its own pattern; returns 0 when each holds exactly that. */
NOINLINE static int check_files(const int *fds, int write_them)
{
	char want[64], got[64];

	for (int i = 0; i < FILES; i++) {
		memset(want, 'a' + i, sizeof(want));
		if (write_them) {
			if (write(fds[i], want, sizeof(want)) != (ssize_t)sizeof(want))
				return -1;
			continue;
		}
		if (pread(fds[i], got, sizeof(got), 0) != (ssize_t)sizeof(got) ||
		    memcmp(got, want, sizeof(want)) != 0 ||
		    lseek(fds[i], 0, SEEK_END) != (off_t)sizeof(want))
			return -1;
	}
	return 0;
}

int main(void)
{
	char path[] = "/tmp/dacce-closefds-XXXXXX";
	int fds[FILES], dir_ok;
	unsigned total = before_close(1);

	closefrom(3);
	dir_ok = mkdtemp(path) != NULL;
	for (int i = 0; i < FILES && dir_ok; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%s/f%d", path, i);
		fds[i] = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
		unlink(name);
		if (fds[i] < 0)
			dir_ok = 0;
	}
	if (dir_ok)
		rmdir(path);
	if (!dir_ok || check_files(fds, 1) != 0) {
		printf("could not make files\n");
		return 1;
	}
	total += after_close(total);
	printf("files %s, total %u\n", check_files(fds, 0) == 0 ? "intact" : "changed", total);
	probe("main");
	return 0;
}
