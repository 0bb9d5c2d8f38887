// SPDX-License-Identifier: MIT
/*
 * What a debugger leaves in code the runtime reads and writes.  gdb writes an
 * int3 (0xcc) over the first byte of an instruction it has a breakpoint on
 * while the program runs, and writes back the byte it saved when the program
 * stops.  This program plays the debugger: it writes the int3s itself, and its
 * SIGTRAP handler writes the saved byte back and runs the instruction again.
 *
 * 1. A breakpoint inside a function that has not run yet, on `mov $0xe8,%eax`
 *    (b8 e8 00 00 00).  Read with the int3, the bytes after it are
 *    `call rel32`: the runtime would take them for a call site and patch it
 *    over the mov's immediate.  It must read the function's own bytes
 *    (runtime/pristine.h).
 * 2. A breakpoint on the entry of a function that has not run yet, inserted
 *    after the runtime put its trap byte there: the saved byte is the trap
 *    byte.  Written back after the function ran, it is a trap no patch
 *    claims; the program died of SIGILL (runtime/entries.h: a stray trap).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

int debugbytes_fn(int x);
extern const char debugbytes_bp[];

/* x + 2 * 0xe8 + 1, through a call after the breakpoint's instruction. */
__asm__(".text\n"
	".globl debugbytes_fn\n"
	".type debugbytes_fn, @function\n"
	"debugbytes_fn:\n"
	".cfi_startproc\n"
	"\tpush %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %rbx, 0\n"
	"\tmov %edi, %ebx\n"
	".globl debugbytes_bp\n"
	"debugbytes_bp:\n"
	"\tmov $0xe8, %eax\n"
	"\tadd %eax, %eax\n"
	"\tadd %ebx, %eax\n"
	"\tmov %eax, %edi\n"
	"\tnop\n"
	"\tnop\n"
	"\tcall debugbytes_leaf\n"
	"\tpop %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %rbx\n"
	"\tret\n"
	".cfi_endproc\n"
	".size debugbytes_fn, .-debugbytes_fn\n");

__attribute__((noinline, used, visibility("hidden"))) int debugbytes_leaf(int x)
{
	probe("leaf after the breakpoint");
	return x + 1;
}

NOINLINE static int entry_target(int x)
{
	probe("entry_target");
	return x * 7;
}

/* The debugger: one breakpoint at a time. */
static int mem = -1;
static volatile uintptr_t bp_at;
static volatile unsigned char bp_saved;
static volatile int bp_hits;

static int write_byte(uintptr_t at, unsigned char byte)
{
	return pwrite(mem, &byte, 1, (off_t)at) == 1 ? 0 : -1;
}

static int insert_breakpoint(uintptr_t at)
{
	unsigned char int3 = 0xcc, saved;

	if (pread(mem, &saved, 1, (off_t)at) != 1)
		return -1;
	bp_at = at;
	bp_saved = saved;
	return pwrite(mem, &int3, 1, (off_t)at) == 1 ? 0 : -1;
}

static void on_trap(int sig, siginfo_t *info, void *uc_void)
{
	ucontext_t *uc = uc_void;

	(void)sig;
	(void)info;
	if ((uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1 != bp_at)
		abort();
	write_byte(bp_at, bp_saved);
	uc->uc_mcontext.gregs[REG_RIP] -= 1;
	bp_hits++;
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO };
	uintptr_t entry = (uintptr_t)(void *)entry_target;
	int wrong = 0;

	mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (mem < 0 || sigaction(SIGTRAP, &sa, NULL) != 0) {
		perror("debugbytes: setting up");
		return 1;
	}
	/* 1 */
	if (insert_breakpoint((uintptr_t)debugbytes_bp) != 0)
		return 1;
	wrong += debugbytes_fn(5) != 5 + 2 * 0xe8 + 1;
	wrong += debugbytes_fn(6) != 6 + 2 * 0xe8 + 1;
	/* 2: the byte saved at the entry is written back once more, as on the next stop */
	if (insert_breakpoint(entry) != 0)
		return 1;
	wrong += entry_target(3) != 21;
	write_byte(entry, bp_saved);
	wrong += entry_target(4) != 28;
	wrong += entry_target(5) != 35;
	printf("breakpoints hit: %d, wrong results: %d\n", bp_hits, wrong);
	return wrong != 0;
}
