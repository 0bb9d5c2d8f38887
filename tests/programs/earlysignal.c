// SPDX-License-Identifier: MIT
/*
 * Signal handlers installed before the runtime started (from .preinit_array,
 * which the dynamic linker runs before any constructor, as it runs a linked
 * library's constructors): the runtime adopts them at start
 * (runtime/signals.c), so they run as nested roots on top of the
 * interrupted context, as handlers installed later do.  One installed with sigaction, one with signal(); the second is
 * also called directly first, so its code is instrumented before any signal
 * runs it (then nothing but the adoption makes its signal a root).
 */
#include <signal.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static void in_handler(const char *tag)
{
	probe_through(tag);
	sink++;
}

static void on_usr1(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)info;
	(void)uc;
	in_handler("early-sigaction-handler");
}

static void on_usr2(int sig)
{
	(void)sig;
	in_handler("early-signal-handler");
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGUSR2, on_usr2);
}

__attribute__((section(".preinit_array"), used)) static void (*const preinit)(void) = install;

NOINLINE static void interrupted(int sig)
{
	raise(sig);
	probe("after-signal");
	sink++;
}

NOINLINE static void outer(void)
{
	interrupted(SIGUSR1);
	interrupted(SIGUSR2);
	sink++;
}

int main(void)
{
	on_usr2(0);
	outer();
	outer();
	probe("end");
	return 0;
}
