/* SPDX-License-Identifier: MIT */
/*
 * dacce_rt_slow_entry: see entry.h.  Entered by jmp from a stub, at a call
 * site: every argument register is live and nothing is pushed.  The red
 * zone is dead there (a call would overwrite it), so we may use the stack.
 */
	.text
	.globl	dacce_rt_slow_entry
	.hidden	dacce_rt_slow_entry
	.type	dacce_rt_slow_entry, @function
	.p2align 4
dacce_rt_slow_entry:
	.cfi_startproc
	/* No return address to unwind to: the site's caller frame needs per-site CFI. */
	.cfi_undefined rip
	/*
	 * Entered with the token in %r11 and the program's own %r11 at
	 * -16(%rsp): a caller may keep a value in %r11 across a call it knows
	 * leaves it alone (interprocedural register allocation).
	 */
	push	%rbp
	mov	%rsp, %rbp
	sub	$152, %rsp		/* 144 for struct dacce_rt_regs, -8(%rbp) keeps the saved %r11 */
	mov	%rax, 0(%rsp)
	mov	%rbx, 8(%rsp)
	mov	%rcx, 16(%rsp)
	mov	%rdx, 24(%rsp)
	mov	%rsi, 32(%rsp)
	mov	%rdi, 40(%rsp)
	mov	0(%rbp), %rax		/* the caller's %rbp */
	mov	%rax, 48(%rsp)
	lea	8(%rbp), %rax		/* %rsp at the call site */
	mov	%rax, 56(%rsp)
	mov	%r8, 64(%rsp)
	mov	%r9, 72(%rsp)
	mov	%r10, 80(%rsp)
	mov	-8(%rbp), %rax		/* the program's %r11 */
	mov	%rax, 88(%rsp)
	mov	%r12, 96(%rsp)
	mov	%r13, 104(%rsp)
	mov	%r14, 112(%rsp)
	mov	%r15, 120(%rsp)
	mov	%r11, %rdi		/* the token */
	mov	%rsp, %rbx		/* the saved registers, kept across the call */

	/* Vector and x87 state: XSAVE needs 64-byte alignment and a zeroed header. */
	sub	dacce_rt_xsave_size(%rip), %rsp
	and	$-64, %rsp
	xor	%eax, %eax
	mov	%rax, 512(%rsp)
	mov	%rax, 520(%rsp)
	mov	%rax, 528(%rsp)
	mov	%rax, 536(%rsp)
	mov	%rax, 544(%rsp)
	mov	%rax, 552(%rsp)
	mov	%rax, 560(%rsp)
	mov	%rax, 568(%rsp)
	mov	%rdi, %r12		/* XSAVE needs %edx:%eax */
	mov	$0xe7, %eax		/* x87, SSE, AVX, AVX-512: the state code may pass or keep */
	xor	%edx, %edx
	xsave64	(%rsp)
	mov	%r12, %rdi
	mov	%rsp, %r12

	mov	%rbx, %rsi
	call	dacce_rt_slow_dispatch
	mov	%rax, -8(%rbp)		/* where to continue: read after %rsp is back */

	mov	$0xe7, %eax
	xor	%edx, %edx
	xrstor64 (%r12)
	mov	0(%rbx), %rax
	mov	16(%rbx), %rcx
	mov	24(%rbx), %rdx
	mov	32(%rbx), %rsi
	mov	40(%rbx), %rdi
	mov	64(%rbx), %r8
	mov	72(%rbx), %r9
	mov	80(%rbx), %r10
	mov	88(%rbx), %r11
	mov	96(%rbx), %r12
	mov	104(%rbx), %r13
	mov	112(%rbx), %r14
	mov	120(%rbx), %r15
	mov	8(%rbx), %rbx
	mov	%rbp, %rsp
	pop	%rbp
	/*
	 * Below %rsp now, in the red zone: signal frames leave it alone.  The
	 * label is for debuggers (user/dacce-gdb.py steps into the call from here).
	 */
	.globl	dacce_rt_slow_exit
	.hidden	dacce_rt_slow_exit
dacce_rt_slow_exit:
	jmp	*-16(%rsp)

	/*
	 * The site's call made natively, where the handler sent the thread
	 * (entry.h): regs->call_return is at -24(%rsp) and regs->call_target at
	 * -32(%rsp), within the red zone, which the kernel's signal frames skip.
	 * push reads its operand before it moves %rsp: no register, no flag.
	 */
	.globl	dacce_rt_slow_call
	.hidden	dacce_rt_slow_call
dacce_rt_slow_call:
	push	-24(%rsp)
	jmp	*-24(%rsp)
	.cfi_endproc
	.size	dacce_rt_slow_entry, .-dacce_rt_slow_entry
	.section .note.GNU-stack,"",@progbits
