// SPDX-License-Identifier: MIT
/*
 * Many direct calls, each free and hot but none hot enough alone to pay for
 * an epoch's stop: call_all() calls 512 functions, one site each, over and
 * over once the first epochs are in.  One stop gives every such call the
 * program's own call back (runtime/rt.c, restore_native_calls), so the
 * policy must weigh their calls together (runtime/epoch.c,
 * direct_call_to_give_back), not one edge at a time, which never asked.
 * With MANYCALLS_VERDICT set, it says on stderr how many of the 512 last
 * returned to the program's own code; tests/trap-report.sh requires most.
 * Contexts stay exact throughout (the probes).
 */
#include <stdlib.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline, noclone))
#define N_CALLEES 512

static volatile int sink;
static void *returns_to[N_CALLEES]; /* each callee's last return address */

/* f0000 to f0777: the index is the name's octal number. */
#define EIGHT_A(M, p) M(p##0) M(p##1) M(p##2) M(p##3) M(p##4) M(p##5) M(p##6) M(p##7)
#define EIGHT_B(M, p) EIGHT_A(M, p##0) EIGHT_A(M, p##1) EIGHT_A(M, p##2) EIGHT_A(M, p##3) \
	EIGHT_A(M, p##4) EIGHT_A(M, p##5) EIGHT_A(M, p##6) EIGHT_A(M, p##7)
#define EIGHT_C(M) EIGHT_B(M, 00) EIGHT_B(M, 01) EIGHT_B(M, 02) EIGHT_B(M, 03) \
	EIGHT_B(M, 04) EIGHT_B(M, 05) EIGHT_B(M, 06) EIGHT_B(M, 07)

#define CALLEE(n)                                            \
	NOINLINE static int f##n(int x)                      \
	{                                                    \
		returns_to[n] = __builtin_return_address(0); \
		if (x < 0)                                   \
			probe("f" #n);                       \
		return x + (n) + sink;                       \
	}
EIGHT_C(CALLEE)

#define CALL(n) sum += f##n(x);

NOINLINE static long call_all(int x)
{
	long sum = 0;

	EIGHT_C(CALL)
	return sum;
}

int main(void)
{
	/* Each round returns 512 x plus 0 + 1 + ... + 511. */
	const long extra = (long)N_CALLEES * (N_CALLEES - 1) / 2;
	long wrong = 0, end, native = 0;

	call_all(-1);
	end = probe_now_ms() + 600;
	while (probe_now_ms() < end)
		for (int i = 0; i < 100; i++)
			wrong += call_all(i) != (long)N_CALLEES * i + extra;
	call_all(-1);
	printf("wrong results: %ld\n", wrong);
	for (int i = 0; i < N_CALLEES; i++)
		native += probe_in_program(returns_to[i]);
	if (getenv("MANYCALLS_VERDICT"))
		fprintf(stderr, "manycalls: %ld of %d calls native\n", native, N_CALLEES);
	return 0;
}
