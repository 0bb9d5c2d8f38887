// SPDX-License-Identifier: MIT
/*
 * Short indirect calls (2 to 4 bytes) that borrow the instruction before
 * them for a jump: the instruction is 1, 2, 3, 4, 5 and 7 bytes long (the
 * last one RIP-relative, so it must be moved with its displacement fixed),
 * and in join() a branch lands on the call itself, past the borrowed
 * instruction, which must still work (the call keeps its int3).  Indirect
 * jumps borrow too: switch() jumps through a table inside a frameless
 * function that keeps data in its red zone and flags live across the jump,
 * and tail() makes an indirect tail call; the switch also runs under a storm
 * of signals (a signal inside dispatch code must not disturb it, %r11
 * included).  Written in assembly so that every build has exactly these
 * instructions.
 */
#include <signal.h>
#include <sys/time.h>

#include "probe.h"

typedef int (*fn_t)(void);

int call_lp1(fn_t *table, long index); /* nop;             call *0x8(%rdi,%rsi,8) */
int call_lp2(int x, fn_t *table);      /* test %edi, %edi; call *0x10(%rsi) */
int call_lp3(int x, fn_t f);	       /* mov %rsi, %rax;  call *%rax */
int call_lp4(int x, fn_t *table);      /* mov 0x8(%rsi), %rax; call *%rax */
int call_lp5(int x, fn_t f);	       /* mov $0x1234, %eax; call *%rsi */
int call_rip(void);		       /* mov pointer(%rip), %rax; call *%rax */
int join(int x, fn_t a, fn_t b);       /* x != 0 jumps straight to the call */
int switch_frameless(int x);	       /* x in 0..1: 100 + 101 * (x == 1) */
int tail(fn_t f);		       /* mov %rdi, %rax; jmp *%rax */

fn_t pointer;

#define PROLOGUE(name)                                                                     \
	".text\n.globl " name "\n.type " name ", @function\n" name ":\n.cfi_startproc\n"   \
	"	push %rbx\n.cfi_adjust_cfa_offset 8\n.cfi_offset %rbx, -16\n"
#define EPILOGUE(name)                                                                     \
	"	pop %rbx\n.cfi_adjust_cfa_offset -8\n	ret\n.cfi_endproc\n.size " name ", .-" name "\n"

__asm__(PROLOGUE("call_lp1") "	nop\n	call *0x8(%rdi,%rsi,8)\n" EPILOGUE("call_lp1"));
__asm__(PROLOGUE("call_lp2") "	test %edi, %edi\n	call *0x10(%rsi)\n" EPILOGUE("call_lp2"));
__asm__(PROLOGUE("call_lp3") "	mov %rsi, %rax\n	call *%rax\n" EPILOGUE("call_lp3"));
__asm__(PROLOGUE("call_lp4") "	mov 0x8(%rsi), %rax\n	call *%rax\n" EPILOGUE("call_lp4"));
__asm__(PROLOGUE("call_lp5") "	mov $0x1234, %eax\n	call *%rsi\n" EPILOGUE("call_lp5"));
__asm__(PROLOGUE("call_rip") "	mov pointer(%rip), %rax\n	call *%rax\n" EPILOGUE("call_rip"));
__asm__(PROLOGUE("join") "	mov %rsi, %rax\n	test %edi, %edi\n	jne 1f\n"
	"	mov %rdx, %rax\n"
	"1:	call *%rax\n" EPILOGUE("join"));

__asm__(".text\n.globl switch_frameless\n.type switch_frameless, @function\n"
	"switch_frameless:\n.cfi_startproc\n"
	"	movl $100, -8(%rsp)\n" /* red zone: live across the jump */
	"	lea 3f(%rip), %rdx\n"
	"	movslq (%rdx,%rdi,4), %rax\n"
	"	add %rdx, %rax\n"
	"	mov $0x7777, %r11\n" /* and %r11, which the dispatch code borrows */
	"	cmp $1, %edi\n" /* flags: live across the jump */
	"	mov %rax, %rcx\n"
	"	jmp *%rcx\n"
	"1:	sete %cl\n	movzbl %cl, %eax\n	imul $101, %eax\n	add -8(%rsp), %eax\n"
	"	cmp $0x7777, %r11\n	jne 4f\n	ret\n"
	"2:	sete %cl\n	movzbl %cl, %eax\n	imul $101, %eax\n	add -8(%rsp), %eax\n"
	"	cmp $0x7777, %r11\n	jne 4f\n	ret\n"
	"4:	mov $9999, %eax\n	ret\n"
	".cfi_endproc\n.size switch_frameless, .-switch_frameless\n"
	".section .rodata\n.p2align 2\n3:	.long 1b - 3b\n	.long 2b - 3b\n.text\n");
__asm__(".text\n.globl tail\n.type tail, @function\ntail:\n.cfi_startproc\n"
	"	mov %rdi, %rax\n	jmp *%rax\n.cfi_endproc\n.size tail, .-tail\n");

static volatile int rounds;
static volatile long ticks;

static void on_tick(int sig)
{
	(void)sig;
	ticks++;
}

#define TARGET(name)                                                                       \
	static __attribute__((noinline)) int name(void)                                    \
	{                                                                                  \
		if (rounds % 50 == 0)                                                      \
			probe(#name);                                                      \
		return 1;                                                                  \
	}
TARGET(t0) TARGET(t1) TARGET(t2) TARGET(t3) TARGET(t4) TARGET(t5)

int main(void)
{
	fn_t table[4] = { t0, t1, t2, t3 };
	long sum = 0;

	for (rounds = 0; rounds < 400; rounds++) {
		int r = rounds;

		sum += call_lp1(table, r % 3);
		sum += call_lp2(r, table + r % 2);
		sum += call_lp3(r, r % 2 ? t4 : t5);
		sum += call_lp4(r, table + r % 3);
		sum += call_lp5(r, table[r % 4]);
		pointer = r % 2 ? t1 : t2;
		sum += call_rip();
		sum += join(r % 3, t4, t5);
		if (switch_frameless(r % 2) != (r % 2 ? 201 : 100))
			printf("switch went wrong at round %d\n", r);
		sum += tail(r % 2 ? t3 : t0);
	}
	/*
	 * Signals at a high rate while the switch's jump goes through its
	 * dispatch code and main's call to it through a push: a signal that
	 * lands between a push's store and its publication must not leave the
	 * handler's entry in its place (the probe after the storm read
	 * "partial" in one run out of eight until signal handlers put back the
	 * slots above the tops of the stacks).
	 */
	struct itimerval fast = { { 0, 20 }, { 0, 20 } }, off = { { 0, 0 }, { 0, 0 } };
	long wrong = 0;

	signal(SIGALRM, on_tick);
	setitimer(ITIMER_REAL, &fast, NULL);
	for (long i = 0; i < 1000000; i++)
		wrong += switch_frameless((int)(i & 1)) != ((i & 1) ? 201 : 100);
	setitimer(ITIMER_REAL, &off, NULL);
	printf("switch under signals: %ld wrong\n", wrong);
	probe("main");
	printf("sum %ld\n", sum);
	return 0;
}
