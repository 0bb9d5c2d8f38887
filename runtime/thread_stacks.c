// SPDX-License-Identifier: MIT
/*
 * A thread's stacks outlive its start routine.  glibc still runs program
 * code on the thread after the routine returned (or after pthread_exit):
 * C++ thread_local destructors, then pthread key and tss destructors.  So
 * when its context ends (dacce_rt_thread_end) the stacks stay where its
 * TLS block points.  glibc clears that block only to start another thread
 * in it, once the kernel has said the first one is gone (a cached stack's
 * tid is 0), and the new thread takes the same stacks back from here:
 * memory is kept per TLS block, never per thread started.  A block glibc
 * unmapped (a stack its cache let go) holds no thread any more: its stacks
 * are let go too, looked for whenever the number of blocks kept doubles.
 */
#include "thread_stacks.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "keyed.h"
#include "lock.h"

#define CC_RESERVE (256u << 20) /* 16M entries per thread, touched on demand */
#define TC_RESERVE (32u << 20)

struct kept_stacks {
	struct dacce_cc_entry *cc;
	struct dacce_rt_tail_record *tc;
};

static struct dacce_lock kept_lock = DACCE_LOCK_INIT;
static struct dacce_keyed kept = DACCE_KEYED_INIT(sizeof(struct kept_stacks)); /* by TLS block */

static uint32_t next_sweep = 32; /* blocks kept when unmapped ones are next looked for */

static void *reserve(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static bool block_unmapped(uintptr_t block)
{
	uintptr_t page = block & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);

	return msync((void *)page, 1, MS_ASYNC) != 0 && errno == ENOMEM;
}

/* Lets go of the stacks of TLS blocks that are unmapped (with kept_lock held). */
static void sweep(void)
{
	for (uint32_t i = kept.n; i-- > 0;) {
		uint64_t block;
		struct kept_stacks *stacks = dacce_keyed_at(&kept, i, &block);

		if (!block_unmapped((uintptr_t)block))
			continue;
		munmap(stacks->cc, CC_RESERVE);
		munmap(stacks->tc, TC_RESERVE);
		dacce_keyed_remove(&kept, block);
	}
	next_sweep = kept.n * 2 > 32 ? kept.n * 2 : 32;
}

int dacce_thread_stacks_get(struct dacce_tls *tls)
{
	struct kept_stacks *stacks;
	int err = 0;

	if (tls->cc_base && tls->tc_base)
		return 0;
	dacce_lock_acquire(&kept_lock);
	if (kept.n >= next_sweep && !dacce_keyed_get(&kept, (uintptr_t)tls, false))
		sweep();
	stacks = dacce_keyed_get(&kept, (uintptr_t)tls, true);
	if (!stacks) {
		err = -ENOMEM;
	} else if (!stacks->cc) {
		/* The first thread in this TLS block. */
		stacks->cc = reserve(CC_RESERVE);
		stacks->tc = reserve(TC_RESERVE);
		if (!stacks->cc || !stacks->tc) {
			if (stacks->cc)
				munmap(stacks->cc, CC_RESERVE);
			if (stacks->tc)
				munmap(stacks->tc, TC_RESERVE);
			stacks->cc = NULL;
			stacks->tc = NULL;
			err = -ENOMEM;
		}
	}
	if (!err) {
		tls->cc_base = stacks->cc;
		tls->tc_base = stacks->tc;
	}
	dacce_lock_release(&kept_lock);
	return err;
}
