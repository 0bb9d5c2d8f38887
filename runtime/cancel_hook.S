/* SPDX-License-Identifier: MIT */
/*
 * dacce_forced_unwind_hook: see cancel.h.  Entered by jumps from the first
 * instruction of libgcc_s's _Unwind_ForcedUnwind, so the return address on
 * top is glibc's, as natively; the arguments are live in %rdi, %rsi, %rdx.
 * The CFI lets the walk of dacce_before_forced_unwind step out to glibc's
 * frames and on to the program's.
 */
	.text
	.globl	dacce_forced_unwind_hook
	.hidden	dacce_forced_unwind_hook
	.type	dacce_forced_unwind_hook, @function
	.p2align 4
dacce_forced_unwind_hook:
	.cfi_startproc
	push	%rdi
	.cfi_adjust_cfa_offset 8
	push	%rsi
	.cfi_adjust_cfa_offset 8
	push	%rdx
	.cfi_adjust_cfa_offset 8
	/* Three pushes after the caller's call: %rsp is 16-byte aligned here. */
	call	dacce_before_forced_unwind
	pop	%rdx
	.cfi_adjust_cfa_offset -8
	pop	%rsi
	.cfi_adjust_cfa_offset -8
	pop	%rdi
	.cfi_adjust_cfa_offset -8
	/* The instructions the patch covered, then the rest of _Unwind_ForcedUnwind. */
	jmp	*dacce_forced_unwind_rest(%rip)
	.cfi_endproc
	.size	dacce_forced_unwind_hook, .-dacce_forced_unwind_hook

	.section .note.GNU-stack,"",@progbits
