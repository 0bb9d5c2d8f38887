// SPDX-License-Identifier: MIT
/* Indirect calls: a site with 1,000 targets, a switch, and a qsort callback. */
#include <stdlib.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

#define T(n) NOINLINE static int target_##n(int x) { if (x == 999) probe("target"); return x + n + sink; }
#define T10(n) T(n##0) T(n##1) T(n##2) T(n##3) T(n##4) T(n##5) T(n##6) T(n##7) T(n##8) T(n##9)
#define T100(n) T10(n##0) T10(n##1) T10(n##2) T10(n##3) T10(n##4) T10(n##5) T10(n##6) T10(n##7) T10(n##8) T10(n##9)
T100(1) T100(2) T100(3) T100(4) T100(5) T100(6) T100(7) T100(8) T100(9) T100(10)

#define P(n) target_##n,
#define P10(n) P(n##0) P(n##1) P(n##2) P(n##3) P(n##4) P(n##5) P(n##6) P(n##7) P(n##8) P(n##9)
#define P100(n) P10(n##0) P10(n##1) P10(n##2) P10(n##3) P10(n##4) P10(n##5) P10(n##6) P10(n##7) P10(n##8) P10(n##9)
static int (*const table[1000])(int) = { P100(1) P100(2) P100(3) P100(4) P100(5) P100(6) P100(7) P100(8) P100(9) P100(10) };

NOINLINE static int dispatch(int i, int x) { return table[i](x) + 1; }

NOINLINE static int by_switch(int k)
{
	switch (k) {
	case 0: return dispatch(0, 999);
	case 1: return dispatch(1, 5) * 3;
	case 2: return dispatch(2, 6) - 1;
	case 3: return dispatch(3, 7) ^ 4;
	case 4: return dispatch(4, 8) + 9;
	case 5: probe("switch"); return 5;
	default: return dispatch(k % 1000, k);
	}
}

static int compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (x == 3 && y != 3)
		probe("callback");
	return (x > y) - (x < y);
}

int main(void)
{
	int r = 0, values[] = { 5, 3, 9, 1, 7 };

	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 1000; i++)
			r += dispatch(i, i == 500 && round == 1 ? 999 : i);
	for (int k = 0; k < 8; k++)
		r += by_switch(k);
	qsort(values, 5, sizeof(values[0]), compare);
	probe("main");
	printf("result %d sorted %d %d\n", r, values[0], values[4]);
	return 0;
}
