// SPDX-License-Identifier: MIT
// link: lib
/*
 * Hot calls through the PLT, free in the encoding: the program's call of
 * plt_outer in its library (pltcall.lib.c), and the library's call of its
 * own exported plt_inner, through its PLT or, built with -fno-plt, through a
 * GOT slot (`call *plt_inner@GOTPCREL(%rip)`).  Each gets the program's own
 * call back once it has proven hot, as direct calls do (runtime/rt.c,
 * may_call_natively, restore_native_calls): the call goes through the same
 * slot as the trampoline did.  With PLTCALL_VERDICT set, it says on stderr
 * where each call last returned to: the program's (or library's) own code,
 * or code of the runtime; tests/trap-report.sh requires both native.
 * Contexts stay exact throughout (the probes).
 */
#include <stdlib.h>

#include "pltcall.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static long loop(int rounds)
{
	long wrong = 0;

	for (int i = 0; i < rounds; i++)
		wrong += plt_outer(i) != 2 * i + 1;
	return wrong;
}

int main(void)
{
	long wrong = 0, end;
	void *outer, *inner;

	plt_outer(-1);
	end = probe_now_ms() + 500;
	while (probe_now_ms() < end)
		wrong += loop(10000);
	/* The hot calls' last returns, before main's own call below replaces them. */
	outer = plt_outer_returned_to();
	inner = plt_inner_returned_to();
	plt_outer(-1);
	printf("wrong results: %ld\n", wrong + sink);
	if (getenv("PLTCALL_VERDICT"))
		fprintf(stderr, "pltcall: program's call %s, library's call %s\n",
			probe_in_program(outer) ? "native" : "instrumented",
			probe_in_program(inner) ? "native" : "instrumented");
	return 0;
}
