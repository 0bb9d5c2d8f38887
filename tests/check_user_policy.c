// SPDX-License-Identifier: MIT
/*
 * The controller's re-encoding policy (user/policy.c), fed the records the
 * capture sees (edges, epochs, samples) and asked when it would request an
 * epoch: for new edges, for pushed edges in many samples, and for a back
 * edge of the last epoch met in many samples, once, never for a function's
 * call to itself or a call that stays pushed; never while a request waits
 * for its epoch, nor sooner than its pause allows.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "dacce_events.h"
#include "graph.h"
#include "policy.h"

#define PID 777
#define MS (1000ull * 1000)

static struct dacce_policy *policy;
static struct dacce_control_hint hints[DACCE_CONTROL_MAX_HINTS];
static uint32_t n_hints;

static void setup(void)
{
	struct dacce_policy_settings s;

	dacce_policy_settings_default(&s);
	ck_assert_int_eq(dacce_policy_new(&s, &policy), 0);
}

static void teardown(void)
{
	dacce_policy_free(policy);
	policy = NULL;
}

static void edge(uint32_t e, uint32_t caller, uint32_t callee, uint8_t flags)
{
	struct dacce_ev_edge ev = { .h = { .type = DACCE_EV_EDGE, .tgid = PID },
				    .edge = e, .caller = caller, .callee = callee,
				    .kind = DACCE_SITE_DIRECT, .flags = flags };

	dacce_policy_record(policy, &ev, sizeof(ev));
}

static void epoch(uint32_t n_edges, int64_t pause_ns)
{
	struct dacce_ev_epoch ev = { .h = { .type = DACCE_EV_EPOCH, .tgid = PID },
				     .epoch = 1, .n_edges = n_edges, .pause_ns = pause_ns };

	dacce_policy_record(policy, &ev, sizeof(ev));
}

/* A sample whose ccStack holds the edges given (-1 ends the list). */
static void sample(int first, ...)
{
	static struct dacce_ev_sample ev;
	va_list ap;
	uint32_t n = 0;

	memset(&ev, 0, sizeof(ev));
	ev.h = (struct dacce_ev_header){ .type = DACCE_EV_SAMPLE, .tgid = PID };
	ev.ctx.flags = DACCE_CTX_VALID;
	va_start(ap, first);
	for (int e = first; e >= 0; e = va_arg(ap, int))
		ev.ctx.entries[n++].edge = (uint32_t)e;
	va_end(ap);
	ev.ctx.n_entries = ev.ctx.depth = n;
	dacce_policy_record(policy, &ev, sizeof(ev));
}

static void samples(unsigned count, int e)
{
	for (unsigned i = 0; i < count; i++)
		sample(e, -1);
}

static int due(uint64_t now_ns)
{
	return dacce_policy_due(policy, PID, now_ns, hints, &n_hints);
}

/* Five edges, 0..4, all encodable; edge 3 a call of function 3 to itself; an epoch took them in. */
static void five_edges_encoded(void)
{
	edge(0, 0, 1, 0);
	edge(1, 1, 2, 0);
	edge(2, 2, 1, 0); /* closes the cycle 1 -> 2 -> 1 */
	edge(3, 3, 3, 0);
	edge(4, 1, 4, DACCE_EDGE_PINNED);
	epoch(5, 1 * MS);
}

START_TEST(test_unknown_process)
{
	ck_assert_int_eq(dacce_policy_due(policy, 1, 0, hints, &n_hints), -ENOENT);
}
END_TEST

START_TEST(test_new_edges_ask_for_an_epoch)
{
	for (uint32_t e = 0; e < 31; e++)
		edge(e, e, e + 1, 0);
	ck_assert_int_eq(due(1000 * MS), 0);
	edge(31, 31, 32, 0);
	ck_assert_int_eq(due(1000 * MS), 1);
	dacce_policy_requested(policy, PID, 1000 * MS, hints, n_hints);
	ck_assert_uint_eq(dacce_policy_requests(policy), 1);
	/* Waiting for its epoch: nothing more, however many edges come. */
	for (uint32_t e = 32; e < 100; e++)
		edge(e, e, e + 1, 0);
	ck_assert_int_eq(due(1050 * MS), 0);
	epoch(100, 10 * MS);
	/* Its pause of 10 ms buys quiet for 200 ms from the request. */
	for (uint32_t e = 100; e < 140; e++)
		edge(e, e, e + 1, 0);
	ck_assert_int_eq(due(1150 * MS), 0);
	ck_assert_int_eq(due(1250 * MS), 1);
}
END_TEST

START_TEST(test_hot_back_edge_is_asked_for_once)
{
	five_edges_encoded();
	/* Back edge 2 on the ccStack in 10 of 40 samples (5 % is enough). */
	samples(30, -1);
	samples(10, 2);
	ck_assert_int_eq(due(1000 * MS), 1);
	ck_assert_uint_ge(n_hints, 1);
	ck_assert_uint_eq(hints[0].edge, 2);
	ck_assert_uint_eq(hints[0].samples, 10);
	dacce_policy_requested(policy, PID, 1000 * MS, hints, n_hints);
	epoch(5, 1 * MS);
	/* Still back after that epoch: not asked for again. */
	samples(30, 2);
	ck_assert_int_eq(due(2000 * MS), 0);
}
END_TEST

START_TEST(test_back_edge_needs_its_share_of_samples)
{
	five_edges_encoded();
	samples(10, 2); /* not judged on 10 samples */
	ck_assert_int_eq(due(1000 * MS), 0);
	samples(250, -1); /* 10 of 260: under 5 % */
	ck_assert_int_eq(due(1000 * MS), 0);
	samples(4, 2); /* 14 of 264 */
	ck_assert_int_eq(due(1000 * MS), 1);
}
END_TEST

START_TEST(test_self_calls_and_pinned_calls_are_never_asked_for)
{
	five_edges_encoded();
	samples(40, 3); /* a call to itself */
	samples(40, 4); /* pinned: stays pushed in every epoch */
	ck_assert_int_eq(due(1000 * MS), 0);
}
END_TEST

START_TEST(test_new_edge_pushed_in_samples)
{
	five_edges_encoded();
	edge(5, 4, 5, 0);
	samples(19, -1);
	sample(0, 5, -1);
	ck_assert_int_eq(due(1000 * MS), 1); /* 1 of 20 samples: 5 % */
	/* The new edge first, then the encoded one below it on the ccStack. */
	ck_assert_uint_eq(n_hints, 2);
	ck_assert_uint_eq(hints[0].edge, 5);
	ck_assert_uint_eq(hints[1].edge, 0);
}
END_TEST

START_TEST(test_exec_forgets_the_process)
{
	struct dacce_ev_header exec_ev = { .type = DACCE_EV_EXEC, .tgid = PID };

	five_edges_encoded();
	samples(40, 2);
	dacce_policy_record(policy, &exec_ev, sizeof(exec_ev));
	ck_assert_int_eq(due(1000 * MS), 0);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("user_policy");
	TCase *tc = tcase_create("policy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_unknown_process);
	tcase_add_test(tc, test_new_edges_ask_for_an_epoch);
	tcase_add_test(tc, test_hot_back_edge_is_asked_for_once);
	tcase_add_test(tc, test_back_edge_needs_its_share_of_samples);
	tcase_add_test(tc, test_self_calls_and_pinned_calls_are_never_asked_for);
	tcase_add_test(tc, test_new_edge_pushed_in_samples);
	tcase_add_test(tc, test_exec_forgets_the_process);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(policy_suite());
}
