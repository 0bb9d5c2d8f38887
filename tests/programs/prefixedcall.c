// SPDX-License-Identifier: MIT
/*
 * Direct calls behind prefixes that change nothing: `66 66 48 e8 rel32`, the
 * call a TLS general-dynamic sequence makes to `__tls_get_addr` in shared
 * libraries (libmpfr's, which gcc's cc1 runs), `48 e8 rel32`, and
 * `67 e8 rel32`, the `addr32 call` the linker makes of a `call *foo@GOTPCREL(%rip)`
 * (-fno-plt) to a function of the same link: every call of a -fno-plt
 * program into itself.  The runtime used to leave them trapped (a signal
 * per call; the borrow test at -O2 -fno-plt took 1,000,000 traps and two
 * minutes instead of 0.06 s).  Each is called
 * 2,000 times, probing now and then: tests/trap-report.sh checks that
 * neither traps per call, the probes check the contexts, and the callees
 * check their arguments and the caller its results (a call returning to
 * the wrong place, or with its bytes half rewritten, would not add up).
 * Written in assembly so the encoding is exactly this.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

long call_padded(long x);   /* 66 66 48 e8: padded_target(x) + 1 */
long call_rex(long x);	    /* 48 e8: rex_target(x) + 2 */
long call_addr32(long x);   /* 67 e8: addr32_target(x) + 4 */
long padded_target(long x); /* x * 3 */
long rex_target(long x);    /* x * 5 */
long addr32_target(long x); /* x * 7 */

__asm__(".text\n"
	".globl call_padded\n"
	".type call_padded, @function\n"
	"call_padded:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	.byte 0x66, 0x66, 0x48, 0xe8\n"
	"	.long padded_target - 1f\n"
	"1:	add $1, %rax\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size call_padded, .-call_padded\n"
	".globl call_rex\n"
	".type call_rex, @function\n"
	"call_rex:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	.byte 0x48, 0xe8\n"
	"	.long rex_target - 1f\n"
	"1:	add $2, %rax\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size call_rex, .-call_rex\n"
	".globl call_addr32\n"
	".type call_addr32, @function\n"
	"call_addr32:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	.byte 0x67, 0xe8\n"
	"	.long addr32_target - 1f\n"
	"1:	add $4, %rax\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size call_addr32, .-call_addr32\n");

NOINLINE long padded_target(long x)
{
	if (x % 500 == 7)
		probe("padded-target");
	return x * 3;
}

NOINLINE long rex_target(long x)
{
	if (x % 500 == 9)
		probe("rex-target");
	return x * 5;
}

NOINLINE long addr32_target(long x)
{
	if (x % 500 == 11)
		probe("addr32-target");
	return x * 7;
}

int main(void)
{
	long sum = 0, want = 0;

	for (long x = 0; x < 2000; x++) {
		sum += call_padded(x) + call_rex(x) + call_addr32(x);
		want += x * 3 + 1 + x * 5 + 2 + x * 7 + 4;
	}
	probe("main");
	return sum == want ? 0 : 1;
}
