// SPDX-License-Identifier: MIT
/*
 * The generated operations against their definition: random call/return
 * sequences run both through machine code built by runtime/ops.c (on the
 * real TLS block) and through decoder/machine.c, compared after every step.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "codecache.h"
#include "dict.h"
#include "machine.h"
#include "ops.h"
#include "testgraph.h"
#include "tls.h"

#define SNIPPET_MAX 256
#define CC_ENTRIES 4096

struct snippets {
	uintptr_t before, after;
};

struct fixture {
	struct testgraph tg;
	struct dacce_dict *dict;
	struct dacce_codecache cache;
	uint32_t edges[16];
	uint32_t n_edges;
	struct snippets code[16];
	uint64_t hits[16];	/* what the pushes counted */
	bool pushed[16];
	struct dacce_cc_entry *cc;
};

static void build_snippet(struct fixture *f, const struct dacce_rt_op *op, bool before,
			  uintptr_t *exec)
{
	uint8_t *write;
	struct x86_buf b;
	uintptr_t near = (uintptr_t)&build_snippet;

	ck_assert_int_eq(dacce_codecache_alloc(&f->cache, near, near + 1, SNIPPET_MAX, 16, exec,
					       &write), 0);
	x86_init(&b, write, SNIPPET_MAX, *exec);
	if (before)
		dacce_emit_before(&b, dacce_tls_tpoff(), op);
	else
		dacce_emit_after(&b, dacce_tls_tpoff(), op);
	x86_ret(&b);
	ck_assert(!b.overflow);
}

/*
 * Edges of every operation kind: encoded with En 0, small and huge En,
 * compressing back edges, and pushed edges with and without compression.
 */
static void fixture_init(struct fixture *f, bool compress_new, bool count)
{
	struct dacce_encode_opts opts;
	struct dacce_rt_op op;
	char name[16];

	memset(f, 0, sizeof(*f));
	tg_init(&f->tg);
	tg_root(&f->tg, "main");
	f->edges[f->n_edges++] = tg_call(&f->tg, "main", "A", 100); /* En 0 */
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		tg_call(&f->tg, "main", name, 50);
		tg_call(&f->tg, name, "A", 1);
	}
	f->edges[f->n_edges++] = tg_call(&f->tg, "A", "A", 10);  /* back edge */
	f->edges[f->n_edges++] = tg_call(&f->tg, "A", "B", 10);
	f->edges[f->n_edges++] = tg_call(&f->tg, "B", "main", 10); /* back edge */
	f->edges[f->n_edges++] = tg_call(&f->tg, "p1", "A", 1);    /* En > 0 */
	dacce_encode_opts_default(&opts);
	opts.compress_unencoded = compress_new;
	ck_assert_int_eq(dacce_encode(f->tg.graph, &opts, &f->dict), 0);
	/* A huge En exercises the 64-bit immediate form. */
	f->dict->en[f->edges[4]] = 1ULL << 40;
	f->dict->max_id = (1ULL << 41);
	f->edges[f->n_edges++] = tg_call(&f->tg, "B", "A", 1);	   /* new: pushed */
	f->edges[f->n_edges++] = tg_call(&f->tg, "A", "C", 1);	   /* new */

	dacce_codecache_init(&f->cache);
	for (uint32_t i = 0; i < f->n_edges; i++) {
		ck_assert_int_eq(dacce_rt_op_for_edge(f->dict, f->tg.graph, f->edges[i], &op), 0);
		ck_assert_ptr_null(op.hits);
		f->pushed[i] = op.kind == DACCE_RT_OP_PUSH;
		if (f->pushed[i])
			op.hits = &f->hits[i];
		op.count = count;
		build_snippet(f, &op, true, &f->code[i].before);
		build_snippet(f, &op, false, &f->code[i].after);
	}
	f->cc = calloc(CC_ENTRIES, sizeof(*f->cc));
	ck_assert_ptr_nonnull(f->cc);
	struct dacce_tls *tls = dacce_tls_self();

	tls->id = 0;
	tls->cc_base = tls->cc_top = f->cc;
	tls->reset_id = f->dict->max_id + 1;
	tls->calls = tls->pushes = 0;
}

static void fixture_fini(struct fixture *f)
{
	struct dacce_tls *tls = dacce_tls_self();

	tls->cc_base = tls->cc_top = NULL;
	free(f->cc);
	dacce_codecache_fini(&f->cache);
	dacce_dict_free(f->dict);
	tg_fini(&f->tg);
}

static void run(uintptr_t code)
{
	((void (*)(void))code)();
}

static void assert_same_state(const struct dacce_state *st)
{
	struct dacce_tls *tls = dacce_tls_self();
	uint32_t depth = (uint32_t)(tls->cc_top - tls->cc_base);

	ck_assert_uint_eq(tls->id, st->id);
	ck_assert_uint_eq(depth, st->cc_depth);
	ck_assert(depth == 0 || memcmp(tls->cc_base, st->cc, depth * sizeof(*st->cc)) == 0);
}

/* count: the code also counts calls and pushes in the TLS block (DACCE_COUNT). */
static void random_walk(bool compress_new, uint64_t seed, bool count)
{
	struct fixture f;
	struct dacce_state st;
	uint32_t stack[CC_ENTRIES], depth = 0;
	uint64_t x = seed, calls[16] = { 0 }, all_calls = 0, pushes = 0;

	fixture_init(&f, compress_new, count);
	dacce_state_init(&st, 0);
	for (int step = 0; step < 20000; step++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* Runs of the same edge make compression happen. */
		bool call = depth == 0 || (depth < 300 && x % 100 < 50);

		if (call) {
			uint32_t k = (x >> 8) % 4 == 0 && depth ? stack[depth - 1]
								: (uint32_t)((x >> 16) % f.n_edges);

			run(f.code[k].before);
			ck_assert_int_eq(dacce_op_call(&st, f.dict, f.tg.graph, f.edges[k]), 0);
			stack[depth++] = k;
			calls[k]++;
		} else {
			uint32_t k = stack[--depth];

			run(f.code[k].after);
			ck_assert_int_eq(dacce_op_return(&st, f.dict, f.tg.graph, f.edges[k]), 0);
		}
		assert_same_state(&st);
	}
	/* Every call through a pushed edge was counted, compressed or not; nothing else was. */
	for (uint32_t i = 0; i < f.n_edges; i++) {
		ck_assert_uint_eq(f.hits[i], f.pushed[i] ? calls[i] : 0);
		all_calls += calls[i];
		pushes += f.pushed[i] ? calls[i] : 0;
	}
	/* The thread's counts: every call, every push (compressed ones too); none when off. */
	ck_assert_uint_eq(dacce_tls_self()->calls, count ? all_calls : 0);
	ck_assert_uint_eq(dacce_tls_self()->pushes, count ? pushes : 0);
	dacce_state_fini(&st);
	fixture_fini(&f);
}

START_TEST(test_generated_code_matches_machine_with_compression)
{
	random_walk(true, 0x1234567, false);
}
END_TEST

START_TEST(test_generated_code_matches_machine_without_compression)
{
	random_walk(false, 0xabcdef, false);
}
END_TEST

START_TEST(test_generated_code_counts_calls_and_pushes)
{
	random_walk(true, 0x7654321, true);
	random_walk(false, 0xfedcba, true);
}
END_TEST

/* Runs code with known values in the registers it must keep; returns them. */
static void run_with_registers(uintptr_t code, uint64_t out[8])
{
	__asm__ volatile(
		"sub $128, %%rsp\n\t" /* keep our own red zone out of the snippet's way */
		"mov $0x1111, %%rax\n\t"
		"mov $0x2222, %%rdx\n\t"
		"mov $0x3333, %%rsi\n\t"
		"mov $0x4444, %%rdi\n\t"
		"mov $0x5555, %%r8\n\t"
		"mov $0x6666, %%r9\n\t"
		"mov $0x7777, %%r10\n\t"
		"mov $0x8888, %%rcx\n\t"
		"call *%[code]\n\t"
		"add $128, %%rsp\n\t"
		"mov %%rax, 0(%[out])\n\t"
		"mov %%rdx, 8(%[out])\n\t"
		"mov %%rsi, 16(%[out])\n\t"
		"mov %%rdi, 24(%[out])\n\t"
		"mov %%r8, 32(%[out])\n\t"
		"mov %%r9, 40(%[out])\n\t"
		"mov %%r10, 48(%[out])\n\t"
		"mov %%rcx, 56(%[out])\n\t"
		:
		: [code] "r"(code), [out] "b"(out)
		: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
}

START_TEST(test_generated_code_keeps_live_registers)
{
	static const uint64_t want[8] = { 0x1111, 0x2222, 0x3333, 0x4444,
					  0x5555, 0x6666, 0x7777, 0x8888 };
	struct fixture f;
	uint64_t got[8];

	fixture_init(&f, true, true);
	for (uint32_t k = 0; k < f.n_edges; k++) {
		run_with_registers(f.code[k].before, got);
		/* Before a call every argument register is live, %rcx included; %r11 is kept too. */
		ck_assert_mem_eq(got, want, sizeof(want));
		run_with_registers(f.code[k].after, got);
		/* After it too: callers may keep values in caller-saved registers (-fipa-ra). */
		ck_assert_mem_eq(got, want, sizeof(want));
	}
	fixture_fini(&f);
}
END_TEST

START_TEST(test_code_cache_stays_near_and_never_writable_and_executable)
{
	struct dacce_codecache cache;
	uintptr_t near = (uintptr_t)&run, exec;
	uint8_t *write;
	char line[512];
	FILE *maps;

	dacce_codecache_init(&cache);
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(dacce_codecache_alloc(&cache, near, near + 4096, 40000, 64, &exec,
						       &write), 0);
		ck_assert_uint_eq(exec % 64, 0);
		ck_assert(x86_rel32_reaches(exec, near) && x86_rel32_reaches(near, exec + 40000));
		ck_assert_ptr_eq(dacce_codecache_writable(&cache, exec), write);
	}
	ck_assert_uint_ge(cache.n, 2); /* 64 x 40000 bytes needs more than one region */
	ck_assert_int_eq(dacce_codecache_alloc(&cache, near, near + (1ULL << 33), 16, 16, &exec,
					       &write), -EINVAL);
	maps = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(maps);
	while (fgets(line, sizeof(line), maps)) {
		char perms[5] = { 0 };

		ck_assert_int_eq(sscanf(line, "%*x-%*x %4s", perms), 1);
		ck_assert_msg(!(perms[1] == 'w' && perms[2] == 'x'), "w+x mapping: %s", line);
	}
	fclose(maps);
	dacce_codecache_fini(&cache);
}
END_TEST

static Suite *ops_suite(void)
{
	Suite *s = suite_create("rt_ops");
	TCase *tc = tcase_create("generated");

	tcase_add_test(tc, test_generated_code_matches_machine_with_compression);
	tcase_add_test(tc, test_generated_code_matches_machine_without_compression);
	tcase_add_test(tc, test_generated_code_counts_calls_and_pushes);
	tcase_add_test(tc, test_generated_code_keeps_live_registers);
	tcase_add_test(tc, test_code_cache_stays_near_and_never_writable_and_executable);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(ops_suite());
}
