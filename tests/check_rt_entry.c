// SPDX-License-Identifier: MIT
/*
 * The slow-path entry keeps a call in flight intact: a stub loads a token
 * and jumps to the entry; the handler clobbers every register it may; the
 * entry must resume the call with all integer, SSE and AVX arguments as they
 * were, and hand the handler the saved registers.
 */
#include <check.h>
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "codecache.h"
#include "entry.h"
#include "x86.h"

#define TOKEN 0x5eed0001u

typedef double (*target_fn)(long, long, long, long, long, long, long, long, double, double,
			    double, double, double, double, double, double, double);

static __attribute__((noinline)) double
target(long a, long b, long c, long d, long e, long f, long g, long h, double x0, double x1,
       double x2, double x3, double x4, double x5, double x6, double x7, double x8)
{
	return (double)(a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 11 * h) + x0 +
	       2 * x1 + 3 * x2 + 4 * x3 + 5 * x4 + 6 * x5 + 7 * x6 + 8 * x7 + 13 * x8;
}

typedef __m256d (*vector_fn)(__m256d, __m256d);

static __attribute__((noinline, target("avx"))) __m256d vector_target(__m256d x, __m256d y)
{
	return _mm256_add_pd(_mm256_mul_pd(x, y), x);
}

/* AVX values only ever live in AVX-compiled code. */
static __attribute__((noinline, target("avx"))) void call_both(vector_fn through_stub,
							       double want[4], double got[4])
{
	__m256d x = _mm256_set_pd(1.0, 2.0, 3.0, 4.0), y = _mm256_set_pd(5.0, 6.0, 7.0, 8.0);

	_mm256_storeu_pd(want, vector_target(x, y));
	_mm256_storeu_pd(got, through_stub(x, y));
}

static uint64_t seen_token, seen_rdi, seen_r8;
static volatile double sink;

static uintptr_t handler(uint64_t token, struct dacce_rt_regs *regs)
{
	char junk[4096];

	seen_token = token;
	seen_rdi = regs->rdi;
	seen_r8 = regs->r8;
	/* Clobber what a C handler may: vector registers, the stack below, floating point. */
	memset(junk, 0x5a, sizeof(junk));
	sink = junk[100] * 3.25;
	__asm__ volatile("vzeroall" ::: "memory");
	return token == TOKEN ? (uintptr_t)&target : (uintptr_t)&vector_target;
}

/* A stub as generated code would make: token in %r11, jump to the entry. */
static uintptr_t make_stub(struct dacce_codecache *cache, uint64_t token)
{
	struct x86_buf b;
	uintptr_t exec;
	uint8_t *write;

	ck_assert_int_eq(dacce_codecache_alloc(cache, (uintptr_t)dacce_rt_slow_entry,
					       (uintptr_t)dacce_rt_slow_entry + 1, 64, 16, &exec,
					       &write), 0);
	x86_init(&b, write, 64, exec);
	x86_spill_r11(&b, DACCE_RT_STUB_R11_SLOT);
	x86_movabs_r11(&b, token);
	x86_jmp_abs_indirect(&b, (uintptr_t)dacce_rt_slow_entry);
	ck_assert(!b.overflow);
	return exec;
}

START_TEST(test_entry_resumes_the_call_intact)
{
	struct dacce_codecache cache;
	target_fn through_stub;
	double want, got;

	ck_assert_int_eq(dacce_rt_entry_init(), 0);
	dacce_rt_set_slow_handler(handler);
	dacce_codecache_init(&cache);
	through_stub = (target_fn)make_stub(&cache, TOKEN);

	want = target(1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5);
	got = through_stub(1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5);
	ck_assert(got == want);
	ck_assert_uint_eq(seen_token, TOKEN);
	ck_assert_uint_eq(seen_rdi, 1);
	ck_assert_uint_eq(seen_r8, 5);
	dacce_codecache_fini(&cache);
}
END_TEST

START_TEST(test_entry_keeps_avx_arguments)
{
	struct dacce_codecache cache;
	vector_fn through_stub;
	double want[4], got[4];

	if (!__builtin_cpu_supports("avx"))
		return; /* nothing to keep on this CPU */
	ck_assert_int_eq(dacce_rt_entry_init(), 0);
	dacce_rt_set_slow_handler(handler);
	dacce_codecache_init(&cache);
	through_stub = (vector_fn)make_stub(&cache, TOKEN + 1);
	call_both(through_stub, want, got);
	ck_assert_mem_eq(got, want, sizeof(want));
	dacce_codecache_fini(&cache);
}
END_TEST

static Suite *entry_suite(void)
{
	Suite *s = suite_create("rt_entry");
	TCase *tc = tcase_create("slow path");

	tcase_add_test(tc, test_entry_resumes_the_call_intact);
	tcase_add_test(tc, test_entry_keeps_avx_arguments);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(entry_suite());
}
