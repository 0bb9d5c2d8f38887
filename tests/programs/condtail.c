// SPDX-License-Identifier: MIT
/*
 * Conditional tail calls: a jcc straight to another function, as optimised
 * builds have them (CPython's has many).  choose() is written in assembly so
 * that every build has them, in the 6-byte rel32 form (the targets are
 * global symbols), which the runtime points at the trampoline itself after
 * the first trap; taken and not taken, the contexts must stay exact.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline, noclone))

static volatile int sink;

int odd_case(int x);
int even_case(int x);
int choose(int x);

/* if (x & 1) return odd_case(x); if (x & 2) return even_case(x); return 2 * x; */
__asm__(".text\n"
	".globl choose\n"
	".type choose, @function\n"
	"choose:\n"
	".cfi_startproc\n"
	"	test $1, %edi\n"
	"	jne odd_case\n"
	"	test $2, %edi\n"
	"	jne even_case\n"
	"	lea (%rdi,%rdi), %eax\n"
	"	ret\n"
	".cfi_endproc\n"
	".size choose, .-choose\n");

NOINLINE int caller(int x)
{
	return choose(x) * 3 + sink;
}

NOINLINE int odd_case(int x)
{
	if (x % 101 == 1)
		probe("odd");
	return x - 1;
}

NOINLINE int even_case(int x)
{
	if (x % 102 == 2)
		probe("even");
	return x + 1;
}

int main(void)
{
	long sum = 0;

	for (int i = 0; i < 20000; i++)
		sum += caller(i);
	probe("main");
	printf("sum %ld\n", sum);
	return 0;
}
