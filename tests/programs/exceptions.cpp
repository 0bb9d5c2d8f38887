// SPDX-License-Identifier: MIT
// C++ exceptions through patched frames.  Each probe (in destructors run by the unwinding, in
// catch blocks, and in ordinary calls made after a catch) must read the native context.
//   - a throw through 10 frames of distinct functions, each with a destructor to run;
//   - a rethrow (`throw;`) from a catch half way, caught further out;
//   - a throw through frames reached by a virtual call, a function pointer and std::function;
//   - a throw out of a std::sort comparator and out of a qsort comparator (through libc's frames);
//   - an exception thrown and caught inside a destructor that runs during another unwinding;
//   - std::exception_ptr rethrown with std::rethrow_exception;
//   - a throw from 20,000 frames of recursion deep, caught at the top;
//   - tail calls on the way (a frame that left by a tail call is unwound through the tail stub);
//   - 4 threads throwing through their first calls at once;
//   - pthread_exit from 5 frames deep: the destructors run, as natively;
//   - an exception nothing catches (in a fork child): std::terminate, as natively.
#include <algorithm>
#include <exception>
#include <functional>
#include <stdexcept>
#include <vector>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

struct Failure : std::runtime_error {
	int code;
	Failure(const char *what, int c) : std::runtime_error(what), code(c) {}
};

// Runs a probe when a frame holding it goes, by return or by unwinding.
struct Guard {
	const char *tag;
	explicit Guard(const char *t) : tag(t) {}
	NOINLINE ~Guard() { probe(tag); }
};

// ------------------------------------------------------------ 10 frames, each with a destructor
NOINLINE static void thrower(int depth)
{
	Guard g("ten-dtor-0");

	if (depth >= 0)
		throw Failure("ten", 10);
	sink++;
}

#define FRAME(n, next, tag)                \
	NOINLINE static void n(int depth)  \
	{                                  \
		Guard g(tag);              \
		next(depth + 1);           \
		sink++;                    \
	}
FRAME(frame1, thrower, "ten-dtor-1")
FRAME(frame2, frame1, "ten-dtor-2")
FRAME(frame3, frame2, "ten-dtor-3")
FRAME(frame4, frame3, "ten-dtor-4")
FRAME(frame5, frame4, "ten-dtor-5")
FRAME(frame6, frame5, "ten-dtor-6")
FRAME(frame7, frame6, "ten-dtor-7")
FRAME(frame8, frame7, "ten-dtor-8")
FRAME(frame9, frame8, "ten-dtor-9")

NOINLINE static void after_catch(const char *tag) { probe(tag); }

NOINLINE static void ten_frames(void)
{
	for (int round = 0; round < 3; round++) {
		try {
			frame9(0);
		} catch (const Failure &f) {
			probe("ten-caught");
			sink += f.code;
		}
		after_catch("ten-after");
	}
}

// ------------------------------------------------------------ rethrow half way
NOINLINE static void rethrow_inner(void)
{
	Guard g("rethrow-dtor-inner");

	throw Failure("inner", 1);
}

NOINLINE static void rethrow_middle(void)
{
	Guard g("rethrow-dtor-middle");

	try {
		rethrow_inner();
	} catch (const Failure &) {
		probe("rethrow-middle-caught");
		throw;
	}
}

NOINLINE static void rethrow_outer(void)
{
	try {
		rethrow_middle();
	} catch (const std::exception &e) {
		probe("rethrow-outer-caught");
		sink += (int)e.what()[0];
	}
	after_catch("rethrow-after");
}

// ------------------------------------------------------------ indirect frames
struct Shape {
	virtual ~Shape() {}
	virtual int area(int x) = 0;
};

struct Square : Shape {
	NOINLINE int area(int x) override
	{
		Guard g("virtual-dtor");

		if (x > 2)
			throw Failure("virtual", x);
		return x * x;
	}
};

NOINLINE static int through_pointer(Shape *s, int x) { return s->area(x) + 1; }

NOINLINE static int pointer_target(int x)
{
	Square sq;

	return through_pointer(&sq, x + 3);
}

NOINLINE static void indirect_frames(void)
{
	int (*volatile fp)(int) = pointer_target;
	std::function<int(int)> fn = [fp](int x) { return fp(x) + 2; };

	try {
		sink += fn(1);
	} catch (const Failure &f) {
		probe("indirect-caught");
	}
	after_catch("indirect-after");
}

// ------------------------------------------------------------ comparators
NOINLINE static bool sort_less(int a, int b)
{
	if (a == 7 && b != 7)
		throw Failure("sort", a);
	return a < b;
}

NOINLINE static int qsort_compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (x == 5)
		throw Failure("qsort", x);
	return (x > y) - (x < y);
}

NOINLINE static void comparators(void)
{
	std::vector<int> v = { 9, 3, 7, 1, 8, 2, 6, 4, 5, 0 };
	int a[] = { 3, 5, 1, 4, 2 };

	try {
		std::sort(v.begin(), v.end(), sort_less);
	} catch (const Failure &f) {
		probe("sort-caught");
	}
	try {
		qsort(a, 5, sizeof(a[0]), qsort_compare);
	} catch (const Failure &f) {
		probe("qsort-caught");
	}
	after_catch("comparators-after");
}

// ------------------------------------------------------------ a throw inside a destructor's unwinding
struct Careful {
	NOINLINE ~Careful()
	{
		try {
			throw Failure("in-dtor", 2);
		} catch (const Failure &) {
			probe("dtor-inner-caught");
		}
		probe("dtor-after-inner");
	}
};

NOINLINE static void careful_thrower(void)
{
	Careful c;

	throw Failure("outer", 3);
}

NOINLINE static void nested_in_destructor(void)
{
	try {
		careful_thrower();
	} catch (const Failure &f) {
		probe("dtor-outer-caught");
	}
	after_catch("dtor-after");
}

// ------------------------------------------------------------ exception_ptr
NOINLINE static std::exception_ptr capture(void)
{
	try {
		throw Failure("captured", 4);
	} catch (...) {
		return std::current_exception();
	}
}

NOINLINE static void rethrow_captured(std::exception_ptr p)
{
	Guard g("captured-dtor");

	std::rethrow_exception(p);
}

NOINLINE static void exception_pointers(void)
{
	std::exception_ptr p = capture();

	try {
		rethrow_captured(p);
	} catch (const Failure &f) {
		probe("captured-caught");
	}
}

// ------------------------------------------------------------ deep recursion
NOINLINE static int deep(int n)
{
	if (n == 0)
		throw Failure("deep", 0);
	return deep(n - 1) + 1 + sink;
}

NOINLINE static void deep_throw(void)
{
	try {
		sink += deep(20000);
	} catch (const Failure &f) {
		probe("deep-caught");
	}
	after_catch("deep-after");
}

// ------------------------------------------------------------ tail calls on the way
NOINLINE static int tail_bottom(int x)
{
	Guard g("tail-dtor");

	if (x > 0)
		throw Failure("tail", x);
	return x;
}

// The call to tail_bottom is a tail call at -O2 (nothing to do after it).
NOINLINE static int tail_middle(int x) { return tail_bottom(x + sink); }

NOINLINE static int tail_top(int x) { return tail_middle(x) + 1; }

NOINLINE static void tail_calls(void)
{
	try {
		sink += tail_top(3);
	} catch (const Failure &f) {
		probe("tail-caught");
	}
	after_catch("tail-after");
}

// ------------------------------------------------------------ threads
NOINLINE static void thread_leaf(int i)
{
	Guard g("thread-dtor");

	if (i >= 0)
		throw Failure("thread", i);
}

NOINLINE static void thread_middle(int i) { thread_leaf(i); sink++; }

static void *thread_main(void *arg)
{
	for (int k = 0; k < 20; k++) {
		try {
			thread_middle((int)(intptr_t)arg);
		} catch (const Failure &f) {
			if (k == 19)
				probe("thread-caught");
		}
	}
	return NULL;
}

NOINLINE static void threads(void)
{
	pthread_t t[4];

	for (intptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

// ------------------------------------------------------------ pthread_exit runs destructors
NOINLINE static void exit_deep(int n)
{
	Guard g("exit-dtor");

	if (n == 0)
		pthread_exit(NULL);
	exit_deep(n - 1);
	sink++;
}

static void *exiting_thread(void *)
{
	exit_deep(4);
	return NULL;
}

NOINLINE static void thread_exit(void)
{
	pthread_t t;

	pthread_create(&t, NULL, exiting_thread, NULL);
	pthread_join(t, NULL);
	puts("exit-joined");
}

// ------------------------------------------------------------ nothing catches it
NOINLINE static void uncaught(void)
{
	Guard g("uncaught-dtor"); // never runs: no handler, so no cleanup phase

	throw Failure("uncaught", 5);
}

NOINLINE static void terminate_in_child(void)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		std::set_terminate([] {
			probe("terminate-handler");
			fflush(stdout);
			_exit(3);
		});
		uncaught();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	printf("child: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
}

int main(void)
{
	ten_frames();
	rethrow_outer();
	indirect_frames();
	comparators();
	nested_in_destructor();
	exception_pointers();
	deep_throw();
	tail_calls();
	threads();
	thread_exit();
	terminate_in_child();
	probe("main-end");
	return 0;
}
