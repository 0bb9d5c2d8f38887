// SPDX-License-Identifier: MIT
/*
 * Short sites that borrow the two instructions before them: a 2-byte
 * `jmp *%rax` after two 2-byte pops (the jump written over them covers the
 * site's start too, so two bytes of its rel32 read as int3), and a 2-byte
 * `call *%rax` after a 3-byte and a 2-byte move (one byte fixed), and a
 * 2-byte `call *(%rax)` after a 5-byte and a 2-byte move (the jump fits in
 * the first: nothing fixed, the second left as it is).  Written in
 * assembly so the layout is exactly this, with code of no padding around
 * (no hop in reach).  Each runs 2,000 times: tests/trap-report.sh checks
 * that none traps per call; the probes check the contexts.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

void two_tail(void (*target)(int), int round);
void two_call(void (*target)(int), int round);
void two_wide(void (**slot)(int), int round);

__asm__(".text\n"
	".p2align 4\n"
	".type filler_first, @function\n"
	"filler_first:\n"
	".rept 80\n"
	"	xor %eax, %eax\n"
	".endr\n"
	"	ret\n"
	".size filler_first, .-filler_first\n"
	/* two_tail(target, round): tail-calls target(round) after two 2-byte pops */
	".globl two_tail\n"
	".type two_tail, @function\n"
	"two_tail:\n"
	"	.cfi_startproc\n"
	"	push %r14\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %r14, -16\n"
	"	push %r15\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %r15, -24\n"
	"	mov %rdi, %rax\n"
	"	mov %esi, %edi\n"
	"	pop %r15\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %r15\n"
	"	pop %r14\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %r14\n"
	"	jmp *%rax\n"
	"	ud2\n"
	"	.cfi_endproc\n"
	".size two_tail, .-two_tail\n"
	/* two_call(target, round): calls target(round) after a 3-byte and a 2-byte move */
	".globl two_call\n"
	".type two_call, @function\n"
	"two_call:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	mov %rdi, %rax\n"
	"	mov %esi, %edi\n"
	"	call *%rax\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size two_call, .-two_call\n"
	/* two_wide(slot, round): calls *slot(round) after a 5-byte and a 2-byte move */
	".globl two_wide\n"
	".type two_wide, @function\n"
	"two_wide:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	mov %rdi, %rax\n"
	"	.byte 0x48, 0x8b, 0x4c, 0x24, 0x08\n" /* mov 0x8(%rsp), %rcx */
	"	mov %esi, %edi\n"
	"	call *(%rax)\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size two_wide, .-two_wide\n"
	".type filler_last, @function\n"
	"filler_last:\n"
	".rept 80\n"
	"	xor %eax, %eax\n"
	".endr\n"
	"	ret\n"
	".size filler_last, .-filler_last\n");

static volatile int sink;

NOINLINE static void tail_target(int round)
{
	if (round % 500 == 0)
		probe("tail-target");
	sink++;
}

NOINLINE static void call_target(int round)
{
	if (round % 500 == 1)
		probe("call-target");
	sink++;
}

NOINLINE static void wide_target(int round)
{
	if (round % 500 == 2)
		probe("wide-target");
	sink++;
}

static void (*wide_slot)(int) = wide_target;

NOINLINE static void rounds(void)
{
	for (int round = 0; round < 2000; round++) {
		two_tail(tail_target, round);
		two_call(call_target, round);
		two_wide(&wide_slot, round);
	}
}

int main(void)
{
	rounds();
	probe("main");
	return 0;
}
