// SPDX-License-Identifier: MIT
// C++ without exceptions: templates instantiated into chains of distinct functions, variadic
// templates, CRTP, lambdas (capturing, generic, recursive through std::function), a table of
// std::function (a call through the invoker the library headers generate), std::sort with a
// lambda comparator and with a function pointer, std::accumulate.  Everything the headers
// instantiate is the program's own code: every context is exact, comparators' too.
#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

// A chain of 16 distinct functions: Level<16>::run calls Level<15>::run, ... down to Level<0>.
template <int N> struct Level {
	NOINLINE static int run(int x)
	{
		int r = Level<N - 1>::run(x + N);

		return r + N + sink;
	}
};

template <> struct Level<0> {
	NOINLINE static int run(int x)
	{
		if (x >= 136) /* 16 + 15 + ... + 1 added on the way down */
			probe("template-chain-bottom");
		return x;
	}
};

// Variadic recursion: one instantiation per remaining argument count.
NOINLINE static int sum_all() { probe("variadic-bottom"); return 0; }

template <typename T, typename... Rest> NOINLINE int sum_all(T first, Rest... rest)
{
	return static_cast<int>(first) + sum_all(rest...) + sink;
}

// CRTP: static dispatch into the derived class.
template <typename Derived> struct Counter {
	NOINLINE int step(int x) { return static_cast<Derived *>(this)->advance(x) + 1; }
};

struct ByTwo : Counter<ByTwo> {
	NOINLINE int advance(int x)
	{
		if (x == 10)
			probe("crtp-by-two");
		return x + 2;
	}
};

struct ByThree : Counter<ByThree> {
	NOINLINE int advance(int x)
	{
		if (x == 9)
			probe("crtp-by-three");
		return x + 3;
	}
};

// A template taking any callable: one instantiation per lambda type.
template <typename F> NOINLINE int apply_n(F f, int n)
{
	int r = 0;

	for (int i = 0; i < n; i++)
		r += f(i);
	return r;
}

NOINLINE static int helper(int x)
{
	if (x == 4)
		probe("lambda-helper");
	return x * 3;
}

NOINLINE static bool by_value_desc(int a, int b) { return a > b; }

NOINLINE static int lambdas()
{
	int captured = 5, r = 0;
	auto plain = [](int x) { return helper(x) + 1; };
	auto capturing = [&captured](int x) {
		if (x == 2)
			probe("lambda-capturing");
		return x + captured++;
	};
	auto generic = [](auto x) { return helper(static_cast<int>(x)) * 2; };

	r += apply_n(plain, 6);
	r += apply_n(capturing, 4);
	r += apply_n(generic, 5);
	r += apply_n([&generic](int x) { return generic(x * 0.5); }, 3); // generic instantiated for double
	return r + captured;
}

NOINLINE static int functions()
{
	std::vector<std::function<int(int)>> table;
	std::function<int(int)> fib = [&fib](int n) {
		if (n == 1 && sink == 0)
			probe("std-function-fib-bottom");
		return n < 2 ? n : fib(n - 1) + fib(n - 2);
	};
	int r = 0;

	table.push_back([](int x) { return helper(x); });
	table.push_back(helper);
	table.push_back([&r](int x) {
		if (x == 3)
			probe("std-function-capturing");
		return x + r;
	});
	table.push_back(std::bind(helper, std::placeholders::_1));
	for (int round = 0; round < 5; round++)
		for (const auto &f : table)
			r += f(round);
	r += fib(8);
	probe("after-std-function");
	return r;
}

NOINLINE static int sorting()
{
	std::vector<int> values;
	int compares = 0;

	for (int i = 0; i < 200; i++)
		values.push_back((i * 7919) % 1009);
	std::sort(values.begin(), values.end(), [&compares](int a, int b) {
		if (++compares % 500 == 1)
			probe("sort-lambda-compare");
		return a < b;
	});
	probe("after-sort-lambda");
	std::sort(values.begin(), values.end(), by_value_desc); // through a function pointer
	probe("after-sort-pointer");
	return values.front() + values.back() +
	       std::accumulate(values.begin(), values.end(), 0, [](int acc, int v) {
		       if (acc == 0)
			       probe("accumulate-lambda");
		       return acc + v % 10;
	       });
}

int main()
{
	ByTwo two;
	ByThree three;
	int r = 0;

	for (int x = 0; x < 14; x += 7)
		r += Level<16>::run(x);
	r += sum_all(1, 2.5, 3L, 'a', 5u);
	for (int x = 0; x < 12; x++)
		r += two.step(x) + three.step(x);
	r += lambdas();
	r += functions();
	r += sorting();
	probe("main");
	printf("result %d\n", r);
	return 0;
}
