// SPDX-License-Identifier: MIT
// flags: -fnon-call-exceptions
/*
 * A C++ exception thrown out of a signal handler (-fnon-call-exceptions):
 * SIGSEGV in program code, the handler throws, the throw leaves the handler
 * through the runtime's wrapper and the kernel's signal frame, runs
 * destructors in the patched frames it passes and is caught further out.
 * The handler's root must be left on the way (the wrapper's cleanup), so
 * the contexts in the destructors, at the catch and after it are exact.
 */
#include <signal.h>
#include <ucontext.h>

#include <stdexcept>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int *volatile bad = (volatile int *)16;
static volatile int sink;

static void on_segv(int sig, siginfo_t *info, void *uc_void)
{
	ucontext_t *uc = (ucontext_t *)uc_void;

	(void)sig;
	(void)info;
	probe_fault_at("handler", (void *)uc->uc_mcontext.gregs[REG_RIP]);
	throw std::runtime_error("segv");
}

struct Noisy {
	const char *tag;
	~Noisy() { probe(tag); }
};

NOINLINE static int touch(void)
{
	return *bad;
}

NOINLINE static int middle(void)
{
	Noisy n{ "dtor-middle" };
	int v = touch();

	sink += v;
	return v;
}

NOINLINE static int risky(void)
{
	Noisy n{ "dtor-risky" };
	int v = middle();

	probe("unreached");
	return v;
}

NOINLINE static void guarded(const char *tag)
{
	try {
		risky();
	} catch (const std::exception &e) {
		probe(tag);
	}
	probe("after-catch");
}

NOINLINE static void outer(void)
{
	guarded("caught-1");
	guarded("caught-2");
	sink++;
}

int main()
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	outer();
	outer();
	probe("end");
	return 0;
}
