// SPDX-License-Identifier: MIT
#include "tls.h"

/*
 * initial-exec: the block sits at a fixed offset from %fs in every thread,
 * so generated code can address it with one segment-relative operand.
 */
static __thread struct dacce_tls tls_block __attribute__((tls_model("initial-exec")));

struct dacce_tls *dacce_tls_self(void)
{
	return &tls_block;
}

int32_t dacce_tls_tpoff(void)
{
	uintptr_t thread_pointer;

	/* %fs:0 holds the thread pointer itself (the TCB's self pointer). */
	__asm__("mov %%fs:0, %0" : "=r"(thread_pointer));
	return (int32_t)((intptr_t)&tls_block - (intptr_t)thread_pointer);
}
