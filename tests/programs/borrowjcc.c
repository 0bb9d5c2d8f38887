// SPDX-License-Identifier: MIT
/*
 * Optional hooks: `test %rax, %rax; je past; call *%rax`, the shape
 * compilers give `if (hook) hook(x)`.  The conditional jump is the only
 * instruction a short call there can borrow: a 2-byte `call *%rax` after a
 * `je rel32` (the jump over the jcc alone), and after a 3-byte `test` and a
 * `je rel8` (the jump over both).  Dispatch code runs the jcc as a jcc
 * rel32 to the same target.  Each hook is called 2,000 times, half of them
 * with no hook (the jcc taken from dispatch code) and half with one that
 * probes now and then: tests/trap-report.sh checks that neither traps per
 * call, the probes check the contexts.  A third runs its call in a loop
 * that the borrowed jcc leaves, and enters again above the jump written
 * over the jcc and the `sub` before it.  Written in assembly so the
 * layout is exactly this, with code of no padding around (no hop in reach).
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

typedef void (*hook_fn)(int);

void hook_near(hook_fn hook, int round); /* test; je rel32; call *%rax */
void hook_short(hook_fn hook, int round); /* test; je rel8; call *%rax */
void hook_loop(hook_fn hook, int times);  /* hook(times), ..., hook(1): sub; js out; call *%rax */

/* hook(hook, x): `test %rax, %rax`, the jcc given (to 1f, from 2f), `call *%rax` at 2 */
#define HOOK(name, jcc)                                                                     \
	".globl " name "\n.type " name ", @function\n" name ":\n	.cfi_startproc\n"          \
	"	push %rbx\n	.cfi_adjust_cfa_offset 8\n	.cfi_offset %rbx, -16\n"               \
	"	mov %rdi, %rax\n	mov %esi, %edi\n	test %rax, %rax\n" jcc                       \
	"2:	call *%rax\n"                                                                 \
	"1:	pop %rbx\n	.cfi_adjust_cfa_offset -8\n	.cfi_restore %rbx\n	ret\n"           \
	"	.cfi_endproc\n.size " name ", .-" name "\n"

__asm__(".text\n"
	".p2align 4\n"
	".type jcc_filler_first, @function\n"
	"jcc_filler_first:\n"
	".rept 80\n"
	"	xor %eax, %eax\n"
	".endr\n"
	"	ret\n"
	".size jcc_filler_first, .-jcc_filler_first\n"
	HOOK("hook_near", /* je rel32, whatever the assembler would pick */
	     "	.byte 0x0f, 0x84\n	.long 1f - 2f\n")
	HOOK("hook_short", "	.byte 0x74, 1f - 2f\n" /* je rel8 */)
	".globl hook_loop\n"
	".type hook_loop, @function\n"
	"hook_loop:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	push %r12\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %r12, -24\n"
	"	push %r13\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %r13, -32\n"
	"	mov %rdi, %r12\n"
	"	mov %esi, %ebx\n"
	"2:	mov %ebx, %edi\n"
	"	mov %r12, %rax\n"
	"	sub $1, %ebx\n" /* P0, 3 bytes */
	"	.byte 0x78, 3f - 4f\n" /* js rel8: out of the loop */
	"4:	call *%rax\n"
	"	jmp 2b\n"
	"3:	xor %r13d, %r13d\n"
	"	pop %r13\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %r13\n"
	"	pop %r12\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %r12\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size hook_loop, .-hook_loop\n"
	".type jcc_filler_last, @function\n"
	"jcc_filler_last:\n"
	".rept 80\n"
	"	xor %eax, %eax\n"
	".endr\n"
	"	ret\n"
	".size jcc_filler_last, .-jcc_filler_last\n");

static volatile int sink;

NOINLINE static void near_hook(int round)
{
	if (round % 500 == 1)
		probe("near-hook");
	sink++;
}

NOINLINE static void short_hook(int round)
{
	if (round % 500 == 3)
		probe("short-hook");
	sink++;
}

NOINLINE static void rounds(void)
{
	for (int round = 0; round < 2000; round++) {
		hook_near(round % 2 ? near_hook : 0, round);
		hook_short(round % 2 ? short_hook : 0, round);
	}
}

int main(void)
{
	rounds();
	hook_loop(short_hook, 3);
	probe("main");
	return sink == 2003 ? 0 : 1;
}
