/* SPDX-License-Identifier: MIT */
/*
 * Where a landing pad (a C++ catch or cleanup) in a frame an exception
 * passed through patched frames to is entered instead (exceptions.c): the
 * thread's context is made that frame's, then the real landing pad runs
 * with the registers the unwinder gave it (%rax and %rdx: the exception
 * and the selector; callee-saved ones as the frame had them).
 */
	.text
	.globl	dacce_unwind_landing
	.hidden	dacce_unwind_landing
	.type	dacce_unwind_landing, @function
	.p2align 4
dacce_unwind_landing:
	.cfi_startproc
	.cfi_undefined rip		/* no return address: the frame below is the landing's */
	endbr64
	push	%rbp
	mov	%rsp, %rbp
	and	$-16, %rsp
	push	%rax
	push	%rdx
	lea	8(%rbp), %rdi		/* the landing frame's stack pointer */
	call	dacce_unwind_land	/* returns the real landing pad */
	mov	%rax, %r11
	pop	%rdx
	pop	%rax
	mov	%rbp, %rsp
	pop	%rbp
	jmp	*%r11
	.cfi_endproc
	.size	dacce_unwind_landing, .-dacce_unwind_landing

	.section .note.GNU-stack, "", @progbits
