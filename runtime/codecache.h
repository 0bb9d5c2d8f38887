/* SPDX-License-Identifier: MIT */
/*
 * Executable memory for trampolines, within rel32 reach of the code that
 * jumps to it.  Each region is shared anonymous memory mapped twice:
 * read+execute where it runs, read+write elsewhere for the runtime to fill
 * in.  No mapping is ever writable and executable at once.  Callers
 * serialise allocation.
 */
#ifndef DACCE_RT_CODECACHE_H
#define DACCE_RT_CODECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keptfd.h"

#define DACCE_CODE_REGION_SIZE (1u << 20)
#define DACCE_WINDOW_PAGE 4096

struct dacce_code_region {
	uintptr_t exec;	  /* where the code runs */
	uint8_t *write;	  /* the same bytes, writable */
	size_t size, used;
	size_t filled;	  /* bytes from the start set to int3 (or code) so far */
	bool window_page; /* a page for dacce_codecache_alloc_window, not carved */
	uint64_t granules[DACCE_WINDOW_PAGE / 16 / 64]; /* window page: 16-byte pieces in use */
};

struct dacce_address_range {
	uintptr_t start, end;
};

/* A region's place in the sorted index: its run-time address and its index in regions. */
struct dacce_region_key {
	uintptr_t exec;
	size_t size, index;
};

struct dacce_codecache {
	struct dacce_code_region *regions;
	size_t n, cap;
	/*
	 * The regions sorted by exec (room for cap): telling whether an address
	 * is generated code is a binary search, not a walk over every region
	 * (cc1 maps 300 and asks tens of thousands of times per epoch).
	 */
	struct dacce_region_key *by_exec;
	size_t last; /* the region carved from last: tried first (the earlier ones fill up) */
	/*
	 * The address space as /proc/self/maps showed it, plus the regions
	 * mapped since: reading maps costs about 0.2 ms in a large process, and
	 * a program like CPython needs a few hundred regions.  Only a hint:
	 * regions are mapped with MAP_FIXED_NOREPLACE, and a collision or a
	 * search that fails on an old snapshot reads maps again.
	 */
	struct dacce_address_range *maps;
	size_t n_maps, cap_maps;
	uint64_t maps_read_ns; /* CLOCK_MONOTONIC when maps was read */
	/* /proc/self/maps, kept open: the policy thread builds code while the program runs. */
	struct dacce_kept_fd maps_file;
};

void dacce_codecache_init(struct dacce_codecache *cache);
void dacce_codecache_fini(struct dacce_codecache *cache);

/*
 * Reserves len bytes aligned to align (a power of two) whose every byte is
 * within rel32 reach of every address in [near_lo, near_hi).  Returns 0 and
 * both views, -ENOSPC when no gap in the address space is close enough,
 * or another negative errno.
 */
int dacce_codecache_alloc(struct dacce_codecache *cache, uintptr_t near_lo, uintptr_t near_hi,
			  size_t len, size_t align, uintptr_t *exec, uint8_t **write);

/*
 * Gives back the end of a piece just carved by dacce_codecache_alloc that
 * the code written into it did not need (code is emitted into room for its
 * longest form): [exec + used, exec + len) is carved again by the next
 * allocation, still int3.  Only the region's last piece can shrink; anything
 * else is left as it is.
 */
void dacce_codecache_trim(struct dacce_codecache *cache, uintptr_t exec, size_t len, size_t used);

/*
 * Reserves len bytes (at most 64) starting exactly somewhere in [lo, hi), at
 * any alignment: the landing of a jump whose rel32 must contain a given byte
 * (runtime/rt.c, borrowed sites).  Comes from small pages of its own.
 * Returns 0, -ENOSPC when nothing in the window is free, or -errno.
 */
int dacce_codecache_alloc_window(struct dacce_codecache *cache, uintptr_t lo, uintptr_t hi,
				 size_t len, uintptr_t *exec, uint8_t **write);

/*
 * Moves the process to a fresh copy of every region (same addresses, same
 * bytes).  The regions are shared mappings, which fork shares too:
 * parent and child both call this after a fork, before writing any code.
 */
int dacce_codecache_unshare(struct dacce_codecache *cache);

/* The index in regions of the region holding addr, or -1 (a binary search). */
long dacce_codecache_region_index(const struct dacce_codecache *cache, uintptr_t addr);

/* The writable view of an executable address in the cache, or NULL. */
uint8_t *dacce_codecache_writable(const struct dacce_codecache *cache, uintptr_t exec);

/* Whether addr lies in code the cache handed out. */
int dacce_codecache_contains(const struct dacce_codecache *cache, uintptr_t addr);

#endif
