// SPDX-License-Identifier: MIT
/* Recursion 100,000 deep: the ccStack compresses it; every frame is reported. */
#include "probe.h"

static volatile int sink;

__attribute__((noinline)) static int down(int n)
{
	if (n == 0) {
		probe("bottom");
		return 0;
	}
	return down(n - 1) + sink + 1;
}

int main(void)
{
	int r = down(100000);

	probe("main");
	printf("result %d\n", r);
	return 0;
}
