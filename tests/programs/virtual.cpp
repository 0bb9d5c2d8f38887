// SPDX-License-Identifier: MIT
// C++ virtual calls through a base pointer (no exceptions).
#include "probe.h"

struct Shape {
	virtual ~Shape() {}
	virtual int area(int k) const = 0;
};

struct Square : Shape {
	int area(int k) const override { if (k == 2) probe("square"); return k * k; }
};

struct Circle : Shape {
	int area(int k) const override { if (k == 2) probe("circle"); return 3 * k * k; }
};

__attribute__((noinline)) static int total(const Shape *const *shapes, int n, int k)
{
	int sum = 0;

	for (int i = 0; i < n; i++)
		sum += shapes[i]->area(k);
	return sum;
}

int main()
{
	Square s;
	Circle c;
	const Shape *shapes[] = { &s, &c, &s };
	int r = total(shapes, 3, 1) + total(shapes, 3, 2);

	probe("main");
	printf("result %d\n", r);
	return 0;
}
