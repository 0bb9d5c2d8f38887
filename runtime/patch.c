// SPDX-License-Identifier: MIT
#include "patch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "keptfd.h"
#include "signals.h"
#include "thread_registry.h"
#include "tls.h"
#include "trap.h"

/*
 * The patch in progress, read by the trap handler of any thread.  Each
 * patch gets its own slot of a ring, published by one atomic pointer: a
 * thread whose trap is delivered late still reads a whole, unchanging
 * description (of this patch or a later one at the same address; every
 * version is a valid way to continue).
 */
#define PENDING_SLOTS 64
static struct dacce_patch pending_ring[PENDING_SLOTS];
static unsigned pending_next;
static _Atomic(const struct dacce_patch *) pending;
/*
 * Patches queued while a function is decoded (dacce_patch_queue_open), then
 * applied together: the same three steps for all of them, every core made
 * to serialise three times in all instead of three times per site.  Two
 * queues in turn, so a late trap reads a whole description, as above.
 */
#define QUEUE_MAX 256
struct queued {
	struct dacce_patch patch;
	uint8_t bytes[15];
	uint8_t first; /* the byte it replaces first, for a rollback */
};
static struct queued queues[2][QUEUE_MAX];
static unsigned queue_which, queue_depth;
static size_t queue_len;
static _Atomic(const struct queued *) pending_queue;
static _Atomic size_t pending_queue_len;
static struct sigaction previous_trap_action;
static struct sigaction trap_action; /* ours, as installed */
static bool trap_action_installed;
static _Atomic(dacce_trap_hook) trap_hook;
/*
 * Writes to code so far, counted after each: a thread that meets a trap
 * byte gone twice at one address with no write in between is running an
 * undefined instruction of the program's own (handle_trap_signal).
 */
static atomic_ulong code_writes;
static bool can_sync_cores;
static atomic_bool sole_thread;
/* This thread patches while the program's thread runs on (dacce_patch_foreign_begin). */
static __thread int foreign_writer;

/* Patches written whole, in one step: only the thread that runs the program's code writes. */
static bool whole_writes(void)
{
	return atomic_load(&sole_thread) && !foreign_writer;
}

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/*
 * Every thread of the process serialises its instruction fetch before we go
 * on.  Not needed while one thread runs the program's code: it is the one
 * writing, and a processor sees its own writes to code (the runtime's own
 * threads never run code we write).  CPython's start-up made 8,300 of these
 * system calls.
 */
static void sync_all_cores(void)
{
	if (can_sync_cores && !whole_writes())
		membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE);
}

/* DACCE_LOG: every fatal undefined instruction is told, the program's own too. */
static bool tell_all_fatal_traps;

void dacce_patch_set_verbose(bool verbose)
{
	tell_all_fatal_traps = verbose;
}

/*
 * The program is about to die of an undefined instruction no patch of ours
 * claims: one line that says where and what is there now, when that is the
 * runtime's trap byte (a trap it lost track of, a bug of its own) or under
 * DACCE_LOG.  A ud2 of the program's own is otherwise its business: its
 * output stays what it is natively.
 */
static void tell_fatal_trap(const siginfo_t *info)
{
	const volatile uint8_t *at = info->si_addr;
	/* Bytes past the page may not be mapped: the fault says only this one was fetched. */
	size_t page_left = 4096 - ((uintptr_t)at & 4095), shown = page_left < 4 ? page_left : 4;
	char line[160];
	int n;

	if (!tell_all_fatal_traps && at[0] != DACCE_TRAP_BYTE)
		return;
	n = snprintf(line, sizeof(line), "dacce: undefined instruction at %p (bytes now", info->si_addr);

	for (size_t i = 0; i < shown && n > 0 && n < (int)sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %02x", at[i]);
	if (n > 0 && n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, "), not a trap of the runtime's\n");
	if (n > 0 && n < (int)sizeof(line) && write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

/* A trap signal that is not ours: the program's handler, or its default action. */
static void chain_to_previous(int sig, siginfo_t *info, void *uc_void)
{
	const struct dacce_kernel_sigaction dfl = { .handler = (void *)SIG_DFL };
	struct sigaction previous = previous_trap_action;

	/* One-shot (SA_RESETHAND, as SysV signal() installs): the kernel would reset it now. */
	if ((previous.sa_flags & SA_RESETHAND) && previous.sa_handler != SIG_IGN &&
	    previous.sa_handler != SIG_DFL) {
		memset(&previous_trap_action, 0, sizeof(previous_trap_action));
		previous_trap_action.sa_handler = SIG_DFL;
	}
	if (previous.sa_flags & SA_SIGINFO) {
		if (previous.sa_sigaction)
			previous.sa_sigaction(sig, info, uc_void);
		return;
	}
	if (previous.sa_handler == SIG_IGN)
		return;
	if (previous.sa_handler != SIG_DFL) {
		previous.sa_handler(sig);
		return;
	}
	/*
	 * Default action, as the program would have met it: a fault (a ud2 of
	 * the program) runs again on return and kills the process with its pc
	 * where it was; a signal sent to it is sent again, blocked until then.
	 */
	syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(dfl.mask));
	if (info->si_code <= 0)
		raise(sig);
	else
		tell_fatal_trap(info);
}

/* The queued patch at addr being applied, or NULL. */
static const struct dacce_patch *queued_at(uintptr_t addr)
{
	const struct queued *q = atomic_load_explicit(&pending_queue, memory_order_acquire);
	size_t n = atomic_load_explicit(&pending_queue_len, memory_order_acquire);

	for (size_t i = 0; q && i < n && i < QUEUE_MAX; i++)
		if (q[i].patch.addr == addr)
			return &q[i].patch;
	return NULL;
}

/*
 * Whether to run the instruction at trap_at again: once after a trap no
 * patch claims, but not twice in a row with no write to code in between
 * (a trap byte written there again would count): then the undefined
 * instruction is the program's own (a ud2, one this processor lacks).
 */
static bool run_again(struct dacce_thread *self, uintptr_t trap_at)
{
	unsigned long writes = atomic_load_explicit(&code_writes, memory_order_acquire);
	bool again = self->trap_rerun_at == trap_at && self->trap_rerun_writes == writes;

	self->trap_rerun_at = again ? 0 : trap_at;
	self->trap_rerun_writes = writes;
	return !again;
}

/* Returns false when the trap is not ours: the program's handler gets it. */
static bool handle_trap_signal(siginfo_t *info, void *uc_void)
{
	ucontext_t *uc = uc_void;
	greg_t *regs = uc->uc_mcontext.gregs;
	uintptr_t trap_at = (uintptr_t)regs[REG_RIP]; /* #UD leaves the pc on the byte */
	struct dacce_thread *self = dacce_thread_self();
	int saved_errno = errno;
	bool ours;

	if ((info->si_code != ILL_ILLOPN && info->si_code != ILL_ILLOPC) ||
	    (uintptr_t)info->si_addr != trap_at)
		return false;
	/*
	 * The byte first: once it is no longer the trap byte the instruction is
	 * whole again, so run it.  If it still is, any patch that put it there
	 * was published before it was written, so the pending load below sees
	 * it, unless that patch finished meanwhile (pending is cleared after
	 * the last byte): then no one claims the trap, and running the
	 * instruction again meets the patched one.
	 */
	dacce_trap_hook hook = atomic_load_explicit(&trap_hook, memory_order_acquire);

	if (*(volatile uint8_t *)trap_at != DACCE_TRAP_BYTE) {
		/* The hook still gets it: a debugger may have written over the trap byte since. */
		ours = (hook && hook(uc_void, trap_at)) || run_again(self, trap_at);
		errno = saved_errno;
		return ours;
	}
	const struct dacce_patch *p = atomic_load_explicit(&pending, memory_order_acquire);

	if (!p || p->addr != trap_at)
		p = queued_at(trap_at);
	if (p) {
		if (p->effect == DACCE_PATCH_CALL) {
			regs[REG_RSP] -= 8;
			*(uintptr_t *)regs[REG_RSP] = p->return_to;
		}
		regs[REG_RIP] = (greg_t)p->target;
		errno = saved_errno;
		return true;
	}
	ours = (hook && hook(uc_void, trap_at)) || run_again(self, trap_at);
	errno = saved_errno;
	return ours;
}

/*
 * The trap signal sent by someone (kill, tgkill, sigqueue: not a fault),
 * arriving in runtime work or in a thread parked by a stop, where it is not
 * blocked (trap.h, stop.c): the program's handler must not run there (its
 * wrapper would wait for the runtime's lock, maybe this thread's own or the
 * stopper's), nor on the runtime's own thread.  Sent again when the work or
 * the stop is over (dacce_runtime_leave, stop.c), or to the main thread.
 */
static bool defer_sent_signal(int sig, const siginfo_t *info)
{
	struct dacce_thread *self = dacce_thread_self();

	if (info->si_code > 0)
		return false;
	if (self->runtime_own)
		return syscall(SYS_tgkill, getpid(), getpid(), sig) == 0;
	if (self->in_runtime == 0 && !self->parked)
		return false;
	self->trap_signal_info = *info;
	self->trap_signal_deferred = true;
	return true;
}

static void on_trap_signal(int sig, siginfo_t *info, void *uc_void)
{
	bool ours;

	dacce_tls_handler_work_begin();
	ours = handle_trap_signal(info, uc_void);
	dacce_tls_handler_work_end();
	if (!ours && !defer_sent_signal(sig, info))
		chain_to_previous(sig, info, uc_void);
	dacce_tls_leaving_handler(uc_void);
}

void dacce_patch_chain_trap_signal(const struct sigaction *act, struct sigaction *old)
{
	if (old)
		*old = previous_trap_action;
	if (act)
		previous_trap_action = *act;
}

void dacce_patch_set_trap_hook(dacce_trap_hook hook)
{
	atomic_store_explicit(&trap_hook, hook, memory_order_release);
}

static void make_fork_canary(void);

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* libc's, past the runtime's own: found once here, not by the policy thread (single_thread.h). */
static sigaction_fn real_sigaction;

int dacce_patch_init(void)
{
	struct sigaction sa;

	/* Once: a second sigaction would record ourselves as the handler to chain to. */
	if (trap_action_installed)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap_signal;
	/*
	 * Everything blocked while we emulate: the trap hook takes the runtime
	 * lock, and a signal handler running instrumented code must not trap
	 * into it again on this thread meanwhile.  Traps themselves stay open:
	 * decoding may call the program's malloc (trap.h), met as runtime work
	 * (SA_NODEFER: the kernel would block the trap signal in its handler).
	 */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	dacce_signals_but_trap(&sa.sa_mask);
	if (sigaction(DACCE_TRAP_SIGNAL, &sa, &previous_trap_action) < 0)
		return -errno;
	can_sync_cores = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
	make_fork_canary();
	real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	trap_action = sa;
	trap_action_installed = true;
	return 0;
}

int dacce_patch_reclaim_trap_signal(struct sigaction *theirs)
{
	struct dacce_kernel_sigaction now;
	sigaction_fn real = real_sigaction;

	if (!trap_action_installed ||
	    syscall(SYS_rt_sigaction, DACCE_TRAP_SIGNAL, NULL, &now, sizeof(now.mask)) != 0 ||
	    now.handler == (void *)on_trap_signal)
		return 0;
	if (!real)
		return -ENOSYS;
	memset(theirs, 0, sizeof(*theirs));
	theirs->sa_handler = (void (*)(int))now.handler; /* sa_sigaction too: the same word */
	theirs->sa_flags = (int)now.flags;
	memcpy(&theirs->sa_mask, &now.mask, sizeof(now.mask));
	return real(DACCE_TRAP_SIGNAL, &trap_action, NULL) == 0 ? 1 : -errno;
}

int dacce_patch_trap(uintptr_t addr)
{
	static const uint8_t trap = DACCE_TRAP_BYTE;
	int err = dacce_patch_write_quiet(addr, &trap, 1);

	/* One byte changes atomically; the sync makes every core fetch it anew. */
	sync_all_cores();
	return err;
}

int dacce_patch_mem_open(void)
{
	/*
	 * Opened per use: an fd kept across fork() would still name the parent.
	 * thread-self, not self: once main has called pthread_exit, the process
	 * leader has no memory left to open.  A process that dropped privileges
	 * (setuid in a child before exec) may not open it at all: then -1, and
	 * writes go through mprotect instead.
	 */
	int fd = open("/proc/thread-self/mem", O_RDWR | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	return errno == EACCES || errno == EPERM ? -1 : -errno;
}

/*
 * The fallback: write permission added to the pages for the copy, never
 * execute permission taken away (another thread may be running there).
 * Program text is read+execute; only it and none of ours is written here.
 */
static int write_by_mprotect(uintptr_t addr, const void *bytes, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = addr & ~(page - 1), end = (addr + len + page - 1) & ~(page - 1);

	if (mprotect((void *)start, end - start, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -errno;
	memcpy((void *)addr, bytes, len);
	if (mprotect((void *)start, end - start, PROT_READ | PROT_EXEC))
		return -errno;
	return 0;
}

int dacce_patch_mem_write(int mem, uintptr_t addr, const void *bytes, size_t len)
{
	ssize_t done;

	if (mem == -1) {
		int err = write_by_mprotect(addr, bytes, len);

		atomic_fetch_add_explicit(&code_writes, 1, memory_order_release);
		return err;
	}
	done = pwrite(mem, bytes, len, (off_t)addr);
	atomic_fetch_add_explicit(&code_writes, 1, memory_order_release);
	if (done < 0)
		return -errno;
	return (size_t)done == len ? 0 : -EIO;
}

/*
 * This thread's /proc/thread-self/mem, kept open: opening it costs as much as
 * the write (a program's start-up patches thousands of sites).  The program
 * may close it behind our back (closefrom) and get the number again for a
 * file of its own, so the descriptor is checked to still be the one we
 * opened before each use, and it sits at a high number where a reused one
 * is unlikely.  A fork child's copy names the parent's memory: reopened.
 */
static __thread int cached_mem = -1;
static __thread pid_t cached_pid;
static __thread dev_t cached_dev;
static __thread ino_t cached_ino;
/*
 * Within a batch (the runtime's lock held: decoding a function patches all
 * its sites) the check is made once, not before every write: two system
 * calls less per write, which made most of a start-up's system time.
 */
static __thread bool batch_open, batch_checked;
/*
 * A byte the kernel zeroes in a fork child (MADV_WIPEONFORK), set again by
 * each full check: the batch's shortcut holds only while it reads 1.  Other
 * libraries' fork handlers run in the child before the runtime's, with the
 * runtime's lock and batch still open (as runtime work), and may meet its
 * traps: their writes must reach the child's memory, not the parent's.
 * NULL (no such page): no shortcut.
 */
static uint8_t *same_process;

static bool batch_still_checked(void)
{
	return batch_open && batch_checked && same_process &&
	       __atomic_load_n(same_process, __ATOMIC_RELAXED);
}

static void note_same_process(void)
{
	if (same_process)
		__atomic_store_n(same_process, 1, __ATOMIC_RELAXED);
}

static void make_fork_canary(void)
{
	void *page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED)
		return;
	if (madvise(page, (size_t)sysconf(_SC_PAGESIZE), MADV_WIPEONFORK) != 0) {
		munmap(page, (size_t)sysconf(_SC_PAGESIZE));
		return;
	}
	same_process = page;
	note_same_process();
}

void dacce_patch_batch_begin(void)
{
	batch_open = true;
	batch_checked = false;
}

void dacce_patch_batch_end(void)
{
	batch_open = false;
	batch_checked = false;
}

static bool cached_is_ours(struct stat *st)
{
	return fstat(cached_mem, st) == 0 && st->st_dev == cached_dev && st->st_ino == cached_ino;
}

static int mem_cached(void)
{
	struct stat st;
	pid_t pid;
	int fd;

	if (cached_mem >= 0 && batch_still_checked())
		return cached_mem;
	pid = getpid();
	if (cached_mem >= 0) {
		bool ours = cached_is_ours(&st);

		if (ours && cached_pid == pid) {
			batch_checked = batch_open;
			note_same_process();
			return cached_mem;
		}
		if (ours)
			close(cached_mem); /* inherited across fork: ours to close */
		cached_mem = -1;
	}
	fd = dacce_patch_mem_open();
	if (fd < 0)
		return fd;
	fd = dacce_fd_move_high(fd);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	cached_mem = fd;
	batch_checked = batch_open;
	note_same_process();
	cached_pid = pid;
	cached_dev = st.st_dev;
	cached_ino = st.st_ino;
	return fd;
}

int dacce_patch_mem_prepare(void)
{
	int mem = mem_cached();

	return mem < -1 ? mem : 0;
}

void dacce_patch_thread_exit(void)
{
	struct stat st;

	if (cached_mem >= 0 && cached_pid == getpid() && cached_is_ours(&st))
		close(cached_mem);
	cached_mem = -1;
}

int dacce_patch_write_quiet(uintptr_t addr, const void *bytes, size_t len)
{
	int mem = mem_cached();

	if (mem < -1)
		return mem;
	return dacce_patch_mem_write(mem, addr, bytes, len);
}

void dacce_patch_sync_cores(void)
{
	sync_all_cores();
}

void dacce_patch_sole_thread(bool sole)
{
	atomic_store(&sole_thread, sole);
}

bool dacce_patch_writes_whole(void)
{
	return whole_writes();
}

bool dacce_patch_queue_covers(uintptr_t addr)
{
	const struct queued *q = queues[queue_which];

	for (size_t i = 0; i < queue_len; i++)
		if (addr >= q[i].patch.addr && addr - q[i].patch.addr < q[i].patch.len)
			return true;
	return false;
}

void dacce_patch_foreign_begin(void)
{
	foreign_writer++;
}

void dacce_patch_foreign_end(void)
{
	foreign_writer--;
}

unsigned long dacce_patch_writes(void)
{
	return atomic_load(&code_writes);
}

int dacce_patch_apply(const struct dacce_patch *patch)
{
	static const uint8_t trap = DACCE_TRAP_BYTE;
	int err;

	if (!patch || !patch->bytes || patch->len == 0 || patch->len > 15)
		return -EINVAL;
	if (whole_writes()) {
		err = dacce_patch_write_quiet(patch->addr, patch->bytes, patch->len);
		sync_all_cores();
		return err;
	}
	uint8_t first = *(volatile const uint8_t *)patch->addr;

	struct dacce_patch *slot = &pending_ring[pending_next++ % PENDING_SLOTS];

	*slot = *patch;
	atomic_store_explicit(&pending, slot, memory_order_release);

	err = dacce_patch_write_quiet(patch->addr, &trap, 1);
	if (err)
		goto cleanup;
	sync_all_cores();
	if (patch->len > 1) {
		err = dacce_patch_write_quiet(patch->addr + 1, patch->bytes + 1, patch->len - 1);
		if (err) {
			/* The tail is unchanged: putting the first byte back restores the old instruction. */
			dacce_patch_write_quiet(patch->addr, &first, 1);
			sync_all_cores();
			goto cleanup;
		}
		sync_all_cores();
	}
	err = dacce_patch_write_quiet(patch->addr, patch->bytes, 1);
	sync_all_cores();
cleanup:
	/* A thread still on its way to the handler finds the trap byte gone and retries. */
	atomic_store_explicit(&pending, NULL, memory_order_release);
	return err;
}

void dacce_patch_queue_open(void)
{
	queue_depth++;
}

/*
 * A write failed half way: the first `done` patches have their tails and
 * get their new first byte, the others up to n their old one back (their
 * tails are unchanged).
 */
static void queue_settle(const struct queued *q, size_t done, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dacce_patch_write_quiet(q[i].patch.addr, i < done ? q[i].bytes : &q[i].first, 1);
	sync_all_cores();
}

/*
 * The three steps of a queued patch: the trap byte on its first byte, its tail,
 * its new first byte; or, with no other thread to run it, the whole patch.
 */
enum queue_step { STEP_TRAP, STEP_TAIL, STEP_FIRST, STEP_WHOLE };

/* What step writes for patch e: len bytes at *addr (len 0: nothing). */
static size_t step_bytes(const struct queued *e, enum queue_step step, uintptr_t *addr,
			 const uint8_t **bytes)
{
	static const uint8_t trap = DACCE_TRAP_BYTE;

	*addr = step == STEP_TAIL ? e->patch.addr + 1 : e->patch.addr;
	*bytes = step == STEP_TRAP ? &trap : step == STEP_TAIL ? e->bytes + 1 : e->bytes;
	if (step == STEP_WHOLE)
		return e->patch.len;
	return step == STEP_TAIL ? e->patch.len - 1 : 1;
}

/*
 * Bytes one write may cover.  A decoded function's sites come queued in
 * address order, a few dozen bytes apart: one write covers a run of them,
 * the bytes between written back as they are (only code of ours, under
 * the runtime's lock, changes program text), instead of one system call
 * per site and step (gcc's cc1 patches 150,000 sites).
 */
#define RUN_MAX 512

/* Carries out step for q[0..n); *done counts the patches written, also on failure. */
static int queue_step(const struct queued *q, size_t n, enum queue_step step, size_t *done)
{
	uint8_t run[RUN_MAX];

	*done = 0;
	while (*done < n) {
		uintptr_t start, end, addr;
		const uint8_t *bytes;
		size_t len = step_bytes(&q[*done], step, &start, &bytes), last;
		int err;

		end = start + len;
		for (last = *done + 1; last < n; last++) {
			len = step_bytes(&q[last], step, &addr, &bytes);
			if (addr < end || addr + len - start > RUN_MAX)
				break;
			end = addr + len;
		}
		if (end == start) {
			*done = last;
			continue;
		}
		memcpy(run, (const void *)start, end - start);
		for (size_t k = *done; k < last; k++) {
			len = step_bytes(&q[k], step, &addr, &bytes);
			memcpy(run + (addr - start), bytes, len);
		}
		err = dacce_patch_write_quiet(start, run, end - start);
		if (err)
			return err;
		*done = last;
	}
	return 0;
}

/*
 * Into address order, so that runs gather them: a function's sites come
 * in order, its entry's byte (entries.h) after them.  Insertion sort: a
 * queue is one function's sites, and nearly sorted.
 */
static void sort_by_address(struct queued *q, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct queued item = q[i];
		size_t j = i;

		for (; j > 0 && q[j - 1].patch.addr > item.patch.addr; j--)
			q[j] = q[j - 1];
		if (j == i)
			continue;
		q[j] = item;
		/* patch.bytes points into the entry itself: moved with it. */
		for (size_t k = j; k <= i; k++)
			q[k].patch.bytes = q[k].bytes;
	}
}

static int queue_flush(void)
{
	struct queued *q = queues[queue_which];
	size_t n = queue_len, done;
	int err;

	if (n == 0)
		return 0;
	if (whole_writes()) {
		/* A failed write leaves the patches before it whole, the rest untouched. */
		sort_by_address(q, n);
		err = queue_step(q, n, STEP_WHOLE, &done);
		sync_all_cores();
		goto done;
	}
	atomic_store_explicit(&pending_queue_len, n, memory_order_release);
	atomic_store_explicit(&pending_queue, q, memory_order_release);
	for (size_t i = 0; i < n; i++)
		q[i].first = *(volatile const uint8_t *)q[i].patch.addr;
	err = queue_step(q, n, STEP_TRAP, &done);
	if (err) {
		queue_settle(q, 0, done);
		goto cleanup;
	}
	sync_all_cores();
	err = queue_step(q, n, STEP_TAIL, &done);
	if (err) {
		queue_settle(q, done, n);
		goto cleanup;
	}
	sync_all_cores();
	err = queue_step(q, n, STEP_FIRST, &done);
	sync_all_cores();
cleanup:
	/* A thread still on its way to the handler finds the trap byte gone and retries. */
	atomic_store_explicit(&pending_queue, NULL, memory_order_release);
done:
	queue_which ^= 1;
	queue_len = 0;
	return err;
}

int dacce_patch_queue_close(void)
{
	if (queue_depth == 0)
		return -EINVAL;
	return --queue_depth ? 0 : queue_flush();
}

int dacce_patch_submit(const struct dacce_patch *patch)
{
	struct queued *slot;
	int err;

	if (!queue_depth)
		return dacce_patch_apply(patch);
	if (!patch || !patch->bytes || patch->len == 0 || patch->len > 15)
		return -EINVAL;
	if (queue_len == QUEUE_MAX) {
		err = queue_flush();
		if (err)
			return err;
	}
	slot = &queues[queue_which][queue_len];
	slot->patch = *patch;
	memcpy(slot->bytes, patch->bytes, patch->len);
	slot->patch.bytes = slot->bytes;
	queue_len++;
	return 0;
}
