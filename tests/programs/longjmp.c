// SPDX-License-Identifier: MIT
/*
 * setjmp/longjmp across instrumented frames: contexts after the jump must be
 * exact, also for a jump through a copied jmp_buf.
 */
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

/*
 * A jmp_buf saved and restored around an inner setjmp (bash keeps its top
 * level one so): the longjmp lands where the restored copy's setjmp was,
 * not where the last setjmp on that jmp_buf was.
 */
static jmp_buf top_level;

NOINLINE static void deep_top(int n)
{
	if (n == 0)
		longjmp(top_level, 1);
	deep_top(n - 1);
	sink++;
}

NOINLINE static void inner_level(void)
{
	jmp_buf saved;

	memcpy(saved, top_level, sizeof(saved));
	if (setjmp(top_level) == 0)
		deep_top(4);
	else
		probe("inner-level");
	memcpy(top_level, saved, sizeof(saved));
	deep_top(6);
}

NOINLINE static void outer_level(void)
{
	if (setjmp(top_level) == 0)
		inner_level();
	else
		probe("outer-level");
}

int main(void)
{
	int r = guarded(3);

	outer_level();

	probe("main");
	printf("result %d\n", r);
	return 0;
}
