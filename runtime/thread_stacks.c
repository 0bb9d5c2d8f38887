// SPDX-License-Identifier: MIT
/*
 * A thread's stacks outlive its start routine.  glibc still runs program
 * code on the thread after the routine returned (or after pthread_exit):
 * C++ thread_local destructors, then pthread key and tss destructors.  So
 * when its context ends (dacce_rt_thread_end) the stacks stay where its
 * TLS block points.  glibc clears that block only to start another thread
 * in it, once the kernel has said the first one is gone (a cached stack's
 * tid is 0), and the new thread takes the same stacks back from here:
 * memory is kept per TLS block, never per thread started.
 */
#include "thread_stacks.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "keyed.h"

#define CC_RESERVE (256u << 20) /* 16M entries per thread, touched on demand */
#define TC_RESERVE (32u << 20)

struct kept_stacks {
	struct dacce_cc_entry *cc;
	struct dacce_rt_tail_record *tc;
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dacce_keyed kept = DACCE_KEYED_INIT(sizeof(struct kept_stacks)); /* by TLS block */

static void *reserve(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int dacce_thread_stacks_get(struct dacce_tls *tls)
{
	struct kept_stacks *stacks;
	int err = 0;

	if (tls->cc_base && tls->tc_base)
		return 0;
	pthread_mutex_lock(&kept_lock);
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
	pthread_mutex_unlock(&kept_lock);
	return err;
}
