// SPDX-License-Identifier: MIT
/*
 * Functions without unwind information in a program whose other functions
 * have it: hand-written or generated code, which need not keep to the
 * calling convention around its jumps.  As V8's builtins do in node, one
 * puts its argument on the stack under the return address and jumps to
 * another, which takes it from there and returns past both with `ret $8`.
 * The runtime took the jump for a tail call: the callee's return came back
 * to the tail trampoline 8 bytes off, its record was not found, and the
 * program died of SIGILL (node died so at its first run).  Such functions
 * are left alone now: calls into them are calls out.  The results, and the
 * probes around the calls and in a function called after them, must be as
 * natively.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

long arg_on_stack(long x); /* 2 * x + 1, through from_stack */

__asm__(".text\n"
	".globl arg_on_stack\n"
	".type arg_on_stack, @function\n"
	"arg_on_stack:\n"
	"	pop %r11\n"
	"	push %rdi\n"
	"	push %r11\n"
	"	jmp from_stack\n"
	".size arg_on_stack, .-arg_on_stack\n"
	".globl from_stack\n"
	".type from_stack, @function\n"
	"from_stack:\n"
	"	mov 8(%rsp), %rax\n"
	"	lea 1(%rax,%rax), %rax\n"
	"	ret $8\n"
	".size from_stack, .-from_stack\n");

NOINLINE static long through(long x)
{
	long r = arg_on_stack(x);

	if (x % 1000 == 3)
		probe("through");
	return r;
}

NOINLINE static long after(long sum)
{
	probe("after");
	return sum;
}

int main(void)
{
	long sum = 0, want = 0;

	for (long x = 0; x < 4000; x++) {
		sum += through(x);
		want += 2 * x + 1;
	}
	probe("main");
	return after(sum) == want ? 0 : 1;
}
