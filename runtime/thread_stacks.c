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

#include "hashmap.h"

#define CC_RESERVE (256u << 20) /* 16M entries per thread, touched on demand */
#define TC_RESERVE (32u << 20)

struct kept_stacks {
	struct dacce_cc_entry *cc;
	struct dacce_rt_tail_record *tc;
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dacce_hashmap kept_index; /* TLS block -> index in kept */
static struct kept_stacks *kept;
static uint32_t n_kept, cap_kept;

static void *reserve(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Keeps stacks for the TLS block at key.  0, or -ENOMEM. */
static int keep(uintptr_t key, struct kept_stacks stacks)
{
	if (n_kept == cap_kept) {
		uint32_t cap = cap_kept ? cap_kept * 2 : 16;
		struct kept_stacks *grown = realloc(kept, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		kept = grown;
		cap_kept = cap;
	}
	if (dacce_hashmap_put(&kept_index, key, n_kept))
		return -ENOMEM;
	kept[n_kept++] = stacks;
	return 0;
}

int dacce_thread_stacks_get(struct dacce_tls *tls)
{
	struct kept_stacks stacks = { 0 };
	uintptr_t key = (uintptr_t)tls;
	uint32_t i;
	int err = 0;

	if (tls->cc_base && tls->tc_base)
		return 0;
	pthread_mutex_lock(&kept_lock);
	if (dacce_hashmap_get(&kept_index, key, &i) == 0) {
		stacks = kept[i];
	} else {
		stacks.cc = reserve(CC_RESERVE);
		stacks.tc = reserve(TC_RESERVE);
		err = stacks.cc && stacks.tc ? keep(key, stacks) : -ENOMEM;
		if (err) {
			if (stacks.cc)
				munmap(stacks.cc, CC_RESERVE);
			if (stacks.tc)
				munmap(stacks.tc, TC_RESERVE);
		}
	}
	pthread_mutex_unlock(&kept_lock);
	if (err)
		return err;
	tls->cc_base = stacks.cc;
	tls->tc_base = stacks.tc;
	return 0;
}
