// SPDX-License-Identifier: MIT
/*
 * Target tables: the generated lookup reaches the trampoline of every target
 * in the table with %rax, %rcx and %r11 as the program had them, a target
 * not in it reaches the slow path's entry (when given one) with its token,
 * and the table keeps up to its home-slot count of targets.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "codecache.h"
#include "lookup.h"

#define N_TARGETS 200
#define CODE_MAX 256

struct fixture {
	struct dacce_codecache cache;
	struct dacce_lookup_entry *table;
	uintptr_t tramp[N_TARGETS];
};

/* Fake trampoline number i: movabs $i, %rdx; ret. */
static uintptr_t fake_tramp(struct fixture *f, uint64_t i)
{
	uintptr_t exec, near = (uintptr_t)&fake_tramp;
	uint8_t *write;
	struct x86_buf b;

	ck_assert_int_eq(dacce_codecache_alloc(&f->cache, near, near + 1, 16, 16, &exec, &write), 0);
	x86_init(&b, write, 16, exec);
	x86_bytes(&b, (const uint8_t[]){ 0x48, 0xba }, 2);
	x86_bytes(&b, (const uint8_t *)&i, 8);
	x86_ret(&b);
	ck_assert(!b.overflow);
	return exec;
}

/* mov %r11, -16(%rsp); movabs $target, %r11; lookup (a miss traps, or goes to miss). */
static uintptr_t lookup_code_missing_to(struct fixture *f, uint64_t target,
					const struct dacce_lookup_miss *miss)
{
	uintptr_t exec, trap_at, near = (uintptr_t)&lookup_code_missing_to;
	uint8_t *write;
	struct x86_buf b;

	ck_assert_int_eq(dacce_codecache_alloc(&f->cache, near, near + 1, CODE_MAX, 16, &exec,
					       &write), 0);
	x86_init(&b, write, CODE_MAX, exec);
	x86_spill_r11(&b, -16);
	x86_movabs_r11(&b, target);
	dacce_emit_lookup(&b, f->table, -16, miss, &trap_at);
	ck_assert(!b.overflow);
	if (miss)
		ck_assert_uint_eq(trap_at, 0);
	else
		ck_assert_uint_gt(trap_at, exec);
	return exec;
}

static uintptr_t lookup_code(struct fixture *f, uint64_t target)
{
	return lookup_code_missing_to(f, target, NULL);
}

/* A stand-in for the slow path's entry: mov %r11, %rdx (the token); mov -16(%rsp), %r11; ret. */
static uintptr_t fake_miss_entry(struct fixture *f)
{
	static const uint8_t code[] = { 0x4c, 0x89, 0xda, 0x4c, 0x8b, 0x5c, 0x24, 0xf0, 0xc3 };
	uintptr_t exec, near = (uintptr_t)&fake_miss_entry;
	uint8_t *write;
	struct x86_buf b;

	ck_assert_int_eq(dacce_codecache_alloc(&f->cache, near, near + 1, 16, 16, &exec, &write), 0);
	x86_init(&b, write, 16, exec);
	x86_bytes(&b, code, sizeof(code));
	ck_assert(!b.overflow);
	return exec;
}

struct seen {
	uint64_t rax, rcx, r11, rdx;
};

static struct seen run(uintptr_t code)
{
	struct seen s;

	__asm__ volatile("sub $128, %%rsp\n\t" /* our red zone out of the code's way */
			 "mov $0x1111, %%rax\n\t"
			 "mov $0x3333, %%rcx\n\t"
			 "mov $0x7777, %%r11\n\t"
			 "call *%%rsi\n\t"
			 "add $128, %%rsp\n\t"
			 "mov %%r11, %%rdi\n\t"
			 : "=a"(s.rax), "=c"(s.rcx), "=d"(s.rdx), "=D"(s.r11)
			 : "S"(code)
			 : "memory", "cc", "r11");
	return s;
}

START_TEST(test_lookup_reaches_each_target_with_registers_intact)
{
	struct fixture f;

	memset(&f, 0, sizeof(f));
	dacce_codecache_init(&f.cache);
	f.table = dacce_lookup_new();
	ck_assert_ptr_nonnull(f.table);
	for (uint64_t i = 0; i < N_TARGETS; i++) {
		f.tramp[i] = fake_tramp(&f, i);
		/* Targets that collide on purpose: multiples of a big power of two. */
		ck_assert_int_eq(dacce_lookup_set(f.table, (i + 1) << 20, f.tramp[i]), 0);
	}
	for (uint64_t i = 0; i < N_TARGETS; i += 7) {
		struct seen s = run(lookup_code(&f, (i + 1) << 20));

		ck_assert_uint_eq(s.rdx, i);
		ck_assert_uint_eq(s.rax, 0x1111);
		ck_assert_uint_eq(s.rcx, 0x3333);
		ck_assert_uint_eq(s.r11, 0x7777);
		ck_assert_uint_eq(dacce_lookup_get(f.table, (i + 1) << 20), f.tramp[i]);
	}
	/* Updated in place, as a re-encoding does. */
	ck_assert_int_eq(dacce_lookup_set(f.table, 1 << 20, f.tramp[5]), 0);
	ck_assert_uint_eq(run(lookup_code(&f, 1 << 20)).rdx, 5);
	ck_assert_uint_eq(dacce_lookup_get(f.table, 12345), 0);
	ck_assert_int_eq(dacce_lookup_set(f.table, 0, 1), -EINVAL);
	dacce_lookup_free(f.table);
	dacce_codecache_fini(&f.cache);
}
END_TEST

/* The slow path of a call's dispatch code: token in %r11, the program's %r11 in its slot. */
START_TEST(test_miss_goes_to_the_entry_with_its_token)
{
	struct dacce_lookup_miss miss;
	struct fixture f;
	struct seen s;

	memset(&f, 0, sizeof(f));
	dacce_codecache_init(&f.cache);
	f.table = dacce_lookup_new();
	ck_assert_ptr_nonnull(f.table);
	f.tramp[0] = fake_tramp(&f, 0);
	ck_assert_int_eq(dacce_lookup_set(f.table, 1 << 20, f.tramp[0]), 0);
	miss = (struct dacce_lookup_miss){ fake_miss_entry(&f), 0x8000000000000123ull };
	s = run(lookup_code_missing_to(&f, 2 << 20, &miss));
	ck_assert_uint_eq(s.rdx, 0x8000000000000123ull);
	ck_assert_uint_eq(s.r11, 0x7777);
	ck_assert_uint_eq(s.rax, 0x1111);
	ck_assert_uint_eq(s.rcx, 0x3333);
	/* A target in the table still goes to its trampoline. */
	ck_assert_uint_eq(run(lookup_code_missing_to(&f, 1 << 20, &miss)).rdx, 0);
	dacce_lookup_free(f.table);
	dacce_codecache_fini(&f.cache);
}
END_TEST

static Suite *lookup_suite(void)
{
	Suite *s = suite_create("rt_lookup");
	TCase *tc = tcase_create("lookup");

	tcase_add_test(tc, test_lookup_reaches_each_target_with_registers_intact);
	tcase_add_test(tc, test_miss_goes_to_the_entry_with_its_token);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lookup_suite());
}
