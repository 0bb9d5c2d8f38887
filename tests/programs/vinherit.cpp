// SPDX-License-Identifier: MIT
// C++ without exceptions: a diamond with a virtual base, reached through every base pointer
// (virtual and non-virtual thunks: small functions that adjust `this` and jump to the
// override, tail calls between program functions), constructors and destructors running in
// chains (virtual base first, members, then the rest; the reverse on the way out), objects on
// the stack, on the heap deleted through a base pointer (the deleting destructor, reached
// through a thunk), and in an array.  Probes in constructors, destructors and overrides.
#include <new>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static int live;

NOINLINE static void mark(const char *what, int id)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "%s %d", what, id);
	probe(tag);
}

struct Member {
	int id;
	NOINLINE explicit Member(int i) : id(i) { mark("member-ctor", id); live++; }
	NOINLINE ~Member() { mark("member-dtor", id); live--; }
};

struct Base {
	Member base_member{1};
	int value;
	NOINLINE explicit Base(int v) : value(v) { mark("base-ctor", v); }
	NOINLINE virtual ~Base() { mark("base-dtor", value); }
	NOINLINE virtual int f(int x) { return x + value; }
	NOINLINE virtual int g(int x) { return x * 2; }
};

struct Left : virtual Base {
	Member left_member{2};
	NOINLINE Left() : Base(10) { mark("left-ctor", value); } // only when Left is complete
	NOINLINE ~Left() override { mark("left-dtor", value); }
	NOINLINE int f(int x) override
	{
		if (x == 3)
			mark("left-f", value);
		return x + 100 + sink;
	}
	NOINLINE virtual int left_only(int x) { return f(x) + 1; }
};

struct Right : virtual Base {
	int right_data = 7;
	NOINLINE Right() : Base(20) { mark("right-ctor", value); }
	NOINLINE ~Right() override { mark("right-dtor", value); }
	NOINLINE int g(int x) override
	{
		if (x == 3)
			mark("right-g", value);
		return x * 3 + right_data;
	}
};

struct Bottom final : Left, Right {
	Member bottom_member{3};
	NOINLINE explicit Bottom(int v) : Base(v) { mark("bottom-ctor", v); }
	NOINLINE ~Bottom() override { mark("bottom-dtor", value); }
	NOINLINE int f(int x) override
	{
		if (x == 3)
			mark("bottom-f", value);
		return x + 1000 + sink;
	}
	NOINLINE int g(int x) override
	{
		if (x == 3)
			mark("bottom-g", value);
		return Right::g(x) + 1; // a qualified, non-virtual call into the base
	}
};

// Calls through each kind of pointer: the vtable entries are thunks for all but Left.
NOINLINE static int through_base(Base *b, int x) { return b->f(x) + b->g(x); }
NOINLINE static int through_left(Left *l, int x) { return l->f(x) + l->left_only(x); }
NOINLINE static int through_right(Right *r, int x) { return r->f(x) + r->g(x); }

NOINLINE static int on_stack()
{
	Bottom b(30);
	int r = 0;

	for (int x = 0; x < 5; x++)
		r += through_base(&b, x) + through_left(&b, x) + through_right(&b, x);
	probe("on-stack-before-destruction");
	return r;
} // ~Bottom, then members and bases in reverse

NOINLINE static int on_heap()
{
	Base *objects[3] = { new Bottom(40), new Left(), new Right() };
	int r = 0;

	for (Base *b : objects)
		r += through_base(b, 3);
	for (Base *b : objects)
		delete b; // the deleting destructor, through a thunk for the Bottom
	probe("after-deletes");
	return r;
}

NOINLINE static int in_array()
{
	alignas(Bottom) static unsigned char storage[2][sizeof(Bottom)];
	Bottom *a = new (storage[0]) Bottom(50), *b = new (storage[1]) Bottom(60);
	int r = through_right(a, 3) + through_left(b, 3);

	b->~Bottom(); // explicit destructor calls, newest first
	a->~Bottom();
	probe("after-explicit-destructors");
	return r;
}

int main()
{
	int r = on_stack() + on_heap() + in_array();

	probe("main");
	printf("result %d, live members %d\n", r, live);
	return 0;
}
