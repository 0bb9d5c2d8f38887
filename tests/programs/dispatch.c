// SPDX-License-Identifier: MIT
/* Indirect calls of 5 bytes or more (call *0x100(%reg)): dispatch code, not traps. */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

struct ops {
	char pad[0x100]; /* the pointer sits far enough for a 32-bit displacement */
	int (*fn)(int);
};

NOINLINE static int first(int x) { if (x == 7) probe("first"); return x + 1 + sink; }
NOINLINE static int second(int x) { if (x == 7) probe("second"); return x * 2 + sink; }
NOINLINE static int third(int x) { if (x == 7) probe("third"); return x - 3 + sink; }

static struct ops table[3] = { { .fn = first }, { .fn = second }, { .fn = third } };

__attribute__((noipa)) static int call_through(const struct ops *o, int x)
{
	return o->fn(x) + 1;
}

int main(void)
{
	int r = 0;

	for (int round = 0; round < 2000; round++)
		for (int i = 0; i < 3; i++)
			r += call_through(&table[i], round % 100 == 7 && round < 300 ? 7 : round);
	probe("main");
	printf("result %d\n", r);
	return 0;
}
