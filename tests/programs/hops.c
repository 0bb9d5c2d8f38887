// SPDX-License-Identifier: MIT
/*
 * Short sites with no instruction to borrow, reached through the padding
 * between functions (runtime/padding.h): a 2-byte `call *%rax`, a 2-byte
 * `jmp *%rax` tail call and a 2-byte `jmp rel8` tail call to another
 * function, each after a 1-byte instruction, written in assembly so that
 * the compiler cannot choose other encodings; each function is followed by
 * nop padding (.p2align).  Called with several targets, from two threads,
 * across re-encodings.  Then a tail jump through a table of 100 functions
 * (`jmp *table(,%rdi,8)` at -O2): past its 64 compared targets, jump
 * dispatch looks the target up in a table.
 */
#include <pthread.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static int sink;

/* Two threads add to it: atomically, so that the total is the same in every run. */
static void add(int n)
{
	__atomic_fetch_add(&sink, n, __ATOMIC_RELAXED);
}

/* hop_call(fn): calls fn.  hop_tail(fn): tail-calls fn.  hop_direct(): tail-calls direct_target. */
void hop_call(void (*fn)(void));
void hop_tail(void (*fn)(void));
void hop_direct(void);
void direct_leaf(void);

__asm__(".text\n"
	".p2align 5\n"
	".type hop_call, @function\n"
	"hop_call:\n"
	".cfi_startproc\n"
	"	push %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	"	mov %rdi, %rax\n"
	"	nop\n"
	"	call *%rax\n"
	"	pop %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size hop_call, .-hop_call\n"
	".p2align 5\n"
	".type hop_tail, @function\n"
	"hop_tail:\n"
	".cfi_startproc\n"
	"	mov %rdi, %rax\n"
	"	push %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pop %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	"	jmp *%rax\n"
	".cfi_endproc\n"
	".size hop_tail, .-hop_tail\n"
	".p2align 5\n"
	".type hop_direct, @function\n"
	"hop_direct:\n"
	".cfi_startproc\n"
	"	push %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pop %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	"	jmp direct_target\n"
	".cfi_endproc\n"
	".size hop_direct, .-hop_direct\n"
	".p2align 5\n"
	".type direct_target, @function\n"
	"direct_target:\n"
	".cfi_startproc\n"
	"	jmp direct_leaf\n"
	".cfi_endproc\n"
	".size direct_target, .-direct_target\n"
	".p2align 5\n");

NOINLINE void direct_leaf(void)
{
	probe("direct_leaf");
	add(1);
}

NOINLINE static void leaf_one(void)
{
	probe("leaf_one");
	add(1);
}

NOINLINE static void leaf_two(void)
{
	probe("leaf_two");
	add(2);
}

/* A hundred targets of one tail jump; a few of them probe. */
#define TARGET(n)                                 \
	NOINLINE static void target_##n(int i)    \
	{                                         \
		if (n % 13 == 0)                  \
			probe("target_" #n);      \
		add(i);                           \
	}
#define TEN(d) TARGET(d##0) TARGET(d##1) TARGET(d##2) TARGET(d##3) TARGET(d##4) \
	TARGET(d##5) TARGET(d##6) TARGET(d##7) TARGET(d##8) TARGET(d##9)
TARGET(0) TARGET(1) TARGET(2) TARGET(3) TARGET(4) TARGET(5) TARGET(6) TARGET(7) TARGET(8)
TARGET(9) TEN(1) TEN(2) TEN(3) TEN(4) TEN(5) TEN(6) TEN(7) TEN(8) TEN(9)
#define REF(n) target_##n,
#define REFS(d) REF(d##0) REF(d##1) REF(d##2) REF(d##3) REF(d##4) REF(d##5) REF(d##6) \
	REF(d##7) REF(d##8) REF(d##9)
static void (*const table[100])(int) = { REF(0) REF(1) REF(2) REF(3) REF(4) REF(5) REF(6) REF(7)
					  REF(8) REF(9) REFS(1) REFS(2) REFS(3) REFS(4) REFS(5)
					  REFS(6) REFS(7) REFS(8) REFS(9) };

NOINLINE static void through_table(int i)
{
	table[i](i);
}

NOINLINE static void rounds(int count)
{
	for (int r = 0; r < count; r++) {
		hop_call(r % 2 ? leaf_one : leaf_two);
		hop_tail(r % 3 ? leaf_one : leaf_two);
		hop_direct();
		for (int i = 0; i < 100; i++)
			through_table((i * 7 + r) % 100);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	rounds(200);
	return NULL;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, worker, NULL);
	rounds(200);
	pthread_join(t, NULL);
	probe("main");
	printf("sink %d\n", sink);
	return 0;
}
