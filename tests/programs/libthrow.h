/* SPDX-License-Identifier: MIT */
/*
 * What libthrow.cpp and its library libthrow.lib.cpp share: the library's
 * interface, the exception they throw at each other, and PROBE_LIBRARY,
 * which both must see before probe.h (the program's probe() and the
 * library's copy of it must agree on which frames are the program's).
 * run-programs.sh builds the library as liblibthrow-VARIANT.so.
 */
#ifndef LIBTHROW_H
#define LIBTHROW_H

#define PROBE_LIBRARY "liblibthrow-"
#include "probe.h"

#include <functional>
#include <stdexcept>

#define NOINLINE __attribute__((noinline))

/* Thrown both ways: its type info must match in the program and the library. */
struct LtError : std::runtime_error {
	int code;
	LtError(const char *what, int c) : std::runtime_error(what), code(c) {}
};

typedef int (*lt_fn)(int);

/* Reached through the library's vtable (its key function is there). */
struct LtShape {
	virtual ~LtShape();
	virtual int area(int x) = 0;
	virtual int visit(lt_fn f, int x) = 0;
};

void lib_set_round(int round);
int lib_deep_throw(int depth, int armed);
int lib_through(lt_fn f, int depth, int x);
int lib_rethrow(lt_fn f, int depth);
int lib_absorb(lt_fn f, int x);
LtShape *lib_shape(void);
int lib_invoke(const std::function<int(int)> &f, int depth, int x);
int lib_spawn(lt_fn thrower, lt_fn catcher, int x);
int lib_spin(int n);

/*
 * Each module's own copies (static, in an anonymous namespace): a probe
 * tagged with the round, and a guard whose destructor probes, by return or
 * by unwinding.  Never one module's code run for the other.
 */
static int lt_round;

static NOINLINE void lt_probe(const char *tag, int n)
{
	char line[128];

	if (n >= 0)
		snprintf(line, sizeof(line), "r%d %s %d", lt_round, tag, n);
	else
		snprintf(line, sizeof(line), "r%d %s", lt_round, tag);
	probe(line);
}

namespace {
struct Guard {
	const char *tag;
	int n;
	Guard(const char *t, int k) : tag(t), n(k) {}
	NOINLINE ~Guard() { lt_probe(tag, n); }
};
} // namespace

#endif
