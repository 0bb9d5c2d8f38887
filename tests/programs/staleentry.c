// SPDX-License-Identifier: MIT
/*
 * A thread held on the entry of dispatch code that another thread then
 * rebuilds, while an epoch is installed.
 *
 * call_after_load(fn, word) loads *word and calls fn with `call *%rax`, a
 * 2-byte site that borrows the load: its dispatch code starts with the
 * load.  The second thread calls it with word on a page registered with
 * userfaultfd, so it stops on the first instruction of that dispatch code
 * until the page is filled in.  Meanwhile the main thread gives the site a
 * new target (new dispatch code: the old one is left behind) and runs until
 * an epoch is installed, or for 400 ms.  An epoch must not leave the
 * thread on the old code, whose jumps lead to the previous epoch's
 * operations: after the page is filled in, its contexts must still be exact.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

long call_after_load(void (*fn)(long), const long *word);

/* mov 0x0(%rsi),%rcx with a 32-bit displacement (7 bytes, borrowed whole), then call *%rax. */
__asm__(".text\n"
	".p2align 5\n"
	".type call_after_load, @function\n"
	"call_after_load:\n"
	".cfi_startproc\n"
	"	push %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rbx\n"
	"	mov %rsi, %rdi\n"
	"	.byte 0x48, 0x8b, 0x8e, 0x00, 0x00, 0x00, 0x00\n"
	"	call *%rax\n"
	"	mov (%rbx), %rax\n"
	"	pop %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size call_after_load, .-call_after_load\n");

static long normal_word = 1;
static long *held_word; /* on the userfaultfd page */
static volatile long sink;

static NOINLINE void first_target(long unused)
{
	(void)unused;
	probe("first target");
}

static NOINLINE void second_target(long unused)
{
	(void)unused;
	probe("second target");
}

static NOINLINE void busy_leaf(long i)
{
	sink += i;
}

static NOINLINE void *held_thread(void *unused)
{
	(void)unused;
	call_after_load(first_target, held_word); /* held on the load until main fills the page */
	call_after_load(first_target, &normal_word);
	call_after_load(second_target, &normal_word);
	probe("held thread after");
	return NULL;
}

/* Calls until the runtime installs an epoch (pushed calls of a new edge make it due), or 400 ms. */
static NOINLINE void until_an_epoch(void)
{
	probe_context_get_fn get = probe_context_get();
	uint64_t before = probe_epoch_now(get);
	long deadline = probe_now_ms() + 400;
	void (*volatile leaf)(long) = busy_leaf;

	if (!get)
		return; /* natively */
	while (probe_epoch_now(get) == before && probe_now_ms() < deadline)
		for (long i = 0; i < 10000; i++)
			leaf(i);
}

static int open_userfaultfd(void *page, size_t size)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)page, .len = size },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);

	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ioctl(fd, UFFDIO_API, &api) || ioctl(fd, UFFDIO_REGISTER, &reg)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits for the held thread's fault on the page; 0, or -1 when it never comes. */
static int wait_for_fault(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&p, 1, 10000) != 1 || read(fd, &msg, sizeof(msg)) != sizeof(msg))
		return -1;
	return msg.event == UFFD_EVENT_PAGEFAULT ? 0 : -1;
}

static int fill_page(int fd, void *page, size_t size)
{
	long *source = aligned_alloc(size, size);
	struct uffdio_copy copy = {
		.dst = (uintptr_t)page, .src = (uintptr_t)source, .len = size,
	};
	int err;

	if (!source)
		return -1;
	memset(source, 0, size);
	source[0] = 2;
	err = ioctl(fd, UFFDIO_COPY, &copy);
	free(source);
	return err;
}

int main(void)
{
	size_t size = (size_t)sysconf(_SC_PAGESIZE);
	void *page = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t held;
	int fd;

	if (page == MAP_FAILED)
		return 1;
	fd = open_userfaultfd(page, size);
	if (fd < 0) {
		printf("no userfaultfd here: nothing to hold a thread with\n");
		return 0;
	}
	held_word = page;
	call_after_load(first_target, &normal_word); /* the site's dispatch code knows first_target */
	if (pthread_create(&held, NULL, held_thread, NULL))
		return 1;
	if (wait_for_fault(fd)) {
		printf("the thread never reached the load\n");
		return 1;
	}
	/* The held thread is on the dispatch code's first instruction: a new target rebuilds it. */
	call_after_load(second_target, &normal_word);
	until_an_epoch();
	if (fill_page(fd, page, size)) {
		printf("cannot fill the page in\n");
		return 1;
	}
	pthread_join(held, NULL);
	call_after_load(first_target, &normal_word);
	probe("main after");
	printf("loaded %ld\n", *held_word);
	return 0;
}
