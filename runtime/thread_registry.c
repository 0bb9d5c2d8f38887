// SPDX-License-Identifier: MIT
#include "thread_registry.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "keptfd.h"
#include "lock.h"
#include "stop.h"

static __thread struct dacce_thread self __attribute__((tls_model("initial-exec")));

static struct dacce_lock registry_lock = DACCE_LOCK_INIT;
static struct dacce_thread *first;

void dacce_thread_send_deferred_trap_signal(struct dacce_thread *t)
{
	siginfo_t info = t->trap_signal_info;
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);

	t->trap_signal_deferred = false;
	/* With its sender's siginfo when the kernel lets us (the main thread only), else anew. */
	if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, info.si_signo, &info) != 0)
		syscall(SYS_tgkill, pid, tid, info.si_signo);
}

struct dacce_thread *dacce_thread_self(void)
{
	return &self;
}

void dacce_threads_lock(void)
{
	dacce_lock_acquire(&registry_lock);
}

void dacce_threads_unlock(void)
{
	dacce_lock_release(&registry_lock);
}

struct dacce_thread *dacce_threads_first(void)
{
	return first;
}

void dacce_thread_register(void)
{
	if (self.registered)
		return;
	dacce_threads_lock();
	self.tid = gettid();
	self.tls = dacce_tls_self();
	atomic_store(&self.gone, false);
	self.prev = NULL;
	self.next = first;
	if (first)
		first->prev = &self;
	first = &self;
	self.registered = true;
	dacce_threads_unlock();
}

void dacce_thread_unregister(void)
{
	if (!self.registered)
		return;
	/* Seen before the lock: a stopper holding it skips us instead of waiting for us. */
	atomic_store(&self.gone, true);
	dacce_stop_thread_gone();
	dacce_threads_lock();
	if (self.prev)
		self.prev->next = self.next;
	else
		first = self.next;
	if (self.next)
		self.next->prev = self.prev;
	self.registered = false;
	dacce_threads_unlock();
	/* The block is reused by the next thread: its marks go with this one. */
	dacce_marks_fini(&self.marks_at);
	dacce_marks_fini(&self.marks_by_return);
	memset(self.thunk_ret, 0, sizeof(self.thunk_ret));
}

void dacce_thread_release_deferred(struct dacce_thread *thread)
{
	sigset_t deferred;

	if (!thread->has_deferred)
		return;
	deferred = thread->deferred;
	sigemptyset(&thread->deferred);
	thread->has_deferred = false;
	pthread_sigmask(SIG_UNBLOCK, &deferred, NULL);
}

void dacce_threads_after_fork(void)
{
	/* The other threads do not exist here; the lock may have been taken by one of them. */
	dacce_lock_reset(&registry_lock);
	first = NULL;
	if (self.registered) {
		self.registered = false;
		dacce_thread_register();
	}
}

/*
 * The entries of a descriptor on /proc/self/task, read with getdents64 from
 * the start: no allocation, and a third of the cost of generating
 * /proc/self/status (the policy thread asks at every wake-up).  A main
 * thread gone by pthread_exit is listed until the process ends, as the
 * kernel counts it.
 */
static int count_tasks(int fd)
{
	char buf[4096];
	int count = 0;
	long got;

	if (lseek(fd, 0, SEEK_SET) != 0)
		return -1;
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long at = 0; at < got;) {
			const struct linux_dirent64 {
				uint64_t d_ino;
				int64_t d_off;
				unsigned short d_reclen;
				unsigned char d_type;
				char d_name[];
			} *e = (const void *)(buf + at);

			if (e->d_name[0] != '.')
				count++;
			at += e->d_reclen;
		}
	}
	return got < 0 ? -1 : count;
}

int dacce_threads_in_process(void)
{
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC), count;

	if (fd < 0)
		return -1;
	count = count_tasks(fd);
	close(fd);
	return count;
}

int dacce_threads_in_process_kept(struct dacce_kept_fd *tasks)
{
	int fd = dacce_kept_fd_get(tasks, "/proc/self/task", O_RDONLY | O_DIRECTORY);

	return fd < 0 ? -1 : count_tasks(fd);
}
