// SPDX-License-Identifier: MIT
/* Direct calls: chains, fan-in from several sites, recursion, mutual recursion. */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static int leaf(int x)
{
	probe("leaf");
	return x + 1;
}

NOINLINE static int via_a(int x) { return leaf(x) * 2 + sink; }
NOINLINE static int via_b(int x) { return leaf(x + 1) * 3 + sink; }

NOINLINE static int count_down(int n)
{
	if (n == 0) {
		probe("recursion");
		return 0;
	}
	return count_down(n - 1) + 1 + sink;
}

NOINLINE static int is_odd(int n);

NOINLINE static int is_even(int n)
{
	if (n == 0) {
		probe("mutual");
		return 1;
	}
	return is_odd(n - 1) + sink;
}

NOINLINE static int is_odd(int n)
{
	if (n == 0)
		return 0;
	return is_even(n - 1) + sink;
}

int main(void)
{
	int r = via_a(1) + via_b(2) + via_a(3);

	r += count_down(10) + count_down(1000);
	r += is_even(12) + is_even(7);
	probe("main");
	printf("result %d\n", r);
	return 0;
}
