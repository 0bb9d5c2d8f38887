// SPDX-License-Identifier: MIT
/*
 * Short sites that get room from padding inside their own function
 * (runtime/scan.h): a 2-byte `jmp *%rax` after a 1-byte instruction,
 * followed by a 3-byte nop nothing runs (the site's jmp rel32 takes it), and
 * a 2-byte `call *%rbx` that a jump lands on, after padding (a jump over the
 * instruction before it would serve nobody; a hop through that padding
 * serves the jump).  Written in assembly so the layout is exactly this, with
 * code of no padding around, so that no padding between functions is in
 * reach.  Each runs 2,000 times: tests/trap-report.sh checks that neither
 * traps per call; the probes check the contexts.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

void wide_tail(void (*target)(int), int round);
void targeted_call(void (*target)(void));

__asm__(".text\n"
	".p2align 4\n"
	".type filler_before, @function\n"
	"filler_before:\n"
	".rept 80\n"
	"	xor %eax, %eax\n"
	".endr\n"
	"	ret\n"
	".size filler_before, .-filler_before\n"
	/* wide_tail(target, round): tail-calls target(round) */
	".globl wide_tail\n"
	".type wide_tail, @function\n"
	"wide_tail:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	mov %rdi, %rax\n"
	"	mov %esi, %edi\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	jmp *%rax\n"
	"	.byte 0x0f, 0x1f, 0x00\n" /* nopl (%rax): never runs */
	"	ret\n"
	"	.cfi_endproc\n"
	".size wide_tail, .-wide_tail\n"
	/* targeted_call(target): calls target from a site a jump lands on */
	".globl targeted_call\n"
	".type targeted_call, @function\n"
	"targeted_call:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	mov %rdi, %rbx\n"
	"	jmp 1f\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"	    /* nopl 0(%rax,%rax) */
	"	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* nopw 0(%rax,%rax) */
	"1:	call *%rbx\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size targeted_call, .-targeted_call\n"
	".type filler_after, @function\n"
	"filler_after:\n"
	".rept 80\n"
	"	xor %eax, %eax\n"
	".endr\n"
	"	ret\n"
	".size filler_after, .-filler_after\n");

static volatile int sink;

NOINLINE static void tail_target(int round)
{
	if (round % 500 == 0)
		probe("tail-target");
	sink++;
}

NOINLINE static void called_target(void)
{
	if (sink % 1000 == 1)
		probe("called-target");
	sink++;
}

NOINLINE static void rounds(void)
{
	for (int round = 0; round < 2000; round++) {
		wide_tail(tail_target, round);
		targeted_call(called_target);
	}
}

int main(void)
{
	rounds();
	probe("main");
	return 0;
}
