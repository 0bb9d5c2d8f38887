/* SPDX-License-Identifier: MIT */
/*
 * Hand-made profiles for the report formats, shared by the Check suite
 * (tests/check_user_report.c) and the sample writer (tests/report_sample.c).
 * Stacks are outermost frame first, as in user/rprofile.h.
 */
#ifndef DACCE_TESTS_REPORT_PROFILES_H
#define DACCE_TESTS_REPORT_PROFILES_H

#include "rprofile.h"

#define APP "/usr/bin/app"
#define APP_ID "aabbccdd00112233"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define LIBC_ID "44556677"
#define LIBX "/opt/x/libx.so"

/* A frame: function, module, build id, address, file, line, inlined, kind. */
#define FRAME(fn, mod, id, addr, file, line, inl, kind) \
	{ fn, mod, id, addr, file, line, inl, DACCE_RFRAME_##kind }

/* Frames are interned: one object per distinct frame, shared by stacks. */
static const struct dacce_rframe f_main_compute = FRAME("main", APP, APP_ID, 0x11c0, "app.c", 40, 0, CALL);
static const struct dacce_rframe f_main_fib = FRAME("main", APP, APP_ID, 0x11b0, "app.c", 38, 0, CALL);
static const struct dacce_rframe f_main_workers = FRAME("main", APP, APP_ID, 0x11d0, "app.c", 42, 0, CALL);
static const struct dacce_rframe f_compute = FRAME("compute", APP, APP_ID, 0x1180, "app.c", 30, 0, CALL);
static const struct dacce_rframe f_compute_pc = FRAME("compute", APP, APP_ID, 0x1188, "app.c", 31, 0, CALL);
static const struct dacce_rframe f_add = FRAME("add", APP, APP_ID, 0x1180, "app.c", 12, 1, CALL);
static const struct dacce_rframe f_memcpy = FRAME("memcpy", LIBC, LIBC_ID, 0x9a0c0, NULL, 0, 0, LEAF);
static const struct dacce_rframe f_fib_call = FRAME("fib", APP, APP_ID, 0x1210, "fib.c", 7, 0, CALL);
static const struct dacce_rframe f_fib_pc = FRAME("fib", APP, APP_ID, 0x1204, "fib.c", 5, 0, CALL);
static const struct dacce_rframe f_start_workers = FRAME("start_workers", APP, APP_ID, 0x1250, "app.c", 50, 0, CALL);
static const struct dacce_rframe f_worker = FRAME("worker", APP, APP_ID, 0x1300, "app.c", 60, 0, THREAD_ROOT);
static const struct dacce_rframe f_work = FRAME("work", APP, APP_ID, 0x1340, "app.c", 70, 0, TAIL);
static const struct dacce_rframe f_work_pc = FRAME("work", APP, APP_ID, 0x1348, "app.c", 71, 0, TAIL);
static const struct dacce_rframe f_tmpl = FRAME(
	"void Table<int, std::less<int> >::run(char const*) [with T = int; U = std::vector<char>]",
	APP, APP_ID, 0x1400, "table.hpp", 9, 0, CALL);
static const struct dacce_rframe f_on_alarm = FRAME("on_alarm", APP, APP_ID, 0x1500, "app.c", 80, 0, SIGNAL_ROOT);
static const struct dacce_rframe f_truncated = FRAME("[truncated]", "[unknown]", "", 0, NULL, 0, 0, TRUNCATED);
static const struct dacce_rframe f_deep = FRAME("deep", APP, APP_ID, 0x1600, "app.c", 90, 0, CALL);
static const struct dacce_rframe f_libx = FRAME("libx.so+0x4321", LIBX, "", 0x4321, NULL, 0, 0, LEAF);

#define STACK(tid, comm, count, ...)                                                              \
	{ (const struct dacce_rframe *[]){ __VA_ARGS__ },                                         \
	  sizeof((const struct dacce_rframe *[]){ __VA_ARGS__ }) / sizeof(struct dacce_rframe *), \
	  tid, comm, count }

/*
 * Two threads: recursion (fib), an inlined frame (add in compute), a libc
 * leaf, a thread root entering by tail call, a C++ name with ';', '<>' and
 * spaces, a signal handler, a truncated context, the same frames in both
 * threads, and a stack without samples.
 */
static struct dacce_rstack mixed_stacks[] = {
	STACK(101, "app", 5, &f_main_compute, &f_compute, &f_add, &f_memcpy),
	STACK(101, "app", 3, &f_main_compute, &f_compute_pc),
	STACK(101, "app", 4, &f_main_fib, &f_fib_call, &f_fib_call, &f_fib_pc),
	STACK(101, "app", 2, &f_main_fib, &f_fib_call, &f_fib_pc),
	STACK(102, "worker", 6, &f_main_workers, &f_start_workers, &f_worker, &f_work, &f_tmpl),
	STACK(102, "worker", 1, &f_main_workers, &f_start_workers, &f_worker, &f_work_pc),
	STACK(101, "app", 1, &f_main_compute, &f_compute_pc, &f_on_alarm),
	STACK(102, "worker", 2, &f_truncated, &f_deep, &f_libx),
	STACK(102, "worker", 1, &f_main_compute, &f_compute, &f_add, &f_memcpy),
	STACK(101, "app", 0, &f_main_compute, &f_deep),
};

static inline struct dacce_rprofile mixed_profile(void)
{
	return (struct dacce_rprofile){
		.stacks = mixed_stacks,
		.n_stacks = sizeof(mixed_stacks) / sizeof(mixed_stacks[0]),
		.event = "cpu-clock",
		.period = 1000000,
		.period_unit = "nanoseconds",
		.total_samples = 27, /* 25 in stacks, 2 without a usable context */
		.lost_samples = 3,
		.duration_ns = 2500000000ULL,
	};
}

#endif
