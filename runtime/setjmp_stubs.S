/* SPDX-License-Identifier: MIT */
/*
 * setjmp and friends, interposed.  They record the thread's context block
 * for the jmp_buf, then jump (not call) to the real function, so that it
 * saves the caller's stack and return address exactly as without us.
 */
	.text

/* A stub for a setjmp-like function of up to two arguments (%rdi = env). */
.macro SETJMP_STUB name, real
	.globl	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	push	%rdi
	.cfi_adjust_cfa_offset 8
	push	%rsi
	.cfi_adjust_cfa_offset 8
	sub	$8, %rsp		/* 16-byte alignment for the call */
	.cfi_adjust_cfa_offset 8
	call	dacce_rt_setjmp_mark
	add	$8, %rsp
	.cfi_adjust_cfa_offset -8
	pop	%rsi
	.cfi_adjust_cfa_offset -8
	pop	%rdi
	.cfi_adjust_cfa_offset -8
	jmp	*\real(%rip)
	.cfi_endproc
	.size	\name, .-\name
.endm

	SETJMP_STUB _setjmp, dacce_real__setjmp
	SETJMP_STUB setjmp, dacce_real_setjmp
	SETJMP_STUB __sigsetjmp, dacce_real___sigsetjmp

	.section .note.GNU-stack,"",@progbits
