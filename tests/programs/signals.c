// SPDX-License-Identifier: MIT
/* Signal handlers are roots on top of the interrupted context, nested ones too. */
#include <signal.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static void in_inner_handler(void)
{
	probe_through("inner-handler");
	sink++;
}

static void inner_handler(int sig)
{
	(void)sig;
	in_inner_handler();
	sink++;
}

NOINLINE static void in_handler(int depth)
{
	probe_through("handler");
	if (depth == 0)
		raise(SIGUSR2); /* a signal inside a handler */
	sink++;
}

static void handler(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)uc;
	in_handler(info->si_code == SI_TKILL || info->si_code == SI_USER ? 0 : 1);
	sink++;
}

NOINLINE static void interrupted(void)
{
	raise(SIGUSR1);
	probe("after-signal");
	sink++;
}

NOINLINE static void outer(void)
{
	interrupted();
	sink++;
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGUSR2, inner_handler);
	outer();
	probe("main");
	printf("result %d\n", sink);
	return 0;
}
