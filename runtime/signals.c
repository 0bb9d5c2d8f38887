// SPDX-License-Identifier: MIT
/*
 * Signal handlers as nested roots (machine.h): sigaction and signal are
 * interposed so that each handler runs inside a wrapper that pushes a
 * signal-root entry on top of the interrupted context and pops it when the
 * handler returns (a handler that leaves by siglongjmp is rewound by
 * jumps.c).  The program still sees its own handlers when it asks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "graph.h"
#include "patch.h"
#include "rt.h"
#include "signals.h"
#include "stop.h"
#include "thread_registry.h"
#include "tls.h"
#include "trap.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* The program's view of each signal's disposition, when we wrapped it. */
struct user_handler {
	struct sigaction act;
	uint32_t root_edge;
	bool wrapped;
};

static struct user_handler handlers[NSIG];

static sigaction_fn real_sigaction(void)
{
	static sigaction_fn real;

	if (!real)
		real = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	return real;
}

/* Faults come back at once if put off: the instruction runs again. */
static bool is_synchronous(int sig, const siginfo_t *info)
{
	bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
		     sig == SIGTRAP || sig == SIGSYS;

	return fault && info && info->si_code > 0;
}

/*
 * The thread is recording a setjmp mark (rt.c), lock-free: the handler
 * waits until it is done.  The signal is queued again to this thread, with
 * its siginfo, and stays blocked (in the mask the handler's return puts
 * back) until dacce_thread_release_deferred.  Returns false when the
 * handler cannot wait.
 */
static bool put_off(struct dacce_thread *self, const struct user_handler *h, int sig,
		    siginfo_t *info, ucontext_t *uc)
{
	if (!info || is_synchronous(sig, info) || (h->act.sa_flags & SA_RESETHAND))
		return false;
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, info) != 0)
		return false;
	sigaddset(&uc->uc_sigmask, sig);
	sigaddset(&self->deferred, sig);
	self->has_deferred = true;
	return true;
}

/* The handler's root on the ccStack, and what its leaving puts back. */
struct handler_root {
	uint32_t root_edge;
	int pushed;
	struct dacce_rt_signal_save save;
};

/*
 * Leaves the handler's root: when the handler returns, and also when an
 * exception leaves it (-fnon-call-exceptions: a throw out of a SIGSEGV
 * handler).  This file is built with -fexceptions so the unwinder runs this
 * cleanup; the frames the throw leaves then see the interrupted context.
 */
static void leave_root(struct handler_root *root)
{
	if (root->pushed)
		dacce_rt_signal_leave(root->root_edge, &root->save);
}

/*
 * Where a handler of sig returns: the restorer glibc installs with every
 * handler (its __restore_rt), read back from the kernel once.
 */
static uintptr_t signal_trampoline(int sig)
{
	static uintptr_t restorer;
	struct dacce_kernel_sigaction now;

	if (!__atomic_load_n(&restorer, __ATOMIC_RELAXED) &&
	    syscall(SYS_rt_sigaction, sig, NULL, &now, sizeof(now.mask)) == 0)
		__atomic_store_n(&restorer, (uintptr_t)now.restorer, __ATOMIC_RELAXED);
	return __atomic_load_n(&restorer, __ATOMIC_RELAXED);
}

static void call_handler(const struct user_handler *h, int sig, siginfo_t *info, ucontext_t *uc)
{
	struct handler_root root __attribute__((cleanup(leave_root))) = { .root_edge = h->root_edge };

	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	root.pushed = dacce_rt_signal_enter(h->root_edge, &pc, signal_trampoline(sig), &root.save);
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
	if (h->act.sa_flags & SA_SIGINFO)
		h->act.sa_sigaction(sig, info, uc);
	else
		h->act.sa_handler(sig);
}

static void run_handler(int sig, siginfo_t *info, void *uc_void)
{
	const struct user_handler *h = &handlers[sig];
	struct dacce_thread *self = dacce_thread_self();
	ucontext_t *uc = uc_void;

	if (self->marking && put_off(self, h, sig, info, uc))
		return;
	self->handlers_run++;
	call_handler(h, sig, info, uc);
	dacce_tls_leaving_handler(uc_void);
}

static bool is_function(const struct sigaction *act)
{
	return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

/* What the program installed, where we installed the wrapper. */
static void show_program_view(const struct user_handler *before, struct sigaction *old)
{
	if (old && before->wrapped && old->sa_sigaction == run_handler)
		*old = before->act;
}

/*
 * The trap signal's handler stays the runtime's (patch.c), which passes the
 * signals that are not its traps to what the program installed: wrapped as
 * any handler, so it too runs as a nested root on the interrupted context.
 */
static int chain_trap_signal(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct user_handler before = handlers[sig];
	struct sigaction wrapper;
	uint32_t root_edge;

	if (act && is_function(act) &&
	    !dacce_rt_root_edge(DACCE_ROOT_SITE_SIGNAL, (uintptr_t)act->sa_handler, &root_edge)) {
		handlers[sig] = (struct user_handler){ .act = *act, .root_edge = root_edge,
						       .wrapped = true };
		wrapper = *act;
		wrapper.sa_sigaction = run_handler;
		wrapper.sa_flags |= SA_SIGINFO;
		act = &wrapper;
	} else if (act) {
		handlers[sig].wrapped = false;
	}
	dacce_patch_chain_trap_signal(act, old);
	show_program_view(&before, old);
	return 0;
}

__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *act,
						     struct sigaction *old)
{
	sigaction_fn real = real_sigaction();
	struct user_handler before;
	struct sigaction wrapper;
	int ret;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (!dacce_rt_enabled() || sig <= 0 || sig >= NSIG)
		return real(sig, act, old);
	if (sig == DACCE_TRAP_SIGNAL)
		return chain_trap_signal(sig, act, old);
	/* The signal that stops threads for a re-encoding is the runtime's own. */
	if (sig == dacce_stop_signal()) {
		errno = EINVAL;
		return -1;
	}
	before = handlers[sig];
	if (!act || !is_function(act)) {
		ret = real(sig, act, old);
		if (ret == 0 && act)
			handlers[sig].wrapped = false;
		show_program_view(&before, old);
		return ret;
	}
	uint32_t root_edge;

	if (dacce_rt_root_edge(DACCE_ROOT_SITE_SIGNAL, (uintptr_t)act->sa_handler, &root_edge))
		return real(sig, act, old);
	/* The record first: a signal may arrive as soon as the wrapper is in place. */
	handlers[sig] = (struct user_handler){ .act = *act, .root_edge = root_edge, .wrapped = true };
	wrapper = *act;
	wrapper.sa_sigaction = run_handler;
	wrapper.sa_flags |= SA_SIGINFO;
	/* A trapped site met with the trap signal blocked would kill the process. */
	sigdelset(&wrapper.sa_mask, DACCE_TRAP_SIGNAL);
	sigdelset(&wrapper.sa_mask, dacce_stop_signal());
	ret = real(sig, &wrapper, old);
	if (ret != 0)
		handlers[sig] = before;
	show_program_view(&before, old);
	return ret;
}

/*
 * The program's handler of the trap signal, installed before the runtime
 * started or past sigaction: wrapped now.  Until then it would run from the
 * runtime's handler unwrapped, its entry maybe still a trap (watched): met
 * with the trap signal blocked, which kills the process.
 */
static void wrap_trap_handler(const struct sigaction *theirs)
{
	if (is_function(theirs) && theirs->sa_sigaction != run_handler)
		chain_trap_signal(DACCE_TRAP_SIGNAL, theirs, NULL);
}

void dacce_signals_reclaim_trap(void)
{
	struct sigaction theirs;

	if (!dacce_rt_enabled() || dacce_patch_reclaim_trap_signal(&theirs) != 1)
		return;
	wrap_trap_handler(&theirs);
	if (!is_function(&theirs))
		dacce_patch_chain_trap_signal(&theirs, NULL);
	dacce_rt_log(false, "a handler of signal %d was installed past sigaction: the runtime's "
			    "is back, and passes it the signals that are not its traps",
		     DACCE_TRAP_SIGNAL);
}

void dacce_signals_adopt_installed(void)
{
	sigaction_fn real = real_sigaction();
	struct sigaction before_start;

	if (!real || !dacce_rt_enabled())
		return;
	dacce_patch_chain_trap_signal(NULL, &before_start);
	wrap_trap_handler(&before_start);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction cur;

		/* The trap and stop signals are the runtime's; glibc refuses its own. */
		if (sig == DACCE_TRAP_SIGNAL || sig == dacce_stop_signal() || handlers[sig].wrapped ||
		    real(sig, NULL, &cur) != 0 || !is_function(&cur) ||
		    cur.sa_sigaction == run_handler)
			continue;
		sigaction(sig, &cur, NULL);
	}
}

typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);

/*
 * The mask a program asks for, less the trap signal (trapped sites raise it
 * synchronously, and the kernel kills a process that raises a blocked one)
 * and less the stop signal (a thread that blocks it would hold up every
 * re-encoding).
 */
const sigset_t *dacce_signals_program_mask(int how, const sigset_t *set, sigset_t *copy)
{
	if (!set || how == SIG_UNBLOCK || !dacce_rt_enabled() ||
	    (!sigismember(set, DACCE_TRAP_SIGNAL) && !sigismember(set, dacce_stop_signal())))
		return set;
	*copy = *set;
	sigdelset(copy, DACCE_TRAP_SIGNAL);
	sigdelset(copy, dacce_stop_signal());
	return copy;
}

__attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t *set,
							 sigset_t *old)
{
	static sigmask_fn real;
	sigset_t copy;

	if (!real)
		real = (sigmask_fn)dlsym(RTLD_NEXT, "sigprocmask");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(how, dacce_signals_program_mask(how, set, &copy), old);
}

__attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t *set,
							    sigset_t *old)
{
	static sigmask_fn real;
	sigset_t copy;

	if (!real)
		real = (sigmask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
	if (!real)
		return ENOSYS;
	return real(how, dacce_signals_program_mask(how, set, &copy), old);
}

static sighandler_t install_with(int sig, sighandler_t handler, int flags)
{
	struct sigaction act, old;

	if (handler == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

sighandler_t bsd_signal(int sig, sighandler_t handler); /* glibc declares it for XPG only */

/* glibc's signal() and bsd_signal(): BSD semantics. */
__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler)
{
	return install_with(sig, handler, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return install_with(sig, handler, SA_RESTART);
}

/*
 * signal() as a program built for strict ISO C (-std=c99) gets it: SysV
 * semantics, one-shot and not blocked while it runs.  zstd installs its
 * crash handler for SIGILL, the runtime's trap signal, this way: left to
 * glibc, it replaced the runtime's handler, and the first trap ran it.
 */
__attribute__((visibility("default"))) sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
	return install_with(sig, handler, SA_RESETHAND | SA_NODEFER);
}
