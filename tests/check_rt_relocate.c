// SPDX-License-Identifier: MIT
/*
 * Copies of functions (runtime/relocate.c), run for real: small functions
 * written in assembly below, copied into the code cache, must compute what
 * the originals compute, do their inline calls' operations on the real TLS
 * block, and leave for the original at sites that are not inline.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "codecache.h"
#include "relocate.h"
#include "tls.h"

/* The functions copied; each ends at its _end label. */
__asm__(".text\n"
	/* long reloc_loop(long n): n + (n-1) + ... + 1, through rel8 branches both ways */
	".globl reloc_loop, reloc_loop_end\n"
	"reloc_loop:\n"
	"	xor %eax, %eax\n"
	"	test %rdi, %rdi\n"
	"	jle 2f\n"
	"1:	add %rdi, %rax\n"
	"	dec %rdi\n"
	"	jnz 1b\n"
	"2:	ret\n"
	"reloc_loop_end:\n"
	/* long reloc_global(long x): x + reloc_value, RIP-relative */
	".globl reloc_global, reloc_global_end\n"
	"reloc_global:\n"
	"	mov reloc_value(%rip), %rax\n"
	"	add %rdi, %rax\n"
	"	ret\n"
	"reloc_global_end:\n"
	/* long reloc_caller(long x): reloc_callee(x) + x + 1, a direct call (the site) */
	".globl reloc_caller, reloc_caller_site, reloc_caller_end\n"
	"reloc_caller:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"reloc_caller_site:\n"
	"	call reloc_callee\n"
	"	add %rbx, %rax\n"
	"	add $1, %rax\n"
	"	pop %rbx\n"
	"	ret\n"
	"reloc_caller_end:\n"
	/* long reloc_indirect(long x, long (*f)(long)): f(x) + 1, through an indirect call site */
	".globl reloc_indirect, reloc_indirect_site, reloc_indirect_end\n"
	"reloc_indirect:\n"
	"	sub $8, %rsp\n"
	"	mov %rsi, %rax\n"
	"reloc_indirect_site:\n"
	"	call *%rax\n"
	"	add $8, %rsp\n"
	"	add $1, %rax\n"
	"	ret\n"
	"reloc_indirect_end:\n"
	/* a call that is no site, and a jump into the middle of an instruction */
	".globl reloc_unknown_call, reloc_unknown_call_end\n"
	"reloc_unknown_call:\n"
	"	call reloc_callee\n"
	"	ret\n"
	"reloc_unknown_call_end:\n"
	".globl reloc_mid_jump, reloc_mid_jump_end\n"
	"reloc_mid_jump:\n"
	"	jmp 1f + 1\n"
	"1:	mov $1, %eax\n"
	"	ret\n"
	"reloc_mid_jump_end:\n"
	".data\n"
	".globl reloc_value\n"
	"reloc_value: .quad 1000\n"
	".text\n");

extern const uint8_t reloc_loop[], reloc_loop_end[], reloc_global[], reloc_global_end[];
extern const uint8_t reloc_caller[], reloc_caller_site[], reloc_caller_end[];
extern const uint8_t reloc_indirect[], reloc_indirect_site[], reloc_indirect_end[];
extern const uint8_t reloc_unknown_call[], reloc_unknown_call_end[];
extern const uint8_t reloc_mid_jump[], reloc_mid_jump_end[];

static uint64_t id_in_callee;
static uint32_t depth_in_callee;
static uintptr_t callee_return;

long reloc_callee(long x);

__attribute__((noinline, used)) long reloc_callee(long x)
{
	id_in_callee = dacce_tls_self()->id;
	depth_in_callee = dacce_tls_self()->cc_base
				  ? (uint32_t)(dacce_tls_self()->cc_top - dacce_tls_self()->cc_base)
				  : 0;
	callee_return = (uintptr_t)__builtin_return_address(0);
	return 2 * x;
}

typedef long (*unary_fn)(long);
typedef long (*binary_fn)(long, unary_fn);

/* Lays out, places and writes the copy of [start, end): its address. */
static uintptr_t copy_of(struct dacce_codecache *cache, const uint8_t *start, const uint8_t *end,
			 struct dacce_reloc_site *sites, size_t n_sites, struct dacce_reloc_copy *c)
{
	struct dacce_reloc_code decoded;
	uintptr_t exec;
	uint8_t *write;

	ck_assert_int_eq(dacce_relocate_decode(start, (uintptr_t)start, (uintptr_t)end, &decoded), 0);
	ck_assert_int_eq(dacce_relocate_layout(&decoded, start, (uintptr_t)start, (uintptr_t)end,
					       dacce_tls_tpoff(), sites, n_sites, c),
			 0);
	dacce_reloc_code_fini(&decoded);
	ck_assert_int_eq(dacce_codecache_alloc(cache, (uintptr_t)start, (uintptr_t)end, c->len, 16,
					       &exec, &write),
			 0);
	ck_assert_int_eq(dacce_relocate_place(c, exec), 0);
	memcpy(write, c->code, c->len);
	return exec;
}

START_TEST(test_copy_with_branches_and_rip_relative_operands_computes_the_same)
{
	struct dacce_codecache cache;
	struct dacce_reloc_copy loop, global;
	struct dacce_reloc_code decoded;
	unary_fn f;

	dacce_codecache_init(&cache);
	f = (unary_fn)copy_of(&cache, reloc_loop, reloc_loop_end, NULL, 0, &loop);
	for (long n = -2; n < 50; n++)
		ck_assert_int_eq(f(n), n > 0 ? n * (n + 1) / 2 : 0);
	/* Every original instruction has its place, in order; the rel8 branches stayed short. */
	ck_assert_uint_eq(loop.n_pairs, 7);
	ck_assert_uint_eq(loop.len, (size_t)(reloc_loop_end - reloc_loop) + 5 /* int3s after */);
	for (size_t i = 0; i < loop.n_pairs; i++) {
		ck_assert_int_eq(dacce_reloc_copy_of(&loop, loop.pairs[i].original), loop.pairs[i].copy);
		ck_assert_int_eq(dacce_reloc_original_of(loop.pairs, loop.n_pairs, loop.pairs[i].copy),
				 loop.pairs[i].original);
	}
	/* The loop's head (offset 7) is a branch target; the entry is not. */
	ck_assert_int_eq(dacce_relocate_decode(reloc_loop, (uintptr_t)reloc_loop,
					       (uintptr_t)reloc_loop_end, &decoded),
			 0);
	ck_assert(dacce_reloc_branch_into(&decoded, 6, 8));
	ck_assert(!dacce_reloc_branch_into(&decoded, 0, 5));
	ck_assert_uint_eq(decoded.n_insns, 7);
	ck_assert_uint_eq(decoded.insns[2].kind, DACCE_RELOC_JCC);
	dacce_reloc_code_fini(&decoded);

	f = (unary_fn)copy_of(&cache, reloc_global, reloc_global_end, NULL, 0, &global);
	ck_assert_int_eq(f(5), 1005);
	dacce_reloc_copy_fini(&loop);
	dacce_reloc_copy_fini(&global);
	dacce_codecache_fini(&cache);
}
END_TEST

START_TEST(test_inline_call_does_its_operation_around_the_callee)
{
	struct dacce_codecache cache;
	struct dacce_reloc_copy c;
	struct dacce_reloc_site site = {
		.addr = (uintptr_t)reloc_caller_site,
		.leave_to = (uintptr_t)reloc_caller_site,
		.target = (uintptr_t)reloc_callee,
		.op = { .kind = DACCE_RT_OP_ADD, .en = 40 },
		.inline_call = true,
	};
	struct dacce_tls *tls = dacce_tls_self();
	struct dacce_cc_entry cc[4] = { { 0 } };
	uintptr_t exec;
	long r;

	dacce_codecache_init(&cache);
	exec = copy_of(&cache, reloc_caller, reloc_caller_end, &site, 1, &c);
	tls->id = 7;
	r = ((unary_fn)exec)(3);
	ck_assert_int_eq(r, 3 * 2 + 3 + 1);
	ck_assert_uint_eq(id_in_callee, 47);
	ck_assert_uint_eq(tls->id, 7);
	/* The callee returns into the copy, to the site's return point. */
	ck_assert_uint_eq(callee_return, exec + site.return_at);
	ck_assert_int_eq(dacce_reloc_original_of(c.pairs, c.n_pairs, site.code_at),
			 reloc_caller_site - reloc_caller);
	/* Neither the call nor the return point is an instruction of the original's. */
	ck_assert_int_eq(dacce_reloc_original_of(c.pairs, c.n_pairs, site.return_at), -1);
	dacce_reloc_copy_fini(&c);

	/* A free call: no operation, and room for a jump after its return point. */
	site.op = (struct dacce_rt_op){ .kind = DACCE_RT_OP_NONE };
	exec = copy_of(&cache, reloc_caller, reloc_caller_end, &site, 1, &c);
	r = ((unary_fn)exec)(10);
	ck_assert_int_eq(r, 31);
	ck_assert_uint_eq(id_in_callee, 7);
	ck_assert_mem_eq(c.code + site.return_at, "\x0f\x1f\x44\x00\x00", 5);
	dacce_reloc_copy_fini(&c);

	/* A pushed call: the callee runs with the entry on the ccStack and the reset id. */
	tls->cc_base = tls->cc_top = cc;
	tls->reset_id = 1000;
	site.op = (struct dacce_rt_op){ .kind = DACCE_RT_OP_PUSH, .edge = 5 };
	exec = copy_of(&cache, reloc_caller, reloc_caller_end, &site, 1, &c);
	r = ((unary_fn)exec)(1);
	ck_assert_int_eq(r, 4);
	ck_assert_uint_eq(id_in_callee, 1000);
	ck_assert_uint_eq(depth_in_callee, 1);
	ck_assert_uint_eq(cc[0].id, 7);
	ck_assert_uint_eq(cc[0].edge, 5);
	ck_assert_ptr_eq(tls->cc_top, cc);
	ck_assert_uint_eq(tls->id, 7);
	dacce_reloc_copy_fini(&c);
	tls->cc_base = tls->cc_top = NULL;
	tls->id = 0;
	dacce_codecache_fini(&cache);
}
END_TEST

START_TEST(test_site_not_inline_goes_on_in_the_original)
{
	struct dacce_codecache cache;
	struct dacce_reloc_copy c;
	struct dacce_reloc_site site = {
		.addr = (uintptr_t)reloc_indirect_site,
		.leave_to = (uintptr_t)reloc_indirect_site,
	};
	uintptr_t exec;

	dacce_codecache_init(&cache);
	exec = copy_of(&cache, reloc_indirect, reloc_indirect_end, &site, 1, &c);
	ck_assert_int_eq(((binary_fn)exec)(4, reloc_callee), 9);
	/* The call ran in the original: it returned there. */
	ck_assert_uint_eq(callee_return, (uintptr_t)reloc_indirect_site + 2);
	ck_assert_uint_lt(site.code_at, c.len);
	dacce_reloc_copy_fini(&c);
	dacce_codecache_fini(&cache);
}
END_TEST

START_TEST(test_code_it_cannot_move_is_refused)
{
	struct dacce_reloc_copy c;
	struct dacce_reloc_code d;
	struct dacce_reloc_site wrong = { .addr = (uintptr_t)reloc_caller_site + 1 };

	/* A call the runtime does not know as a site would run without its operation. */
	ck_assert_int_eq(dacce_relocate_decode(reloc_unknown_call, (uintptr_t)reloc_unknown_call,
					       (uintptr_t)reloc_unknown_call_end, &d),
			 0);
	ck_assert_int_eq(dacce_relocate_layout(&d, reloc_unknown_call, (uintptr_t)reloc_unknown_call,
					       (uintptr_t)reloc_unknown_call_end, 0, NULL, 0, &c),
			 -ENOTSUP);
	dacce_reloc_code_fini(&d);
	/* A branch into the middle of an instruction. */
	ck_assert_int_eq(dacce_relocate_decode(reloc_mid_jump, (uintptr_t)reloc_mid_jump,
					       (uintptr_t)reloc_mid_jump_end, &d),
			 -ENOTSUP);
	ck_assert_ptr_null(d.insns);
	/* A site that is not on an instruction. */
	wrong.leave_to = wrong.addr;
	ck_assert_int_eq(dacce_relocate_decode(reloc_caller, (uintptr_t)reloc_caller,
					       (uintptr_t)reloc_caller_end, &d),
			 0);
	ck_assert_int_eq(dacce_relocate_layout(&d, reloc_caller, (uintptr_t)reloc_caller,
					       (uintptr_t)reloc_caller_end, 0, &wrong, 1, &c),
			 -ENOTSUP);
	ck_assert_ptr_null(c.code);
	dacce_reloc_code_fini(&d);
}
END_TEST

static Suite *relocate_suite(void)
{
	Suite *s = suite_create("rt_relocate");
	TCase *tc = tcase_create("copies");

	tcase_add_test(tc, test_copy_with_branches_and_rip_relative_operands_computes_the_same);
	tcase_add_test(tc, test_inline_call_does_its_operation_around_the_callee);
	tcase_add_test(tc, test_site_not_inline_goes_on_in_the_original);
	tcase_add_test(tc, test_code_it_cannot_move_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(relocate_suite());
}
