// SPDX-License-Identifier: MIT
// The C++ library libthrow.cpp is linked against (a DT_NEEDED library, loaded at start, which the
// runtime instruments as it does the program).  Exceptions through its frames, each frame with a
// destructor that probes: a throw from 10 frames of recursion deep, callbacks into the program
// that throw from under its frames, a catch half way and `throw;`, a catch that returns normally,
// a virtual method, std::function, and a thread it starts in which throws cross its frames.
#include <pthread.h>

#include "libthrow.h"

static volatile int lib_sink;

void lib_set_round(int round)
{
	lt_round = round;
}

// ------------------------------------------------------------ a throw from deep in the library
NOINLINE static int lib_deep(int n, int armed)
{
	Guard g("lib-deep-dtor", n);

	if (n == 0) {
		lt_probe("lib-deep-bottom", -1);
		if (armed)
			throw LtError("lib-deep", 7);
		return lib_sink;
	}
	return lib_deep(n - 1, armed) + 1 + lib_sink;
}

NOINLINE int lib_deep_throw(int depth, int armed)
{
	Guard g("lib-deep-entry-dtor", depth);

	return lib_deep(depth, armed) + lib_sink;
}

// ------------------------------------------------------------ a program callback from under library frames
NOINLINE static int through_down(lt_fn f, int n, int x)
{
	Guard g("lib-through-dtor", n);

	if (n == 0)
		return f(x) + lib_sink;
	return through_down(f, n - 1, x) + 1 + lib_sink;
}

NOINLINE int lib_through(lt_fn f, int depth, int x)
{
	int r = through_down(f, depth, x);

	lt_probe("lib-through-returned", -1); // only when f did not throw
	return r + lib_sink;
}

// ------------------------------------------------------------ caught half way, rethrown
NOINLINE static int rethrow_down(lt_fn f, int n)
{
	Guard g("lib-rethrow-inner-dtor", n);

	if (n == 0) {
		if (f)
			return f(n) + lib_sink;
		throw LtError("lib-rethrow", 3);
	}
	return rethrow_down(f, n - 1) + 1 + lib_sink;
}

NOINLINE static int rethrow_middle(lt_fn f, int depth)
{
	Guard g("lib-rethrow-middle-dtor", depth);

	try {
		return rethrow_down(f, depth) + lib_sink;
	} catch (const LtError &e) {
		lt_probe(f ? "lib-rethrow-caught-callback" : "lib-rethrow-caught", e.code);
		throw;
	}
}

NOINLINE int lib_rethrow(lt_fn f, int depth)
{
	Guard g("lib-rethrow-outer-dtor", depth);

	return rethrow_middle(f, depth) + lib_sink;
}

// ------------------------------------------------------------ caught in the library, which returns
NOINLINE static int absorb_down(lt_fn f, int n, int x)
{
	Guard g("lib-absorb-dtor", n);

	if (n == 0)
		return f(x) + lib_sink;
	return absorb_down(f, n - 1, x) + 1 + lib_sink;
}

NOINLINE static int absorb_helper(int x)
{
	lt_probe("lib-absorb-helper", x);
	return x + 5 + lib_sink;
}

NOINLINE int lib_absorb(lt_fn f, int x)
{
	int r = 0;

	try {
		r = absorb_down(f, 3, x);
	} catch (const LtError &e) {
		lt_probe("lib-absorb-caught", e.code);
		r = e.code;
	}
	// The context after the catch, and of a call made from there.
	lt_probe("lib-absorb-after", -1);
	r += absorb_helper(r);
	return r + lib_sink;
}

// ------------------------------------------------------------ a virtual method
struct LibSquare : LtShape {
	int area(int x) override;
	int visit(lt_fn f, int x) override;
};

LtShape::~LtShape() {}

NOINLINE static int shape_check(int x)
{
	Guard g("lib-shape-check-dtor", x);

	if (x > 2)
		throw LtError("lib-area", x);
	lt_probe("lib-shape-check", x);
	return x * x + lib_sink;
}

NOINLINE int LibSquare::area(int x)
{
	Guard g("lib-area-dtor", x);

	return shape_check(x) + lib_sink;
}

NOINLINE int LibSquare::visit(lt_fn f, int x)
{
	Guard g("lib-visit-dtor", x);

	return f(x) + lib_sink;
}

LtShape *lib_shape(void)
{
	return new LibSquare();
}

// ------------------------------------------------------------ std::function, invoked here
NOINLINE static int invoke_down(const std::function<int(int)> &f, int n, int x)
{
	Guard g("lib-invoke-dtor", n);

	if (n == 0)
		return f(x) + lib_sink;
	return invoke_down(f, n - 1, x) + 1 + lib_sink;
}

NOINLINE int lib_invoke(const std::function<int(int)> &f, int depth, int x)
{
	int r = invoke_down(f, depth, x);

	lt_probe("lib-invoke-returned", x); // only when f did not throw
	return r + lib_sink;
}

// ------------------------------------------------------------ a thread of the library
struct lib_job {
	lt_fn thrower;
	lt_fn catcher;
	int x;
	int r;
};

NOINLINE static int thread_down(lt_fn f, int n, int x)
{
	Guard g("lib-thread-dtor", n);

	if (n == 0)
		return f(x) + lib_sink;
	return thread_down(f, n - 1, x) + 1 + lib_sink;
}

NOINLINE static int thread_work(struct lib_job *job)
{
	int r = 0;

	try {
		r = thread_down(job->thrower, 3, job->x);
	} catch (const LtError &e) {
		lt_probe("lib-thread-caught", e.code);
		r = e.code;
	}
	lt_probe("lib-thread-after-catch", -1);
	return r + lib_sink;
}

// The thread's start routine: a root of its own contexts, in the library.
static void *lib_thread(void *arg)
{
	struct lib_job *job = (struct lib_job *)arg;
	int r;

	lt_probe("lib-thread-start", -1);
	r = thread_work(job);
	r += job->catcher(job->x); // the program catches a throw from the library, on this thread
	lt_probe("lib-thread-end", -1);
	job->r = r;
	return NULL;
}

NOINLINE int lib_spawn(lt_fn thrower, lt_fn catcher, int x)
{
	struct lib_job job = { thrower, catcher, x, 0 };
	pthread_t thread;

	if (pthread_create(&thread, NULL, lib_thread, &job) != 0)
		return -1;
	pthread_join(thread, NULL);
	lt_probe("lib-after-join", -1);
	return job.r + lib_sink;
}

// ------------------------------------------------------------ calls that make edges hot
NOINLINE int lib_spin(int n)
{
	return n <= 0 ? lib_sink : lib_spin(n - 1) + 1 + lib_sink;
}
