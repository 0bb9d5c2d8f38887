// SPDX-License-Identifier: MIT
/*
 * Tail calls in machine code against decoder/machine.c: two real tail jumps
 * (tail_a -> tail_b -> tail_probe, one frame) are patched to tail
 * trampolines; the probe compares the context block with the machine, and
 * the return through the stub must restore the caller's state exactly, also
 * after a longjmp left records behind.  A tail jump to a leaf (tail_leaf ->
 * leaf_probe) takes the leaf shape: its return comes back to the
 * trampoline's return point, or through the stub when the frame made a tail
 * call before and holds a record (tail_c -> tail_leaf -> leaf_probe).
 */
#include <check.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "codecache.h"
#include "dict.h"
#include "machine.h"
#include "ops.h"
#include "patch.h"
#include "tail.h"
#include "tls.h"
#include "testgraph.h"
#include "tramp.h"

long tail_probe(long x);
long leaf_probe(long x, long b, long c, long d);
extern char tail_a[], tail_b[], tail_c[], tail_leaf[], frag_caller[], frag_jump[], frag[];

/* Two 5-byte tail jumps in one frame: tail_a -> tail_b -> tail_probe. */
__asm__(".text\n"
	"tail_a:\n"
	"\t.byte 0xe9\n\t.long tail_b - (. + 4)\n"
	"tail_b:\n"
	"\t.byte 0xe9\n\t.long tail_probe - (. + 4)\n"
	"tail_c:\n"
	"\t.byte 0xe9\n\t.long tail_leaf - (. + 4)\n"
	"tail_leaf:\n"
	"\t.byte 0xe9\n\t.long leaf_probe - (. + 4)\n"
	/* A frameless function jumping on with live flags and red zone, as into its own fragment. */
	"frag_caller:\n"
	"\tmov %rdi, -8(%rsp)\n"
	"\tcmp $5, %rdi\n"
	"frag_jump:\n"
	"\t.byte 0xe9\n\t.long frag - (. + 4)\n"
	"frag:\n"
	"\tsetb %al\n"
	"\tmovzbl %al, %eax\n"
	"\tadd -8(%rsp), %rax\n"
	"\tret\n");

#define MAX_ID 1000u

struct snapshot {
	uint64_t id;
	uint32_t cc_depth, tc_depth;
	struct dacce_cc_entry cc[8];
	struct dacce_rt_tail_record tc[8];
};

static struct snapshot in_probe;
static uintptr_t probe_returns_to;
/* The fixture's trampolines: the jump shape, or the call shape (set per loop iteration). */
static bool call_shape;
static struct dacce_rt_tail_record fake_deeper_record;
static bool probe_leaves_a_dead_record;
static jmp_buf escape;
static bool probe_escapes;

static void take_snapshot(struct snapshot *s)
{
	struct dacce_tls *tls = dacce_tls_self();

	memset(s, 0, sizeof(*s));
	s->id = tls->id;
	s->cc_depth = (uint32_t)(tls->cc_top - tls->cc_base);
	s->tc_depth = (uint32_t)(tls->tc_top - tls->tc_base);
	memcpy(s->cc, tls->cc_base, s->cc_depth * sizeof(s->cc[0]));
	memcpy(s->tc, tls->tc_base, s->tc_depth * sizeof(s->tc[0]));
}

__attribute__((noinline, used)) long tail_probe(long x)
{
	struct dacce_tls *tls = dacce_tls_self();

	take_snapshot(&in_probe);
	probe_returns_to = (uintptr_t)__builtin_return_address(0);
	if (probe_leaves_a_dead_record) {
		/* As if a deeper frame tail-called and was then skipped by a longjmp. */
		fake_deeper_record.frame = (uint64_t)(uintptr_t)__builtin_frame_address(0) - 4096;
		*tls->tc_top++ = fake_deeper_record;
	}
	if (probe_escapes)
		longjmp(escape, 1);
	return 3 * x;
}

static __attribute__((noinline)) long call_tail_a(long x)
{
	long r = ((long (*)(long))(uintptr_t)tail_a)(x);

	__asm__ volatile("" ::: "memory"); /* keep it a real call, not a tail jump */
	return r;
}

struct fixture {
	struct dacce_codecache cache;
	struct dacce_cc_entry cc[16];
	struct dacce_rt_tail_record tc[16];
	uint8_t native_a[5], native_b[5];
	uintptr_t stub, after_a; /* where tail_a's callee returns to */
};

static uintptr_t emit_into_cache(struct dacce_codecache *cache, size_t max, uintptr_t near,
				 struct x86_buf *b)
{
	uintptr_t exec;
	uint8_t *write;

	ck_assert_int_eq(dacce_codecache_alloc(cache, near, near + 16, max, 16, &exec, &write), 0);
	x86_init(b, write, max, exec);
	return exec;
}

static void patch_jump(uintptr_t site, uintptr_t dest)
{
	uint8_t bytes[5];
	struct dacce_patch p = { .addr = site, .bytes = bytes, .len = 5,
				 .effect = DACCE_PATCH_JUMP, .target = dest };

	ck_assert_int_eq(dacce_tramp_jmp_bytes(site, dest, bytes), 0);
	ck_assert_int_eq(dacce_patch_apply(&p), 0);
}

/* Patches both tail jumps with the given operations. */
static void fixture_init(struct fixture *f, const struct dacce_rt_op *op_a,
			 const struct dacce_rt_op *op_b)
{
	struct x86_buf b;
	uintptr_t stub, tramp_a, tramp_b, after_b, near = (uintptr_t)tail_a;
	struct dacce_tls *tls = dacce_tls_self();

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(dacce_patch_init(), 0);
	dacce_codecache_init(&f->cache);
	memcpy(f->native_a, tail_a, 5);
	memcpy(f->native_b, tail_b, 5);
	stub = emit_into_cache(&f->cache, DACCE_TAIL_STUB_MAX, near, &b);
	ck_assert_uint_eq(dacce_tail_emit_return_stub(&b, dacce_tls_tpoff()), stub);
	f->stub = f->after_a = stub;
	emit_into_cache(&f->cache, DACCE_TAIL_TRAMP_MAX, near, &b);
	if (call_shape)
		ck_assert_int_eq(dacce_tail_emit_call_trampoline(&b, dacce_tls_tpoff(), op_a, false,
								 (uintptr_t)tail_b, 0, &tramp_a,
								 &f->after_a), 0);
	else
		ck_assert_int_eq(dacce_tail_emit_trampoline(&b, dacce_tls_tpoff(), op_a, stub,
							    (uintptr_t)tail_b, 0, &tramp_a), 0);
	emit_into_cache(&f->cache, DACCE_TAIL_TRAMP_MAX, near, &b);
	if (call_shape)
		ck_assert_int_eq(dacce_tail_emit_call_trampoline(&b, dacce_tls_tpoff(), op_b, false,
								 (uintptr_t)&tail_probe, 0, &tramp_b,
								 &after_b), 0);
	else
		ck_assert_int_eq(dacce_tail_emit_trampoline(&b, dacce_tls_tpoff(), op_b, stub,
							    (uintptr_t)&tail_probe, 0, &tramp_b), 0);
	patch_jump((uintptr_t)tail_a, tramp_a);
	patch_jump((uintptr_t)tail_b, tramp_b);
	tls->cc_base = tls->cc_top = f->cc;
	/* Generated code reads maxID + 1 from the block. */
	tls->reset_id = op_b->kind == DACCE_RT_OP_PUSH ? op_b->reset_id : op_a->reset_id;
	tls->tc_base = tls->tc_top = f->tc;
	probe_leaves_a_dead_record = false;
	probe_escapes = false;
}

/* Both sites as they were, the context block empty, the code gone. */
static void put_back(struct dacce_codecache *cache, char *site_1, const uint8_t *native_1,
		     char *site_2, const uint8_t *native_2)
{
	struct dacce_tls *tls = dacce_tls_self();

	ck_assert_int_eq(dacce_patch_write_quiet((uintptr_t)site_1, native_1, 5), 0);
	ck_assert_int_eq(dacce_patch_write_quiet((uintptr_t)site_2, native_2, 5), 0);
	tls->cc_base = tls->cc_top = NULL;
	tls->tc_base = tls->tc_top = NULL;
	dacce_codecache_fini(cache);
}

static void fixture_fini(struct fixture *f)
{
	put_back(&f->cache, tail_a, f->native_a, tail_b, f->native_b);
}

static struct dacce_rt_op push_op(uint32_t edge, bool compress)
{
	return (struct dacce_rt_op){ .kind = DACCE_RT_OP_PUSH, .edge = edge, .compress = compress,
				     .reset_id = MAX_ID + 1 };
}

static void assert_snapshot_is(const struct snapshot *s, const struct dacce_state *st)
{
	ck_assert_uint_eq(s->id, st->id);
	ck_assert_uint_eq(s->cc_depth, st->cc_depth);
	ck_assert_mem_eq(s->cc, st->cc, st->cc_depth * sizeof(st->cc[0]));
	ck_assert_uint_eq(s->tc_depth, st->tc_depth);
	for (uint32_t i = 0; i < st->tc_depth; i++) {
		ck_assert_uint_eq(s->tc[i].id, st->tc[i].id);
		ck_assert_uint_eq((uint32_t)(s->tc[i].cc_top - dacce_tls_self()->cc_base),
				  st->tc[i].cc_depth);
		ck_assert_uint_eq(s->tc[i].top_aux, st->tc[i].top_aux);
	}
}

START_TEST(test_two_tail_calls_in_one_frame)
{
	struct fixture f;
	struct testgraph tg;
	struct dacce_encode_opts opts;
	struct dacce_dict *dict = NULL;
	struct dacce_rt_op a, b;
	struct dacce_tls *tls;
	struct dacce_state st;
	uint32_t root, back, first, fresh;

	call_shape = _i != 0;
	/* Edges of both pushed kinds: a new one (no compression), a back edge (compression). */
	tg_init(&tg);
	root = tg_root(&tg, "main");
	first = tg_call(&tg, "main", "X", 1);
	back = tg_call(&tg, "X", "X", 1);
	dacce_encode_opts_default(&opts);
	opts.compress_unencoded = false;
	ck_assert_int_eq(dacce_encode(tg.graph, &opts, &dict), 0);
	fresh = tg_edge_at(&tg, tg_site(&tg, "X", DACCE_SITE_TAIL_DIRECT), "Y", 1);
	ck_assert_int_eq(dacce_rt_op_for_edge(dict, tg.graph, fresh, &a), 0);
	ck_assert_int_eq(dacce_rt_op_for_edge(dict, tg.graph, back, &b), 0);
	ck_assert(a.kind == DACCE_RT_OP_PUSH && !a.compress && b.kind == DACCE_RT_OP_PUSH && b.compress);

	/* The machine: a context with one entry, then both tail calls from one frame. */
	dacce_state_init(&st, 0);
	ck_assert_int_eq(dacce_op_thread_start(&st, dict, tg.graph, root), 0);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, first), 0);
	ck_assert_int_eq(dacce_op_call(&st, dict, tg.graph, back), 0);

	fixture_init(&f, &a, &b);
	tls = dacce_tls_self();
	tls->id = st.id;
	memcpy(tls->cc_base, st.cc, st.cc_depth * sizeof(st.cc[0]));
	tls->cc_top = tls->cc_base + st.cc_depth;
	ck_assert_int_eq(dacce_op_tail(&st, dict, tg.graph, fresh, 1), 0);
	ck_assert_int_eq(dacce_op_tail(&st, dict, tg.graph, back, 1), 0);

	ck_assert_int_eq(call_tail_a(14), 42);
	assert_snapshot_is(&in_probe, &st);
	/*
	 * The first tail call's return point (the call shape) or the stub: the
	 * second tail call jumps, and the callee returns where the first put.
	 */
	ck_assert_uint_eq(probe_returns_to, f.after_a);
	ck_assert(call_shape == (f.after_a != f.stub));
	/* Back in the caller: exactly as before the tail calls. */
	ck_assert_int_eq(dacce_op_frame_exit(&st, 1), 0);
	ck_assert_uint_eq(tls->id, st.id);
	ck_assert_ptr_eq(tls->cc_top, tls->cc_base + st.cc_depth);
	ck_assert_mem_eq(tls->cc_base, st.cc, st.cc_depth * sizeof(st.cc[0]));
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base);
	dacce_state_fini(&st);
	dacce_dict_free(dict);
	tg_fini(&tg);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_return_restores_a_bumped_count)
{
	struct fixture f;
	struct dacce_rt_op a = { .kind = DACCE_RT_OP_ADD, .en = 5 }, b = push_op(6, true);
	struct dacce_tls *tls;

	call_shape = _i != 0;
	fixture_init(&f, &a, &b);
	tls = dacce_tls_self();
	tls->id = 10;
	*tls->cc_top++ = (struct dacce_cc_entry){ .id = 15, .edge = 6, .aux = 2 };
	ck_assert_int_eq(call_tail_a(1), 3);
	/* In the probe the repeat was folded into the top entry. */
	ck_assert_uint_eq(in_probe.cc_depth, 1);
	ck_assert_uint_eq(in_probe.cc[0].aux, 3);
	ck_assert_uint_eq(in_probe.id, MAX_ID + 1);
	ck_assert_uint_eq(tls->id, 10);
	ck_assert_uint_eq(tls->cc_base[0].aux, 2);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_records_of_skipped_frames_are_dropped)
{
	struct fixture f;
	struct dacce_rt_op a = push_op(5, false), b = push_op(6, false);
	struct dacce_tls *tls;

	call_shape = _i != 0;
	fixture_init(&f, &a, &b);
	tls = dacce_tls_self();
	tls->id = 7;

	/* A dead deeper record on top when the frame returns: the stub skips it. */
	probe_leaves_a_dead_record = true;
	ck_assert_int_eq(call_tail_a(2), 6);
	ck_assert_uint_eq(tls->id, 7);
	ck_assert_ptr_eq(tls->cc_top, tls->cc_base);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base);

	/* A longjmp out of the probe leaves this frame's record and stub behind... */
	probe_leaves_a_dead_record = false;
	probe_escapes = true;
	if (setjmp(escape) == 0)
		call_tail_a(2);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base + 1);
	/* ...which the runtime's longjmp hook rewinds for id and ccStack (done by hand here). */
	tls->id = 7;
	tls->cc_top = tls->cc_base;
	probe_escapes = false;
	/* The next frame at the same slot holds a native return address: not fooled. */
	ck_assert_int_eq(call_tail_a(5), 15);
	ck_assert_uint_eq(tls->id, 7);
	ck_assert_ptr_eq(tls->cc_top, tls->cc_base);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base);
	fixture_fini(&f);
}
END_TEST

/* What the leaf saw: the state, where it returns, and that its stack was aligned as natively. */
static struct snapshot in_leaf;
static uintptr_t leaf_returns_to;
static bool leaf_aligned, leaf_escapes;
/* The leaf's arguments past the first: %rsi, %rdx, %rcx (the trampoline's own scratch). */
static long leaf_args[3];
#define ARG2 0x2222
#define ARG3 0x3333
#define ARG4 0x4444

__attribute__((noinline, used)) long leaf_probe(long x, long b, long c, long d)
{
	char text[32];

	leaf_args[0] = b;
	leaf_args[1] = c;
	leaf_args[2] = d;
	take_snapshot(&in_leaf);
	leaf_returns_to = (uintptr_t)__builtin_return_address(0);
	/* At entry %rsp + 8 is 16-aligned: the frame's address is too. */
	leaf_aligned = ((uintptr_t)__builtin_frame_address(0) & 15) == 0;
	snprintf(text, sizeof(text), "%.1f", (double)x / 2); /* vector code on the stack */
	if (leaf_escapes)
		longjmp(escape, 1);
	return 3 * x + (text[0] == '-');
}

static __attribute__((noinline)) long call_through(const char *code, long x)
{
	long r = ((long (*)(long, long, long, long))(uintptr_t)code)(x, ARG2, ARG3, ARG4);

	__asm__ volatile("" ::: "memory"); /* a real call, not a tail jump */
	return r;
}

struct leaf_fixture {
	struct dacce_codecache cache;
	struct dacce_cc_entry cc[4];
	struct dacce_rt_tail_record tc[4];
	uint8_t native_c[5], native_leaf[5];
	uintptr_t stub, after;
};

static void leaf_fixture_init(struct leaf_fixture *f, const struct dacce_rt_op *op_c,
			      const struct dacce_rt_op *op_leaf)
{
	struct x86_buf b;
	uintptr_t tramp_c, tramp_leaf, near = (uintptr_t)tail_c;
	struct dacce_tls *tls = dacce_tls_self();

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(dacce_patch_init(), 0);
	dacce_codecache_init(&f->cache);
	memcpy(f->native_c, tail_c, 5);
	memcpy(f->native_leaf, tail_leaf, 5);
	f->stub = emit_into_cache(&f->cache, DACCE_TAIL_STUB_MAX, near, &b);
	ck_assert_uint_eq(dacce_tail_emit_return_stub(&b, dacce_tls_tpoff()), f->stub);
	emit_into_cache(&f->cache, DACCE_TAIL_TRAMP_MAX, near, &b);
	ck_assert_int_eq(dacce_tail_emit_trampoline(&b, dacce_tls_tpoff(), op_c, f->stub,
						    (uintptr_t)tail_leaf, 0, &tramp_c), 0);
	emit_into_cache(&f->cache, DACCE_TAIL_TRAMP_MAX, near, &b);
	ck_assert_int_eq(dacce_tail_emit_call_trampoline(&b, dacce_tls_tpoff(), op_leaf, true,
							 (uintptr_t)&leaf_probe, 0, &tramp_leaf,
							 &f->after), 0);
	patch_jump((uintptr_t)tail_c, tramp_c);
	patch_jump((uintptr_t)tail_leaf, tramp_leaf);
	tls->cc_base = tls->cc_top = f->cc;
	tls->tc_base = tls->tc_top = f->tc;
	leaf_escapes = false;
}

static void leaf_fixture_fini(struct leaf_fixture *f)
{
	put_back(&f->cache, tail_c, f->native_c, tail_leaf, f->native_leaf);
}

START_TEST(test_leaf_returns_to_the_trampoline)
{
	struct leaf_fixture f;
	struct dacce_rt_op c = { .kind = DACCE_RT_OP_ADD, .en = 7 }, leaf = { .kind = DACCE_RT_OP_ADD, .en = 5 };
	struct dacce_tls *tls;

	leaf_fixture_init(&f, &c, &leaf);
	tls = dacce_tls_self();
	tls->id = 10;
	ck_assert_int_eq(call_through(tail_leaf, 4), 12);
	/* In the leaf: the edge added, one record of the frame's state, the return point in its slot. */
	ck_assert_uint_eq(in_leaf.id, 15);
	ck_assert_uint_eq(in_leaf.tc_depth, 1);
	ck_assert_uint_eq(in_leaf.tc[0].id, 10);
	ck_assert_uint_eq(leaf_returns_to, f.after);
	ck_assert(leaf_aligned);
	/* Back: as before the tail jump, record gone. */
	ck_assert_uint_eq(tls->id, 10);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base);

	/*
	 * After a tail call that left a record, the leaf keeps that record (the
	 * state before the first tail call) and returns through the stub.
	 */
	ck_assert_int_eq(call_through(tail_c, 6), 18);
	ck_assert_uint_eq(in_leaf.id, 22);
	ck_assert_uint_eq(in_leaf.tc_depth, 1);
	ck_assert_uint_eq(in_leaf.tc[0].id, 10);
	ck_assert_uint_eq(leaf_returns_to, f.stub);
	ck_assert(leaf_aligned);
	ck_assert_uint_eq(tls->id, 10);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base);
	leaf_fixture_fini(&f);
}
END_TEST

/*
 * An En past 32 bits takes a scratch register through the red zone: it must
 * not land where the trampoline keeps %rcx, the leaf's fourth argument.
 */
START_TEST(test_leaf_keeps_its_arguments_with_a_wide_en)
{
	struct leaf_fixture f;
	struct dacce_rt_op c = { .kind = DACCE_RT_OP_ADD, .en = 7 },
			   leaf = { .kind = DACCE_RT_OP_ADD, .en = 1ull << 40 };
	struct dacce_tls *tls;

	leaf_fixture_init(&f, &c, &leaf);
	tls = dacce_tls_self();
	tls->id = 10;
	for (int path = 0; path < 2; path++) {
		memset(leaf_args, 0, sizeof(leaf_args));
		/* Without a record first, then with the one tail_c's tail call left. */
		ck_assert_int_eq(call_through(path ? tail_c : tail_leaf, 4), 12);
		ck_assert_uint_eq(in_leaf.id, 10 + (path ? 7 : 0) + (1ull << 40));
		ck_assert_int_eq(leaf_args[0], ARG2);
		ck_assert_int_eq(leaf_args[1], ARG3);
		ck_assert_int_eq(leaf_args[2], ARG4);
		ck_assert_uint_eq(tls->id, 10);
		ck_assert_ptr_eq(tls->tc_top, tls->tc_base);
	}
	leaf_fixture_fini(&f);
}
END_TEST

START_TEST(test_leaf_record_left_by_a_longjmp_is_reused)
{
	struct leaf_fixture f;
	struct dacce_rt_op c = { .kind = DACCE_RT_OP_ADD, .en = 7 }, leaf = { .kind = DACCE_RT_OP_ADD, .en = 5 };
	struct dacce_tls *tls;

	leaf_fixture_init(&f, &c, &leaf);
	tls = dacce_tls_self();
	tls->id = 10;
	leaf_escapes = true;
	if (setjmp(escape) == 0)
		call_through(tail_leaf, 1);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base + 1);
	tls->id = 10; /* the runtime's longjmp hook does this */
	leaf_escapes = false;
	/* A new frame at the same slot: the dead record is taken over, and none is left. */
	ck_assert_int_eq(call_through(tail_leaf, 2), 6);
	ck_assert_uint_eq(in_leaf.tc_depth, 1);
	ck_assert_uint_eq(leaf_returns_to, f.after);
	ck_assert_uint_eq(tls->id, 10);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base);
	leaf_fixture_fini(&f);
}
END_TEST

static __attribute__((noinline)) long call_frag_caller(long x)
{
	long r = ((long (*)(long))(uintptr_t)frag_caller)(x);

	__asm__ volatile("" ::: "memory"); /* a real call, not a tail jump */
	return r;
}

/*
 * A jump that looks like a tail call may enter a fragment of the function it
 * leaves, with its flags and red zone live: the call shape keeps both (the
 * fragment reads the carry and a red-zone word), and the fragment returns
 * through the trampoline's return point with the state put back.
 */
START_TEST(test_call_shape_keeps_flags_and_red_zone)
{
	struct dacce_codecache cache;
	struct dacce_cc_entry cc[4];
	struct dacce_rt_tail_record tc[4];
	struct dacce_rt_op op = { .kind = DACCE_RT_OP_ADD, .en = 9 };
	uint8_t native[5];
	uintptr_t stub, tramp, after, near = (uintptr_t)frag_jump;
	struct x86_buf b;
	struct dacce_tls *tls = dacce_tls_self();

	ck_assert_int_eq(dacce_patch_init(), 0);
	dacce_codecache_init(&cache);
	memcpy(native, frag_jump, 5);
	stub = emit_into_cache(&cache, DACCE_TAIL_STUB_MAX, near, &b);
	ck_assert_uint_eq(dacce_tail_emit_return_stub(&b, dacce_tls_tpoff()), stub);
	emit_into_cache(&cache, DACCE_TAIL_TRAMP_MAX, near, &b);
	ck_assert_int_eq(dacce_tail_emit_call_trampoline(&b, dacce_tls_tpoff(), &op, false,
							 (uintptr_t)frag, 0, &tramp, &after), 0);
	patch_jump((uintptr_t)frag_jump, tramp);
	tls->cc_base = tls->cc_top = cc;
	tls->tc_base = tls->tc_top = tc;
	tls->id = 4;
	ck_assert_int_eq(call_frag_caller(3), 4); /* carry set, 3 from the red zone */
	ck_assert_int_eq(call_frag_caller(7), 7);
	ck_assert_uint_eq(tls->id, 4);
	ck_assert_ptr_eq(tls->tc_top, tls->tc_base);
	put_back(&cache, frag_jump, native, frag_jump, native);
}
END_TEST

static Suite *tail_suite(void)
{
	Suite *s = suite_create("rt_tail");
	TCase *tc = tcase_create("tail");

	tcase_add_loop_test(tc, test_two_tail_calls_in_one_frame, 0, 2);
	tcase_add_loop_test(tc, test_return_restores_a_bumped_count, 0, 2);
	tcase_add_loop_test(tc, test_records_of_skipped_frames_are_dropped, 0, 2);
	tcase_add_test(tc, test_leaf_returns_to_the_trampoline);
	tcase_add_test(tc, test_leaf_keeps_its_arguments_with_a_wide_en);
	tcase_add_test(tc, test_call_shape_keeps_flags_and_red_zone);
	tcase_add_test(tc, test_leaf_record_left_by_a_longjmp_is_reused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(tail_suite());
}
