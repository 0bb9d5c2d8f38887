// SPDX-License-Identifier: MIT
// A C++ workload for tests/e2e.sh: virtual calls, a template, std::function and std::sort
// with a comparator, so a report must show demangled names in complete contexts.  Built
// with -fno-exceptions: programs whose frames take part in unwinding are left alone by the
// runtime today (docs/runtime.md).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

namespace geo {

struct Shape {
	virtual ~Shape() = default;
	virtual double area() const = 0;
};

struct Circle : Shape {
	double r;
	explicit Circle(double radius) : r(radius) {}
	__attribute__((noinline)) double area() const override
	{
		double a = 0;
		for (int i = 0; i < 2000; i++)
			a += 3.14159 * r * r / (i + 1);
		return a;
	}
};

struct Square : Shape {
	double s;
	explicit Square(double side) : s(side) {}
	__attribute__((noinline)) double area() const override
	{
		double a = 0;
		for (int i = 0; i < 2000; i++)
			a += s * s / (i + 2);
		return a;
	}
};

template <typename T> __attribute__((noinline)) double total(const std::vector<std::unique_ptr<T>> &v)
{
	double sum = 0;
	for (const auto &shape : v)
		sum += shape->area();
	return sum;
}

} // namespace geo

__attribute__((noinline)) static void sort_many(std::vector<int> &v, const std::function<bool(int, int)> &less)
{
	std::sort(v.begin(), v.end(), less);
}

int main()
{
	std::vector<std::unique_ptr<geo::Shape>> shapes;
	for (int i = 0; i < 200; i++) {
		if (i % 2)
			shapes.push_back(std::make_unique<geo::Circle>(i));
		else
			shapes.push_back(std::make_unique<geo::Square>(i));
	}
	double sum = 0;
	for (int round = 0; round < 600; round++) {
		sum += geo::total(shapes);
		std::vector<int> v(2000);
		for (int i = 0; i < 2000; i++)
			v[i] = (i * 7919) % 2003;
		sort_many(v, [](int a, int b) { return a % 1000 < b % 1000; });
		sum += v[0];
	}
	std::printf("%.0f\n", sum > 0 ? 1.0 : 0.0);
	return 0;
}
