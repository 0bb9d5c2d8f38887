// SPDX-License-Identifier: MIT
// C++ exceptions through the program's own frames, with destructors and a catch, built with
// -static-libgcc (the program carries its own unwinder) or -static-libstdc++ (its own
// personality routine): the runtime cannot stand in front of either (runtime/traits.h), so it
// must leave the program alone, not kill it or lose track of its contexts.
#include <cstdio>
#include <stdexcept>

struct Guard {
	~Guard() { std::puts("destructor ran"); }
};

__attribute__((noinline)) static void thrower(int x)
{
	if (x > 0)
		throw std::runtime_error("boom");
}

__attribute__((noinline)) static int middle(int x)
{
	Guard g;
	thrower(x);
	return x + 1;
}

int main()
{
	try {
		middle(1);
	} catch (const std::exception &e) {
		std::printf("caught %s\n", e.what());
	}
	return 0;
}
