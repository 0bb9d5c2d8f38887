// SPDX-License-Identifier: MIT
/*
 * Program code that runs after a thread's start routine returned: C++
 * thread_local destructors (glibc's __call_tls_dtors) and pthread key
 * destructors, both called by libc at the thread's end.  The runtime freed
 * a thread's stacks when its routine returned, and the first pushed call of
 * such a destructor killed the program (runtime/thread_stacks.c).  Threads
 * start one after another (the next one gets the same TLS block, and takes
 * the stacks back) and three at once; each destructor recurses through a
 * pointer, calls a virtual method and sorts with a comparator.  Their
 * results are checked, not probed: a destructor called by libc reads
 * partial under the runtime, and so does a std::thread's routine (libstdc++,
 * left alone, calls it).
 */
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static std::atomic<long> ended_sum{ 0 };
static std::atomic<int> ended{ 0 };
static pthread_key_t key;

NOINLINE static int count(int n)
{
	return n == 0 ? 0 : count(n - 1) + 1 + sink;
}

static int (*const counting)(int) = count;

struct Shape {
	virtual ~Shape() = default;
	virtual int corners() const = 0;
};

struct Square : Shape {
	int corners() const override { return 4 + sink; }
};

NOINLINE static long end_work(long seed)
{
	std::vector<int> values{ 5, 3, 9, 1 };
	Square square;
	const Shape &shape = square;
	long sum = seed;

	for (int i = 0; i < 40; i++)
		sum += counting(i % 6) == i % 6 ? 1 : -1000;
	std::sort(values.begin(), values.end(), [](int a, int b) { return a < b; });
	return sum + values.front() * 100 + shape.corners();
}

struct Tracker {
	long seed = 0;
	~Tracker()
	{
		ended_sum += end_work(seed);
		ended++;
	}
};

static thread_local Tracker tracker;

static void on_key_end(void *value)
{
	ended_sum += end_work((long)(intptr_t)value * 1000);
	ended++;
}

NOINLINE static int work(int n)
{
	tracker.seed = n;
	pthread_setspecific(key, (void *)(intptr_t)n);
	return counting(n) * 3;
}

int main()
{
	std::vector<std::thread> together;
	std::atomic<int> total{ 0 };

	probe("main");
	pthread_key_create(&key, on_key_end);
	for (int i = 1; i <= 4; i++) {
		std::thread one([&total, i] { total += work(i); });
		one.join();
	}
	for (int i = 5; i <= 7; i++)
		together.emplace_back([&total, i] { total += counting(i) * 3; tracker.seed = i; });
	for (auto &t : together)
		t.join();
	probe("joined");
	printf("total %d, destructors %d, their sum %ld\n", total.load(), ended.load(),
	       ended_sum.load());
	return 0;
}
