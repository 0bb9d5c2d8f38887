/* SPDX-License-Identifier: MIT */
/*
 * The slow-path entry: generated stubs save the program's %r11 at
 * -16(%rsp), load a token into %r11 and jump to dacce_rt_slow_entry with the
 * thread exactly at a call site (no return address pushed).  The entry saves every register, general and
 * vector (XSAVE), calls the registered handler with the token and the saved
 * general registers, restores everything (including changes the handler
 * made to the saved registers) and jumps to the address the handler returned.
 */
#ifndef DACCE_RT_ENTRY_H
#define DACCE_RT_ENTRY_H

#include <stdint.h>

/* The stub's slot for the program's %r11, relative to the call site's %rsp. */
#define DACCE_RT_STUB_R11_SLOT (-16)

/*
 * General registers as saved by the entry; rsp is the call site's %rsp.
 * call_target and call_return are the handler's to set when it returns
 * dacce_rt_slow_call: the thread then makes the site's call itself, natively
 * (return address call_return pushed, on at call_target).
 */
struct dacce_rt_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp, rsp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t call_target, call_return;
};

typedef uintptr_t (*dacce_rt_slow_fn)(uint64_t token, struct dacce_rt_regs *regs);

/* Checks the CPU (XSAVE enabled by the OS) and sizes the save area. */
int dacce_rt_entry_init(void);

/* The handler the entry calls; it must return where to continue. */
void dacce_rt_set_slow_handler(dacce_rt_slow_fn handler);

/* The entry itself (assembly). */
extern const char dacce_rt_slow_entry[];

/* Where a handler sends the thread to make the call of regs->call_target natively. */
extern const char dacce_rt_slow_call[];

#endif
