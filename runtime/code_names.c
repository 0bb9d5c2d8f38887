// SPDX-License-Identifier: MIT
#include "code_names.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "gdbjit.h"
#include "perfmap.h"
#include "rt_state.h"
#include "stop.h"

/*
 * Return points wait for the next flush: the policy thread's, at each
 * wake-up, or this many (each flush's working memory is then small, and
 * the next one reuses it).  CPython's start-up makes about 15,000.
 */
#define FLUSH_AT 1024

struct pending {
	const char *kind;
	uintptr_t start, site, row_at;
	uint32_t len;
	const uint8_t *rules; /* its own rules, else the row at row_at (if any) */
	size_t n_rules;
};

static struct {
	struct pending *items;
	size_t n, cap;
	bool off;    /* DACCE_GDB_JIT=0 */
	bool failed; /* memory ran out once: no more for gdb (the perf map goes on) */
	long flushed_ns; /* CLOCK_MONOTONIC of the last flush */
	unsigned flushes;
} waiting;

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

void rt_code_names_start(void)
{
	const char *jit = dacce_env("DACCE_GDB_JIT");

	waiting.off = jit && strcmp(jit, "0") == 0;
}

void rt_code_names_flush_due(void)
{
	if (waiting.n && (waiting.flushes < RT_CODE_NAMES_EAGER ||
			  now_ns() - waiting.flushed_ns >= RT_CODE_NAMES_SPACING_MS * 1000000L))
		rt_code_names_flush();
}

void rt_code_name(const char *kind, uintptr_t site, char *name, size_t len)
{
	const struct rt_module *m = site ? rt_module_at(site) : NULL;
	const struct dacce_func *fn;
	const char *file;

	if (!site) {
		snprintf(name, len, "dacce:%s", kind);
		return;
	}
	if (!m) {
		snprintf(name, len, "dacce:%s@[anon]+0x%lx", kind, (unsigned long)site);
		return;
	}
	fn = dacce_funcs_find(&m->funcs, site);
	file = strrchr(m->info->path, '/') ? strrchr(m->info->path, '/') + 1 : m->info->path;
	if (fn && fn->name)
		snprintf(name, len, "dacce:%s@%s+%#lx", kind, fn->name,
			 (unsigned long)(site - fn->start));
	else
		snprintf(name, len, "dacce:%s@%s+%#lx", kind, file,
			 (unsigned long)(site - m->info->bias));
}

void rt_code_named(const char *kind, uintptr_t start, size_t len, uintptr_t site)
{
	char name[192];

	if (!dacce_perfmap_on())
		return;
	rt_code_name(kind, site, name, sizeof(name));
	dacce_perfmap_add(start, len, name);
}

static void queue(const struct pending *item)
{
	if (waiting.off || waiting.failed)
		return;
	if (waiting.n == waiting.cap) {
		size_t cap = waiting.cap ? waiting.cap * 2 : 256;
		struct pending *grown = realloc(waiting.items, cap * sizeof(*grown));

		if (!grown) {
			waiting.failed = true;
			return;
		}
		waiting.items = grown;
		waiting.cap = cap;
	}
	waiting.items[waiting.n++] = *item;
	if (waiting.n >= FLUSH_AT)
		rt_code_names_flush();
}

void rt_code_returned_to(const char *kind, uintptr_t start, size_t len, uintptr_t site,
			 uintptr_t row_at)
{
	rt_code_named(kind, start, len, site);
	queue(&(struct pending){ .kind = kind, .start = start, .site = site, .row_at = row_at,
				 .len = (uint32_t)len });
}

void rt_code_returned_to_rules(const char *kind, uintptr_t start, size_t len,
			       const uint8_t *rules, size_t n_rules)
{
	rt_code_named(kind, start, len, 0);
	queue(&(struct pending){ .kind = kind, .start = start, .len = (uint32_t)len,
				 .rules = rules, .n_rules = n_rules });
}

/*
 * The last row looked up during one flush, with the addresses it holds for:
 * the call sites of one function mostly share one.  Pieces are flushed in
 * address order, so one walk of each module's tables goes on from row to
 * row (ehframe.h) instead of running each function's instructions again
 * from its start for every site: the rows were two thirds of a flush, and a
 * flush 3 % of gcc's `cc1` under the runtime.  Dropped after each flush: a
 * module may go away in between.
 */
static struct {
	const struct rt_module *m;
	struct dacce_eh_frame_walk *walk;
	uintptr_t lo, hi;
	struct dacce_cfa_row row;
	bool valid;
} last;

static void forget_rows(void)
{
	dacce_cfa_walk_free(last.walk);
	memset(&last, 0, sizeof(last));
}

static int row_of(uintptr_t addr, struct dacce_cfa_row *row)
{
	const struct rt_module *m = addr ? rt_module_at(addr) : NULL;

	if (!m || m->closed || !m->cfa)
		return -ENOENT;
	if (last.valid && last.m == m && addr >= last.lo && addr < last.hi) {
		*row = last.row;
		return 0;
	}
	if (last.m != m) {
		forget_rows();
		last.m = m;
		last.walk = dacce_cfa_walk_new(m->cfa);
	}
	memset(row, 0, sizeof(*row));
	last.valid = false;
	/* Without a walk (no memory), each lookup starts over. */
	if ((last.walk ? dacce_cfa_walk_row_at(last.walk, addr, row, &last.lo, &last.hi)
		       : dacce_cfa_row_at(m->cfa, addr, row, &last.lo, &last.hi)) != 0)
		return -ENOENT;
	last.row = *row;
	last.valid = true;
	return 0;
}

static int by_row_address(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	return x->row_at < y->row_at ? -1 : x->row_at > y->row_at;
}

/*
 * Pieces of one code cache region may share a section (the region is all
 * ours); pieces of the window pages, carved in any order, each get their own.
 */
static uint64_t group_of(uintptr_t start)
{
	long i = dacce_codecache_region_index(&rt.cache, start);

	if (i < 0 || rt.cache.regions[i].window_page)
		return ((uint64_t)1 << 63) | start;
	return (uint64_t)i;
}

void rt_code_names_flush(void)
{
	struct dacce_gdbjit_object *o;
	char name[192];
	int err = 0;

	/*
	 * Not while the world stops (kept from when rows came from libdw, which
	 * allocates with libc's malloc, whose lock a parked thread may hold), and
	 * not while a dlclose is under way: rows are read from the tables where
	 * modules map them, and the module being closed may be unmapped at any
	 * moment until the runtime has forgotten it (m->closed).
	 */
	if (waiting.n == 0 || dacce_world_stopping() || rt.loader_busy)
		return;
	qsort(waiting.items, waiting.n, sizeof(*waiting.items), by_row_address);
	o = dacce_gdbjit_begin(waiting.n);
	for (size_t i = 0; o && i < waiting.n && !err; i++) {
		const struct pending *p = &waiting.items[i];
		struct dacce_cfa_row row;

		rt_code_name(p->kind, p->site, name, sizeof(name));
		if (p->rules)
			err = dacce_gdbjit_add_rules(o, p->start, p->len, group_of(p->start), name,
						     p->rules, p->n_rules);
		else
			err = dacce_gdbjit_add(o, p->start, p->len, group_of(p->start), name,
					       row_of(p->row_at, &row) == 0 ? &row : NULL);
	}
	forget_rows();
	if (!o || err) {
		dacce_gdbjit_discard(o);
		waiting.failed = true;
	} else if (dacce_gdbjit_commit(o) != 0) {
		waiting.failed = true;
	}
	waiting.n = 0;
	waiting.flushed_ns = now_ns();
	waiting.flushes++;
}
