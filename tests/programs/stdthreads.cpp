// SPDX-License-Identifier: MIT
// flags: -std=gnu++20
/*
 * std::thread and std::jthread.  libstdc++ starts their threads with a
 * routine of its own that calls the program's through the state's virtual
 * _M_run; libstdc++ is left alone, so every context inside such a thread
 * read partial until _M_start_thread was interposed (runtime/std_thread.c):
 * the program's routine is now the thread's root, as a pthread start
 * routine is.  Threads run a lambda, a function with arguments (one by
 * reference), a member function; one starts another; one throws through
 * patched frames and catches; one leaves by pthread_exit from three calls
 * deep (the unwinding passes the runtime's stand-in); four run at once
 * without probing; a lambda captures an object whose destructor makes calls
 * when libstdc++ destroys the state after the routine returned.
 */
#include <pthread.h>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static std::atomic<long> destroyed_sum{ 0 };

NOINLINE static int depth(int n)
{
	if (n == 0) {
		probe("depth");
		return 0;
	}
	return depth(n - 1) + 1 + sink;
}

NOINLINE static int count(int n)
{
	return n == 0 ? 0 : count(n - 1) + 1 + sink;
}

static int (*const counting)(int) = count;

NOINLINE static void add_depth(int n, int &out)
{
	out = depth(n);
}

struct Worker {
	int base;
	NOINLINE int run(int extra) const
	{
		return depth(base + extra);
	}
};

/* Captured by value: libstdc++ destroys it with the thread's state. */
struct Counted {
	int n;
	explicit Counted(int value) : n(value) {}
	Counted(const Counted &other) : n(other.n) {}
	~Counted()
	{
		long sum = 0;

		for (int i = 0; i < 20; i++)
			sum += counting(i % 4);
		/*
		 * sum grows with sink, which the jthreads bump racing each other:
		 * only whether the calls ran (sum at least 30) goes in the output.
		 */
		destroyed_sum += n + (sum >= 30);
	}
};

NOINLINE static void throwing(int n)
{
	if (n == 0)
		throw std::runtime_error("deep");
	throwing(n - 1);
	sink = sink + 1;
}

NOINLINE static void leave(int n)
{
	if (n == 0) {
		probe("leaving");
		pthread_exit(nullptr);
	}
	leave(n - 1);
	sink = sink + 1;
}

int main()
{
	int out = -1, result = -1;

	probe("main");
	std::thread([] { depth(3); }).join();
	std::thread(add_depth, 2, std::ref(out)).join();
	Worker worker{ 1 };
	std::thread([&worker, &result] { result = worker.run(1); }).join();
	std::thread([] {
		probe("parent");
		std::thread([] { depth(1); }).join();
	}).join();
	std::thread([] {
		try {
			throwing(4);
		} catch (const std::runtime_error &) {
			probe("caught");
		}
	}).join();
	std::thread([] { leave(3); }).join();
	{
		std::vector<std::jthread> together;

		for (int i = 0; i < 4; i++)
			together.emplace_back([i] { sink = sink + counting(5 + i); });
	}
	Counted counted(7);
	std::thread([counted] { sink = sink + counting(counted.n); }).join();
	std::jthread([](std::stop_token) { depth(2); }).join();
	probe("joined");
	printf("out %d, result %d, destroyed %ld\n", out, result, destroyed_sum.load());
	return 0;
}
