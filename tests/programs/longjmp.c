// SPDX-License-Identifier: MIT
/* setjmp/longjmp across instrumented frames: contexts after the jump must be exact. */
#include <setjmp.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static jmp_buf env;
static sigjmp_buf sig_env;
static volatile int sink;

NOINLINE static void deep(int n)
{
	if (n == 0)
		longjmp(env, 1);
	deep(n - 1);
	sink++;
}

NOINLINE static void deep_sig(int n)
{
	if (n == 0)
		siglongjmp(sig_env, 2);
	deep_sig(n - 1);
	sink++;
}

NOINLINE static int after(int x)
{
	probe("after-longjmp");
	return x + 1;
}

NOINLINE static int guarded(int rounds)
{
	int r = 0;

	for (int i = 0; i < rounds; i++) {
		if (setjmp(env) == 0)
			deep(20 + i);
		else
			r += after(i);
	}
	if (sigsetjmp(sig_env, 1) == 0)
		deep_sig(7);
	probe("after-siglongjmp");
	return r;
}

int main(void)
{
	int r = guarded(3);

	probe("main");
	printf("result %d\n", r);
	return 0;
}
