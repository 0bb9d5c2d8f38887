/* SPDX-License-Identifier: MIT */
/*
 * dlopen, dlmopen, dlsym and dlvsym (dl_callers.h).  Each takes at most
 * three arguments in registers, none on the stack.
 */
	.text

/*
 * %eax: which function.  Asks dacce_dl_route where it must return, then
 * either jumps to it (the caller's return address stays its return address)
 * or calls it with a return address in the caller's module: a `ret` there
 * pops the address of 2: below, which goes back to our caller.
 */
	.type	dl_common, @function
	.p2align 4
dl_common:
	.cfi_startproc
	push	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	push	%rdi
	push	%rsi
	push	%rdx
	push	%rcx
	sub	$16, %rsp		/* the real function's address at 0(%rsp) */
	mov	%rdi, %rcx		/* its first argument */
	mov	%eax, %edi
	lea	8(%rbp), %rsi		/* the slot of our return address */
	mov	%rsp, %rdx
	call	dacce_dl_route
	mov	(%rsp), %r11
	mov	%rax, %r10
	add	$16, %rsp
	pop	%rcx
	pop	%rdx
	pop	%rsi
	pop	%rdi
	test	%r10, %r10
	jnz	1f
	pop	%rbp
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	jmp	*%r11
1:
	.cfi_def_cfa %rbp, 16
	.cfi_offset %rbp, -16
	sub	$8, %rsp		/* the real function is entered 16-byte aligned, less 8 */
	lea	2f(%rip), %rax
	push	%rax
	push	%r10
	jmp	*%r11
2:
	mov	%rbp, %rsp		/* the stand-in's ret popped 2:, 8 bytes below */
	pop	%rbp
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size	dl_common, .-dl_common

.macro DL_STUB name, index
	.globl	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	endbr64
	mov	$\index, %eax
	jmp	dl_common
	.cfi_endproc
	.size	\name, .-\name
.endm

	DL_STUB dlopen, 0
	DL_STUB dlmopen, 1
	DL_STUB dlsym, 2
	DL_STUB dlvsym, 3

	.section .note.GNU-stack,"",@progbits
