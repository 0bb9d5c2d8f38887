// SPDX-License-Identifier: MIT
/*
 * The exec family, interposed so that no stop signal (stop.c) is pending
 * when the new program starts: pending signals survive execve, handlers do
 * not, and the stop signal's default action would kill the new program.
 * The caller holds the registry lock across the call (no stopper can send
 * one), after taking out any that were already on their way.  glibc's own
 * execl* and execvp* call execve internally, out of our reach, so every
 * entry point is wrapped here.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "stop.h"
#include "thread_registry.h"

struct exec_guard {
	bool held;
};

static void guard_enter(struct exec_guard *g)
{
	struct timespec now = { 0, 0 };
	sigset_t stop_only, saved;

	g->held = dacce_rt_enabled();
	if (!g->held)
		return;
	dacce_runtime_enter();
	dacce_threads_lock();
	/* Raw system calls: the interposed mask functions keep the stop signal open. */
	sigemptyset(&stop_only);
	sigaddset(&stop_only, dacce_stop_signal());
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &stop_only, &saved, _NSIG / 8);
	while (sigtimedwait(&stop_only, NULL, &now) >= 0)
		; /* a late one from an attempt that gave up: it has nothing to stop */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, NULL, _NSIG / 8);
}

/* Only reached when the exec failed: the program goes on. */
static void guard_leave(const struct exec_guard *g)
{
	if (!g->held)
		return;
	dacce_threads_unlock();
	dacce_runtime_leave();
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

static void *real(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* The real function name, called with the guard held; errno kept from it. */
#define GUARDED_CALL(type, name, ...)                                      \
	do {                                                               \
		type fn = (type)real(name);                                \
		struct exec_guard g;                                       \
		int ret, saved_errno;                                      \
                                                                           \
		if (!fn) {                                                 \
			errno = ENOSYS;                                    \
			return -1;                                         \
		}                                                          \
		guard_enter(&g);                                           \
		ret = fn(__VA_ARGS__);                                     \
		saved_errno = errno;                                       \
		guard_leave(&g);                                           \
		errno = saved_errno;                                       \
		return ret;                                                \
	} while (0)

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[],
						  char *const envp[])
{
	GUARDED_CALL(execve_fn, "execve", path, argv, envp);
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[],
						   char *const envp[])
{
	GUARDED_CALL(execve_fn, "execvpe", file, argv, envp);
}

__attribute__((visibility("default"))) int fexecve(int fd, char *const argv[], char *const envp[])
{
	GUARDED_CALL(fexecve_fn, "fexecve", fd, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* execl*: the arguments up to the terminating NULL, as an array. */
#define COLLECT_ARGS(first, ap, argv)                                   \
	do {                                                            \
		size_t n_ = 1;                                          \
		va_list count_;                                         \
		va_copy(count_, ap);                                    \
		while (va_arg(count_, const char *))                    \
			n_++;                                           \
		va_end(count_);                                         \
		argv = __builtin_alloca((n_ + 1) * sizeof(char *));     \
		argv[0] = (char *)(first);                              \
		for (size_t i_ = 1; i_ <= n_; i_++)                     \
			argv[i_] = va_arg(ap, char *);                  \
	} while (0)

__attribute__((visibility("default"))) int execl(const char *path, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return execvpe(file, argv, environ);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg, ...)
{
	char **argv, **envp;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	envp = va_arg(ap, char **);
	va_end(ap);
	return execve(path, argv, envp);
}
