// SPDX-License-Identifier: MIT
/*
 * The function scanner on hand-assembled instructions (each one the runtime
 * must classify, at a made-up run-time address so targets are checked as
 * computed, not as found in memory) and on a real function of this program.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "scan.h"

/* Where the hand-assembled bytes pretend to run, and a fake PLT beyond them. */
#define BASE ((uintptr_t)0x400000)
#define PLT_START (BASE + 0x2000)
#define PLT_END (BASE + 0x2100)

static const struct dacce_range fake_plt[] = { { PLT_START, PLT_END } };

/* Scans bytes as the whole function [BASE, BASE + len). */
static int scan_bytes(const uint8_t *bytes, size_t len, struct dacce_scan *out)
{
	return dacce_scan_function(bytes, BASE, BASE, BASE + len, fake_plt, 1, out);
}

/* The scan found exactly one site, described by the rest of the arguments. */
static void assert_single_site(const struct dacce_scan *scan, uintptr_t addr, uint8_t len,
			       enum dacce_site_kind kind, uint8_t flags, uintptr_t target,
			       uintptr_t slot)
{
	ck_assert_uint_eq(scan->n, 1);
	ck_assert_uint_eq(scan->sites[0].addr, addr);
	ck_assert_uint_eq(scan->sites[0].len, len);
	ck_assert_uint_eq(scan->sites[0].kind, kind);
	ck_assert_uint_eq(scan->sites[0].flags, flags);
	ck_assert_uint_eq(scan->sites[0].target, target);
	ck_assert_uint_eq(scan->sites[0].slot, slot);
	ck_assert(!scan->stopped_early);
}

START_TEST(test_direct_call)
{
	static const uint8_t code[] = {
		0x90,				/* nop */
		0xe8, 0xfb, 0x0f, 0x00, 0x00,	/* call BASE+6+0xffb */
		0xe8, 0xf5, 0xff, 0xff, 0xff,	/* call BASE+11-11 (backwards, to BASE) */
		0xc3,				/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n, 2);
	ck_assert_uint_eq(scan.n_insns, 4);
	ck_assert_uint_eq(scan.sites[0].addr, BASE + 1);
	ck_assert_uint_eq(scan.sites[0].len, 5);
	ck_assert_uint_eq(scan.sites[0].kind, DACCE_SITE_DIRECT);
	ck_assert_uint_eq(scan.sites[0].flags, 0);
	ck_assert_uint_eq(scan.sites[0].target, BASE + 0x1001);
	ck_assert_uint_eq(scan.sites[0].slot, 0);
	/* A call into the function itself is still a call. */
	ck_assert_uint_eq(scan.sites[1].addr, BASE + 6);
	ck_assert_uint_eq(scan.sites[1].kind, DACCE_SITE_DIRECT);
	ck_assert_uint_eq(scan.sites[1].target, BASE);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_call_into_plt)
{
	static const uint8_t code[] = {
		0xe8, 0xfb, 0x1f, 0x00, 0x00,	/* call BASE+5+0x1ffb = PLT_START */
		0xe8, 0xf6, 0x20, 0x00, 0x00,	/* call BASE+10+0x20f6 = PLT_END: just past it */
		0xc3,				/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n, 2);
	ck_assert_uint_eq(scan.sites[0].kind, DACCE_SITE_PLT);
	ck_assert_uint_eq(scan.sites[0].target, PLT_START);
	ck_assert_uint_eq(scan.sites[0].slot, 0);
	ck_assert_uint_eq(scan.sites[1].kind, DACCE_SITE_DIRECT);
	ck_assert_uint_eq(scan.sites[1].target, PLT_END);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_call_register)
{
	static const uint8_t code[] = {
		0xff, 0xd0,			/* call *%rax */
		0xc3,				/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	assert_single_site(&scan, BASE, 2, DACCE_SITE_INDIRECT, DACCE_SCAN_SHORT | DACCE_SCAN_REG, 0,
			   0);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_call_memory)
{
	static const uint8_t code[] = {
		0xff, 0x50, 0x08,		/* call *0x8(%rax) */
		0xc3,				/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	assert_single_site(&scan, BASE, 3, DACCE_SITE_INDIRECT, DACCE_SCAN_SHORT | DACCE_SCAN_MEM, 0,
			   0);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_call_got_slot)
{
	static const uint8_t code[] = {
		0x90,					/* nop */
		0xff, 0x15, 0x34, 0x12, 0x00, 0x00,	/* call *0x1234(%rip) */
		0xc3,					/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	assert_single_site(&scan, BASE + 1, 6, DACCE_SITE_PLT, 0, 0, BASE + 7 + 0x1234);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_notrack_call)
{
	static const uint8_t code[] = {
		0x3e, 0xff, 0xd2,		/* notrack call *%rdx */
		0xc3,				/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	assert_single_site(&scan, BASE, 3, DACCE_SITE_INDIRECT,
			   DACCE_SCAN_NOTRACK | DACCE_SCAN_REG | DACCE_SCAN_SHORT, 0, 0);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_jmp_out_of_function)
{
	static const uint8_t forward[] = {
		0xe9, 0x00, 0x01, 0x00, 0x00,	/* jmp BASE+5+0x100 */
	};
	static const uint8_t backward[] = {
		0xe9, 0xf0, 0xff, 0xff, 0xff,	/* jmp BASE+5-0x10: before the function */
	};
	static const uint8_t short_form[] = {
		0xeb, 0x10,			/* jmp BASE+2+0x10 */
	};
	static const uint8_t to_plt[] = {
		0xe9, 0xfb, 0x1f, 0x00, 0x00,	/* jmp PLT_START */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(forward, sizeof(forward), &scan), 0);
	assert_single_site(&scan, BASE, 5, DACCE_SITE_TAIL_DIRECT, 0, BASE + 0x105, 0);
	dacce_scan_fini(&scan);

	ck_assert_int_eq(scan_bytes(backward, sizeof(backward), &scan), 0);
	assert_single_site(&scan, BASE, 5, DACCE_SITE_TAIL_DIRECT, 0, BASE - 0xb, 0);
	dacce_scan_fini(&scan);

	ck_assert_int_eq(scan_bytes(short_form, sizeof(short_form), &scan), 0);
	assert_single_site(&scan, BASE, 2, DACCE_SITE_TAIL_DIRECT, DACCE_SCAN_SHORT, BASE + 0x12, 0);
	dacce_scan_fini(&scan);

	ck_assert_int_eq(scan_bytes(to_plt, sizeof(to_plt), &scan), 0);
	assert_single_site(&scan, BASE, 5, DACCE_SITE_TAIL_DIRECT, 0, PLT_START, 0);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_jumps_inside_are_not_reported)
{
	static const uint8_t code[] = {
		0xeb, 0x01,			/* jmp BASE+3 */
		0x90,				/* nop */
		0x74, 0xfb,			/* je BASE (a loop back to the entry) */
		0x0f, 0x85, 0x00, 0x00, 0x00, 0x00, /* jne BASE+11 (the ret) */
		0xc3,				/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n, 0);
	ck_assert_uint_eq(scan.n_insns, 5);
	ck_assert(!scan.stopped_early);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_conditional_tail_call)
{
	static const uint8_t code[] = {
		0x74, 0x10,				/* je BASE+2+0x10 */
		0x0f, 0x8c, 0x00, 0x10, 0x00, 0x00,	/* jl BASE+8+0x1000 */
		0xc3,					/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n, 2);
	ck_assert_uint_eq(scan.sites[0].kind, DACCE_SITE_TAIL_DIRECT);
	ck_assert_uint_eq(scan.sites[0].flags, DACCE_SCAN_CONDITIONAL | DACCE_SCAN_SHORT);
	ck_assert_uint_eq(scan.sites[0].target, BASE + 0x12);
	ck_assert_uint_eq(scan.sites[1].addr, BASE + 2);
	ck_assert_uint_eq(scan.sites[1].len, 6);
	ck_assert_uint_eq(scan.sites[1].kind, DACCE_SITE_TAIL_DIRECT);
	ck_assert_uint_eq(scan.sites[1].flags, DACCE_SCAN_CONDITIONAL);
	ck_assert_uint_eq(scan.sites[1].target, BASE + 0x1008);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_indirect_jumps)
{
	static const uint8_t reg[] = {
		0xff, 0xe0,				/* jmp *%rax */
	};
	static const uint8_t rip[] = {
		0xff, 0x25, 0x10, 0x00, 0x00, 0x00,	/* jmp *0x10(%rip) */
	};
	static const uint8_t table[] = {
		0x3e, 0xff, 0x24, 0xc5, 0x00, 0x10, 0x40, 0x00, /* notrack jmp *0x401000(,%rax,8) */
	};
	static const uint8_t field[] = {
		0xff, 0xa0, 0x80, 0x00, 0x00, 0x00,	/* jmp *0x80(%rax): a pointer in a struct */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(reg, sizeof(reg), &scan), 0);
	assert_single_site(&scan, BASE, 2, DACCE_SITE_TAIL_INDIRECT,
			   DACCE_SCAN_REG | DACCE_SCAN_SHORT, 0, 0);
	dacce_scan_fini(&scan);

	ck_assert_int_eq(scan_bytes(rip, sizeof(rip), &scan), 0);
	assert_single_site(&scan, BASE, 6, DACCE_SITE_TAIL_INDIRECT, 0, 0, BASE + 6 + 0x10);
	dacce_scan_fini(&scan);

	/* A switch dispatch is reported too: the run-time target decides.  Its index says "table". */
	ck_assert_int_eq(scan_bytes(table, sizeof(table), &scan), 0);
	assert_single_site(&scan, BASE, 8, DACCE_SITE_TAIL_INDIRECT,
			   DACCE_SCAN_NOTRACK | DACCE_SCAN_MEM | DACCE_SCAN_INDEXED, 0, 0);
	dacce_scan_fini(&scan);

	ck_assert_int_eq(scan_bytes(field, sizeof(field), &scan), 0);
	assert_single_site(&scan, BASE, 6, DACCE_SITE_TAIL_INDIRECT, DACCE_SCAN_MEM, 0, 0);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_endbr64)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const uint8_t endbr32[] = { 0xf3, 0x0f, 0x1e, 0xfb };
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa,		/* endbr64 */
		0xe8, 0x00, 0x00, 0x00, 0x00,	/* call BASE+9 */
		0xc3,				/* ret */
	};
	struct dacce_scan scan;

	ck_assert(dacce_scan_endbr64(endbr64));
	ck_assert(!dacce_scan_endbr64(endbr32));
	ck_assert(!dacce_scan_endbr64(NULL));
	ck_assert(dacce_scan_endbr64(code));

	/* endbr64 decodes as one instruction, so the call after it is found. */
	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n_insns, 3);
	assert_single_site(&scan, BASE + 4, 5, DACCE_SITE_DIRECT, 0, BASE + 9, 0);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_padding_after_ret)
{
	static const uint8_t int3_padding[] = {
		0xff, 0xd0,			/* call *%rax */
		0xc3,				/* ret */
		0xcc, 0xcc, 0xcc, 0xcc, 0xcc,	/* int3 padding */
	};
	static const uint8_t data_after_ret[] = {
		0xff, 0xd0,			/* call *%rax */
		0xc3,				/* ret */
		0x06, 0x06, 0x06,		/* (bad) x3: not an instruction in 64-bit mode */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(int3_padding, sizeof(int3_padding), &scan), 0);
	ck_assert_uint_eq(scan.n_insns, 7);
	assert_single_site(&scan, BASE, 2, DACCE_SITE_INDIRECT, DACCE_SCAN_SHORT | DACCE_SCAN_REG, 0,
			   0);
	dacce_scan_fini(&scan);

	ck_assert_int_eq(scan_bytes(data_after_ret, sizeof(data_after_ret), &scan), 0);
	ck_assert_uint_eq(scan.n_insns, 2);
	ck_assert_uint_eq(scan.n, 1);
	ck_assert(scan.stopped_early);
	ck_assert_uint_eq(scan.stop_addr, BASE + 3);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_undecodable_bytes)
{
	static const uint8_t in_the_middle[] = {
		0xff, 0xd0,			/* call *%rax */
		0x06,				/* (bad) */
		0xc3,				/* ret */
	};
	static const uint8_t branch_target_after_ret[] = {
		0x74, 0x01,			/* je BASE+3: the bytes after the ret are live */
		0xc3,				/* ret */
		0x06,				/* (bad) */
	};
	static const uint8_t cut_at_end[] = {
		0x90,				/* nop */
		0xe8, 0x00, 0x00,		/* call, missing the last two bytes of its rel32 */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(in_the_middle, sizeof(in_the_middle), &scan), -EILSEQ);
	ck_assert_uint_eq(scan.stop_addr, BASE + 2);
	ck_assert_uint_eq(scan.n, 0);
	ck_assert_ptr_null(scan.sites);
	dacce_scan_fini(&scan);

	ck_assert_int_eq(scan_bytes(branch_target_after_ret, sizeof(branch_target_after_ret), &scan),
			 -EILSEQ);
	ck_assert_uint_eq(scan.stop_addr, BASE + 3);
	dacce_scan_fini(&scan);

	ck_assert_int_eq(scan_bytes(cut_at_end, sizeof(cut_at_end), &scan), -EILSEQ);
	ck_assert_uint_eq(scan.stop_addr, BASE + 1);
	dacce_scan_fini(&scan);
}
END_TEST

START_TEST(test_empty_range_and_bad_arguments)
{
	static const uint8_t code[] = { 0xc3 };
	struct dacce_scan scan;

	ck_assert_int_eq(dacce_scan_function(code, BASE, BASE, BASE, NULL, 0, &scan), 0);
	ck_assert_uint_eq(scan.n, 0);
	ck_assert_uint_eq(scan.n_insns, 0);
	ck_assert(!scan.stopped_early);
	dacce_scan_fini(&scan);
	/* Nothing to read, so no bytes needed. */
	ck_assert_int_eq(dacce_scan_function(NULL, BASE, BASE, BASE, NULL, 0, &scan), 0);
	dacce_scan_fini(&scan);
	dacce_scan_fini(NULL);

	ck_assert_int_eq(dacce_scan_function(code, BASE, BASE, BASE + 1, NULL, 0, NULL), -EINVAL);
	ck_assert_int_eq(dacce_scan_function(NULL, BASE, BASE, BASE + 1, NULL, 0, &scan), -EINVAL);
	ck_assert_int_eq(dacce_scan_function(code, BASE, BASE - 1, BASE, NULL, 0, &scan), -EINVAL);
	ck_assert_int_eq(dacce_scan_function(code, BASE, BASE + 1, BASE, NULL, 0, &scan), -EINVAL);
	ck_assert_int_eq(dacce_scan_function(code, BASE, BASE, BASE + 1, NULL, 1, &scan), -EINVAL);
}
END_TEST

START_TEST(test_start_inside_the_buffer)
{
	static const uint8_t code[] = {
		0xc3,				/* ret: the previous function */
		0xe8, 0xfb, 0x0f, 0x00, 0x00,	/* call BASE+6+0xffb */
		0xc3,				/* ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(dacce_scan_function(code, BASE, BASE + 1, BASE + sizeof(code), NULL, 0,
					     &scan), 0);
	assert_single_site(&scan, BASE + 1, 5, DACCE_SITE_DIRECT, 0, BASE + 0x1001, 0);
	dacce_scan_fini(&scan);
}
END_TEST

/*
 * Real compiled code: probe_caller lives alone in its own section, so the
 * linker's __start_/__stop_ symbols give its exact bounds.
 */
#define NOINLINE __attribute__((noinline, noclone))

static NOINLINE int probe_square(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * x;
}

static NOINLINE int probe_negate(int x)
{
	__asm__ volatile("" ::: "memory");
	return 1 - x;
}

static NOINLINE __attribute__((section("dacce_scan_probe"))) int probe_caller(int x)
{
	return probe_square(x) + 2 * probe_negate(x + 3);
}

extern const uint8_t __start_dacce_scan_probe[] __attribute__((visibility("hidden")));
extern const uint8_t __stop_dacce_scan_probe[] __attribute__((visibility("hidden")));

/* The number of direct call sites in scan that reach target. */
static size_t count_calls_to(const struct dacce_scan *scan, uintptr_t target)
{
	size_t found = 0;

	for (size_t i = 0; i < scan->n; i++) {
		const struct dacce_scan_site *site = &scan->sites[i];

		if (site->target != target)
			continue;
		ck_assert(site->kind == DACCE_SITE_DIRECT || site->kind == DACCE_SITE_TAIL_DIRECT);
		ck_assert_uint_eq(site->len, 5);
		ck_assert_uint_eq(*(const uint8_t *)site->addr, 0xe8);
		found++;
	}
	return found;
}

START_TEST(test_real_function)
{
	volatile int arg = 4;
	uintptr_t start = (uintptr_t)__start_dacce_scan_probe;
	uintptr_t end = (uintptr_t)__stop_dacce_scan_probe;
	struct dacce_scan scan;

	ck_assert_int_eq(probe_caller(arg), 16 + 2 * (1 - 7));
	ck_assert_uint_eq((uintptr_t)&probe_caller, start);
	ck_assert_int_eq(dacce_scan_function(__start_dacce_scan_probe, start, start, end, NULL, 0,
					     &scan), 0);
	ck_assert_uint_gt(scan.n_insns, 2);
	ck_assert_uint_eq(count_calls_to(&scan, (uintptr_t)&probe_square), 1);
	ck_assert_uint_eq(count_calls_to(&scan, (uintptr_t)&probe_negate), 1);
	for (size_t i = 0; i < scan.n; i++)
		ck_assert(scan.sites[i].addr >= start && scan.sites[i].addr < end);
	dacce_scan_fini(&scan);
}
END_TEST

/*
 * Padding after an unconditional jump: a short jump site takes what it needs
 * for a jmp rel32 (whole instructions), the rest makes a run for hops; a
 * site a branch lands on is marked, and dead padding is never borrowed.
 */
START_TEST(test_padding_after_short_jumps)
{
	static const uint8_t code[] = {
		0x5b,				     /* 0: pop %rbx */
		0xff, 0xe0,			     /* 1: jmp *%rax (site: pad 3) */
		0x0f, 0x1f, 0x00,		     /* 3: nopl (%rax) */
		0x0f, 0x1f, 0x44, 0x00, 0x00,	     /* 6: nopl 0(%rax,%rax) (a run: 6..17) */
		0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00,  /* 11: nopw 0(%rax,%rax) */
		0x90,				     /* 17: nop (still the run) */
		0xff, 0xd3,			     /* 18: call *%rbx (a branch lands here) */
		0x74, 0xfc,			     /* 20: je 18 */
		0xc3,				     /* 22: ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n, 2);
	ck_assert_uint_eq(scan.sites[0].addr, BASE + 1);
	ck_assert_uint_eq(scan.sites[0].kind, DACCE_SITE_TAIL_INDIRECT);
	ck_assert_uint_eq(scan.sites[0].pad, 3);
	ck_assert(!(scan.sites[0].flags & DACCE_SCAN_TARGETED));
	ck_assert_uint_eq(scan.sites[1].addr, BASE + 18);
	ck_assert_uint_eq(scan.sites[1].kind, DACCE_SITE_INDIRECT);
	ck_assert_uint_eq(scan.sites[1].pad, 0); /* a call: what follows is its return address */
	ck_assert(scan.sites[1].flags & DACCE_SCAN_TARGETED);
	ck_assert_uint_eq(scan.sites[1].prev, 0); /* the nop before it never runs */
	ck_assert_uint_eq(scan.n_pads, 1);
	ck_assert_uint_eq(scan.pads[0].start, BASE + 6);
	ck_assert_uint_eq(scan.pads[0].len, 12);
	dacce_scan_fini(&scan);
}
END_TEST

/* Padding a direct branch lands in is code: neither a site's pad nor a run. */
START_TEST(test_padding_a_branch_reaches)
{
	static const uint8_t code[] = {
		0x74, 0x0a,			     /* 0: je 12 (into the run) */
		0x74, 0x03,			     /* 2: je 7 (into the jump's pad) */
		0x5b,				     /* 4: pop %rbx */
		0xff, 0xe0,			     /* 5: jmp *%rax */
		0x0f, 0x1f, 0x00,		     /* 7: nopl (%rax) */
		0x0f, 0x1f, 0x44, 0x00, 0x00,	     /* 10: nopl 0(%rax,%rax) */
		0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00,  /* 15: nopw 0(%rax,%rax) */
		0xc3,				     /* 21: ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n, 1);
	ck_assert_uint_eq(scan.sites[0].pad, 0);
	ck_assert_uint_eq(scan.n_pads, 0);
	dacce_scan_fini(&scan);
}
END_TEST

/* Padding that runs (after a call, not after a jump) is neither a pad nor a run, and is borrowed. */
START_TEST(test_nops_that_run_are_not_padding)
{
	static const uint8_t code[] = {
		0xff, 0xd0,			     /* 0: call *%rax */
		0x0f, 0x1f, 0x44, 0x00, 0x00,	     /* 2: nopl 0(%rax,%rax) */
		0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00,  /* 7: nopw 0(%rax,%rax) */
		0xff, 0xe3,			     /* 13: jmp *%rbx */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n, 2);
	ck_assert_uint_eq(scan.sites[0].pad, 0);
	ck_assert_uint_eq(scan.sites[1].prev, BASE + 7);
	ck_assert_uint_eq(scan.n_pads, 0);
	dacce_scan_fini(&scan);
}
END_TEST

/*
 * A jcc inside the function may be the instruction a short call borrows
 * (`if (hook) hook()`), never the one before it, and never with a prefix or
 * a target outside the function (that jcc is a site of its own).
 */
START_TEST(test_jcc_before_a_call_is_borrowed)
{
	static const uint8_t code[] = {
		0x48, 0x85, 0xc0,		     /* 0: test %rax, %rax */
		0x74, 0x02,			     /* 3: je 9 */
		0xff, 0xd0,			     /* 5: call *%rax */
		0x0f, 0x84, 0x02, 0x00, 0x00, 0x00,  /* 7: je 15 */
		0xff, 0xd2,			     /* 13: call *%rdx */
		0x74, 0x02,			     /* 15: je 19 */
		0x89, 0xc7,			     /* 17: mov %eax, %edi */
		0xff, 0xd1,			     /* 19: call *%rcx */
		0x3e, 0x74, 0x02,		     /* 21: je 26 with a prefix (notrack/ds) */
		0xff, 0xd3,			     /* 24: call *%rbx */
		0x0f, 0x84, 0x00, 0x01, 0x00, 0x00,  /* 26: je past the function: a site */
		0xff, 0xd6,			     /* 32: call *%rsi */
		0xc3,				     /* 34: ret */
	};
	struct dacce_scan scan;

	ck_assert_int_eq(scan_bytes(code, sizeof(code), &scan), 0);
	ck_assert_uint_eq(scan.n, 6);
	ck_assert_uint_eq(scan.sites[0].addr, BASE + 5);
	ck_assert_uint_eq(scan.sites[0].prev, BASE + 3);
	ck_assert_uint_eq(scan.sites[0].prev_len, 2);
	ck_assert_int_eq(scan.sites[0].prev_rip_disp, DACCE_SCAN_PREV_JCC);
	ck_assert_uint_eq(scan.sites[0].prev2, BASE);
	ck_assert_uint_eq(scan.sites[1].addr, BASE + 13);
	ck_assert_uint_eq(scan.sites[1].prev, BASE + 7);
	ck_assert_uint_eq(scan.sites[1].prev_len, 6);
	ck_assert_int_eq(scan.sites[1].prev_rip_disp, DACCE_SCAN_PREV_JCC);
	ck_assert_uint_eq(scan.sites[2].addr, BASE + 19);
	ck_assert_uint_eq(scan.sites[2].prev, BASE + 17);
	ck_assert_int_eq(scan.sites[2].prev_rip_disp, -1);
	ck_assert_uint_eq(scan.sites[2].prev2, 0); /* the jcc before P is not P0 */
	ck_assert_uint_eq(scan.sites[3].addr, BASE + 24);
	ck_assert_uint_eq(scan.sites[3].prev, 0);
	ck_assert_uint_eq(scan.sites[4].addr, BASE + 26); /* the conditional tail jump */
	ck_assert_uint_eq(scan.sites[5].addr, BASE + 32);
	ck_assert_uint_eq(scan.sites[5].prev, 0);
	dacce_scan_fini(&scan);
}
END_TEST

static Suite *scan_suite(void)
{
	Suite *s = suite_create("rt_scan");
	TCase *calls = tcase_create("calls");
	TCase *jumps = tcase_create("jumps");
	TCase *bounds = tcase_create("bounds");

	tcase_add_test(calls, test_direct_call);
	tcase_add_test(calls, test_call_into_plt);
	tcase_add_test(calls, test_call_register);
	tcase_add_test(calls, test_call_memory);
	tcase_add_test(calls, test_jcc_before_a_call_is_borrowed);
	tcase_add_test(calls, test_call_got_slot);
	tcase_add_test(calls, test_notrack_call);
	tcase_add_test(calls, test_real_function);
	suite_add_tcase(s, calls);

	tcase_add_test(jumps, test_jmp_out_of_function);
	tcase_add_test(jumps, test_jumps_inside_are_not_reported);
	tcase_add_test(jumps, test_conditional_tail_call);
	tcase_add_test(jumps, test_indirect_jumps);
	suite_add_tcase(s, jumps);

	tcase_add_test(bounds, test_endbr64);
	tcase_add_test(bounds, test_padding_after_ret);
	tcase_add_test(bounds, test_padding_after_short_jumps);
	tcase_add_test(bounds, test_padding_a_branch_reaches);
	tcase_add_test(bounds, test_nops_that_run_are_not_padding);
	tcase_add_test(bounds, test_undecodable_bytes);
	tcase_add_test(bounds, test_empty_range_and_bad_arguments);
	tcase_add_test(bounds, test_start_inside_the_buffer);
	suite_add_tcase(s, bounds);
	return s;
}

int main(void)
{
	return run_suite(scan_suite());
}
