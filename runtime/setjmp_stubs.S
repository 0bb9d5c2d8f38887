/* SPDX-License-Identifier: MIT */
/*
 * setjmp and friends, and getcontext, interposed.  They record the thread's
 * context block for the jmp_buf (or ucontext), then jump (not call) to the real function, so that it
 * saves the caller's stack exactly as without us.  The return address it
 * saves may be a thunk of the runtime's instead (rt.c, setjmp_thunk), which
 * sends a second return to dacce_setjmp_again below.
 */
	.text

/* A stub for a setjmp-like function of up to two arguments (%rdi = env). */
.macro SETJMP_STUB name, real, mark=dacce_rt_setjmp_mark
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
	lea	24(%rsp), %rsi		/* the slot of our return address */
	call	\mark
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
	SETJMP_STUB getcontext, dacce_real_getcontext, dacce_rt_getcontext_mark

/*
 * A setjmp call returned a second time (%eax non-zero) through its thunk,
 * which left the original return address in %r11.  As at any return, the
 * red zone, the flags and the caller-saved registers other than %rax are
 * dead here.  Rewinds the context, then goes where setjmp would have returned.
 */
	.globl	dacce_setjmp_again
	.hidden	dacce_setjmp_again
	.type	dacce_setjmp_again, @function
	.p2align 4
dacce_setjmp_again:
	.cfi_startproc simple		/* no return address on the stack: the caller's frame */
	.cfi_def_cfa %rsp, 0
	.cfi_register %rip, %r11
	push	%rax
	.cfi_adjust_cfa_offset 8
	push	%r11			/* %rsp is 16-byte aligned again */
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rip, 0
	mov	%r11, %rdi
	lea	16(%rsp), %rsi		/* the stack pointer setjmp returned with */
	call	dacce_rt_setjmp_again
	mov	%rax, %r11
	.cfi_register %rip, %r11
	add	$8, %rsp
	.cfi_adjust_cfa_offset -8
	pop	%rax
	.cfi_adjust_cfa_offset -8
	jmp	*%r11
	.cfi_endproc
	.size	dacce_setjmp_again, .-dacce_setjmp_again

	.section .note.GNU-stack,"",@progbits
