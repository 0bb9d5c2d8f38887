// SPDX-License-Identifier: MIT
/*
 * Re-encoding (epochs) and the standalone policy.
 *
 * A policy thread of the runtime's own (it runs no instrumented code and
 * blocks every signal) wakes up every few milliseconds and re-encodes when
 * edges found since the last epoch are hot (their trampolines count their
 * pushes) or numerous.  A re-encoding:
 *
 *   1. stops every instrumented thread (stop.c) where its context matches
 *      its pc, and finds the function each one is in;
 *   2. encodes the call graph with the observed frequencies (a new epoch);
 *   3. translates every thread's context and every setjmp mark to it
 *      (decoder/translate.c: decode under the old epoch, replay under the
 *      new one), all before changing anything, so that any failure leaves
 *      the process as it was;
 *   4. builds code for every instrumented site under the new epoch, then
 *      points the sites at it and turns each old trampoline's return point
 *      into a jump to the new one: live frames entered through old code
 *      return through the new epoch's "after" operation, which is what the
 *      translated context expects;
 *   5. stores the translated contexts and lets the threads go.
 *
 * A thread stopped inside generated code (other than at an entry) makes the
 * attempt start over a moment later; a context that cannot be decoded (a
 * callback entered from a library, a thread past its root) makes the policy
 * wait longer before trying again.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "code_names.h"
#include "control.h"
#include "dict_io.h"
#include "env.h"
#include "hashmap.h"
#include "patch.h"
#include "prebuilt.h"
#include "probes.h"
#include "rt.h"
#include "relocated.h"
#include "rt_state.h"
#include "signals.h"
#include "single_thread.h"
#include "stop.h"
#include "thread_registry.h"
#include "tls.h"
#include "trap.h"
#include "translate.h"
#include "coroutines.h"
#include "scan_cache.h"
#include "watch.h"

#define DEFAULT_INTERVAL_MS 20
#define DEFAULT_HOT_PUSHES 20000
#define DEFAULT_NEW_EDGES 1000
/*
 * After an epoch that paused the threads for P, the policy waits 20 P
 * (DACCE_EPOCH_PAUSE_BUDGET) before the next one: pauses then take about 5 %
 * of the run at most, however big the program (gcc's cc1 met a new edge
 * often enough for 99 epochs of 56 ms on average in 24 s), unless the
 * pushes of new edges pay for a stop sooner (fresh_pushes_pay).
 */
#define DEFAULT_PAUSE_BUDGET 20
/* Attempts at one re-encoding when threads keep being caught inside generated code. */
#define TRANSIENT_RETRIES 20
/*
 * Attempts at one re-encoding, 1 ms apart, when a thread's context cannot
 * be decoded now: almost always a callback from a library (CPython's json
 * encoder calls back into the interpreter for every value), which is back
 * in the library a moment later.  A failed attempt stops the threads only
 * briefly (its translation fails before any code is built), and the
 * encoding made for the first one serves them all.
 */
#define UNDECODABLE_RETRIES 24
#define UNDECODABLE_RETRY_NS (1000 * 1000)
/* After a re-encoding that did not happen, the policy waits this long at most. */
#define MAX_BACKOFF_MS 1000

struct parked {
	struct dacce_thread *thread;
	uint32_t node;
	struct dacce_state st;		     /* its context, translated in place */
	struct dacce_rt_tail_record *old_tc; /* the records it had (their return addresses) */
	uint32_t old_tc_depth;
};

static struct {
	/* Settings (DACCE_EPOCH_*), read once. */
	bool off, stress;
	long interval_ms;
	uint64_t hot_pushes;
	uint32_t new_edges;
	long pause_budget; /* the wait after an epoch, in pauses (DEFAULT_PAUSE_BUDGET) */
	/* The policy thread. */
	atomic_uint nudges; /* futex word: bumped when a new edge is found (stress mode) */
	pthread_t thread;
	atomic_int thread_ready; /* futex word: its own descriptors are open */
	bool running;
	long backoff_ms;
	long quiet_until_ns; /* no epoch of the runtime's own before this (pause_budget) */
	bool backing_off;    /* quiet_until_ns is a failed attempt's wait, not the budget's */
	/* Why the last attempt did not happen, logged once it is given up. */
	struct {
		pid_t tid;
		uintptr_t pc;
		const char *why;
		uint32_t keep_free; /* a tail edge the next encoding must leave free, or DACCE_NONE */
	} put_off;
	/* Tail edges live frames entered while they were free (keep_tail_edges_free). */
	struct dacce_hashmap keep_free;
	/* Who asked for the epoch being made (probes.h: epoch's driver). */
	enum dacce_epoch_driver driver;
	/* The last attempt was put off: the code built ahead for it went unused (prebuilt.h). */
	bool last_put_off;
	/* The hot tail edge an epoch is due for (DACCE_NONE: other reasons); those that stayed dear. */
	uint32_t tail_wanted;
	struct dacce_hashmap tails_tried;
	/*
	 * The given-back call the epoch being made takes back for tail_wanted
	 * (DACCE_NONE: none), and how often each tail edge's attempt found a
	 * frame the native call entered still live.
	 */
	uint32_t taking_back;
	struct dacce_hashmap take_back_tries;
	/* The hot back edge an epoch is due for (hot_back_edge), and those that asked once. */
	uint32_t back_wanted;
	struct dacce_hashmap backs_tried;
	/* The free direct calls an epoch is due for (direct_call_to_give_back), those that asked. */
	uint32_t direct_wanted;
	struct dacce_hashmap direct_tried;
	uint32_t *direct_candidates; /* all that ask with direct_wanted (its first) */
	size_t n_direct_candidates, cap_direct_candidates;
	/* For weighing a stop against what it saves (worth_a_stop). */
	long started_ns, installed_ns, last_pause_ns;
	/* Counters for the exit summary. */
	uint64_t epochs, given_up;
	/* The policy's looks at every edge (epoch_due), and what the program had run by the last. */
	uint64_t checks;
	long program_cpu_at_check;
	uint32_t edges_at_check;
	long pause_total_ns, pause_max_ns;
	/* What the encoder reads of rt.graph, copied (encode_next); its arrays are reused. */
	struct dacce_graph *graph_copy;
	struct dacce_dict **retired; /* older epochs, kept for snapshots taken in them */
	size_t n_retired, cap_retired;
} ep;

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static long env_long(const char *name, long fallback)
{
	const char *v = dacce_env(name);
	char *end;
	long n;

	if (!v || !*v)
		return fallback;
	n = strtol(v, &end, 10);
	return *end || n < 0 ? fallback : n;
}

/* ------------------------------------------------------------------ contexts */

static void parked_fini(struct parked *p)
{
	dacce_state_fini(&p->st);
	free(p->old_tc);
}

/*
 * A copy of a thread's context as machine.h states it (depths given: a
 * mark's prefix, whose top entry is the mark's own; top NULL: the live one).
 */
static int state_of(const struct dacce_tls *tls, uint64_t id, uint32_t cc_depth,
		    const struct dacce_cc_entry *top, uint32_t tc_depth, struct dacce_state *st)
{
	dacce_state_init(st, tls->epoch);
	st->id = id;
	st->cc = malloc(sizeof(*st->cc) * (cc_depth ? cc_depth : 1));
	st->tc = malloc(sizeof(*st->tc) * (tc_depth ? tc_depth : 1));
	if (!st->cc || !st->tc) {
		dacce_state_fini(st);
		return -ENOMEM;
	}
	st->cc_cap = cc_depth ? cc_depth : 1;
	st->tc_cap = tc_depth ? tc_depth : 1;
	memcpy(st->cc, tls->cc_base, sizeof(*st->cc) * cc_depth);
	if (cc_depth && top)
		st->cc[cc_depth - 1] = *top;
	st->cc_depth = cc_depth;
	for (uint32_t i = 0; i < tc_depth; i++) {
		const struct dacce_rt_tail_record *r = &tls->tc_base[i];

		st->tc[i] = (struct dacce_tc_entry){
			.id = r->id,
			.cc_depth = (uint32_t)(r->cc_top - tls->cc_base),
			.top_aux = r->top_aux,
			.frame = r->frame,
		};
	}
	st->tc_depth = tc_depth;
	return 0;
}

static int thread_state(struct parked *p)
{
	const struct dacce_tls *tls = p->thread->tls;
	uint32_t cc_depth = (uint32_t)(tls->cc_top - tls->cc_base);
	uint32_t tc_depth = (uint32_t)(tls->tc_top - tls->tc_base);
	int err;

	err = state_of(tls, tls->id, cc_depth, NULL, tc_depth, &p->st);
	if (err)
		return err;
	p->old_tc = malloc(sizeof(*p->old_tc) * (tc_depth ? tc_depth : 1));
	if (!p->old_tc)
		return -ENOMEM;
	memcpy(p->old_tc, tls->tc_base, sizeof(*p->old_tc) * tc_depth);
	p->old_tc_depth = tc_depth;
	return 0;
}

static bool is_nested_root(const struct dacce_cc_entry *entry)
{
	return entry->edge < rt.graph->n_edges &&
	       dacce_site_kind_is_nested_root(rt.graph->edges[entry->edge].kind);
}

/* Nested roots in cc[0, at]. */
static uint32_t roots_up_to(const struct dacce_cc_entry *cc, uint32_t at)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i <= at; i++)
		k += is_nested_root(&cc[i]);
	return k;
}

/* The index of the k-th nested root (from 1) in cc[0, depth), or UINT32_MAX. */
static uint32_t kth_root(const struct dacce_cc_entry *cc, uint32_t depth, uint32_t k)
{
	for (uint32_t i = 0; i < depth; i++)
		if (is_nested_root(&cc[i]) && --k == 0)
			return i;
	return UINT32_MAX;
}

/*
 * The handlers' records of where they interrupted the thread (threads.h)
 * name their roots by ccStack index, which translation changes: the k-th
 * root from the bottom stays the k-th.  Stale records go.
 */
static void move_handler_pcs(struct dacce_thread *thread, const struct dacce_cc_entry *old_cc,
			     uint32_t old_depth, const struct dacce_state *st)
{
	uint32_t kept = 0;

	for (uint32_t h = 0; h < thread->n_handler_pcs; h++) {
		struct dacce_handler_pc record = thread->handler_pcs[h];

		if (record.cc_index >= old_depth || !is_nested_root(&old_cc[record.cc_index]))
			continue;
		record.cc_index = kth_root(st->cc, st->cc_depth, roots_up_to(old_cc, record.cc_index));
		if (record.cc_index != UINT32_MAX)
			thread->handler_pcs[kept++] = record;
	}
	thread->n_handler_pcs = kept;
}

/* Writes a translated context back; tail records keep the return addresses of their frames. */
static void store_state(const struct parked *p)
{
	struct dacce_tls *tls = p->thread->tls;
	const struct dacce_state *st = &p->st;

	move_handler_pcs(p->thread, tls->cc_base, (uint32_t)(tls->cc_top - tls->cc_base), st);
	memcpy(tls->cc_base, st->cc, sizeof(*st->cc) * st->cc_depth);
	for (uint32_t i = 0; i < st->tc_depth; i++) {
		uint64_t return_to = 0, guard = 0;

		for (uint32_t k = 0; k < p->old_tc_depth && !return_to; k++)
			if (p->old_tc[k].frame == st->tc[i].frame) {
				return_to = p->old_tc[k].return_to;
				guard = p->old_tc[k].guard; /* what its slot holds, as before */
			}
		tls->tc_base[i] = (struct dacce_rt_tail_record){
			.id = st->tc[i].id,
			.cc_top = tls->cc_base + st->tc[i].cc_depth,
			.top_aux = st->tc[i].top_aux,
			.frame = st->tc[i].frame,
			.return_to = return_to,
			.guard = guard,
		};
	}
	tls->tc_top = tls->tc_base + st->tc_depth;
	tls->cc_top = tls->cc_base + st->cc_depth;
	tls->id = st->id;
	tls->epoch = st->epoch;
}

/*
 * A mark is a prefix of its thread's context, taken in setjmp (the edge to
 * setjmp on top): translated alone, its replay is a prefix of the thread's.
 * A mark that does not translate is dropped (a longjmp to it then leaves
 * the context partial, never wrong).
 */
static void translate_mark(struct jump_mark *mark, struct parked *threads, size_t n,
			   const struct dacce_dict *prev, const struct dacce_dict *next)
{
	const struct parked *owner = NULL;
	struct dacce_edge_view top;
	struct dacce_state st;

	for (size_t i = 0; i < n && !owner; i++)
		if (threads[i].thread->tls == mark->thread)
			owner = &threads[i];
	if (!owner || !mark->cc_depth)
		goto drop;
	if (state_of(owner->thread->tls, mark->id, mark->cc_depth, &mark->top, mark->tc_depth, &st))
		goto drop;
	if (dacce_dict_edge(prev, rt.graph, st.cc[st.cc_depth - 1].edge, &top) ||
	    dacce_translate(prev, next, rt.graph, &st, top.callee, NULL)) {
		dacce_state_fini(&st);
		goto drop;
	}
	mark->id = st.id;
	mark->cc_depth = st.cc_depth;
	mark->top = st.cc_depth ? st.cc[st.cc_depth - 1] : (struct dacce_cc_entry){ 0 };
	mark->tc_depth = st.tc_depth;
	dacce_state_fini(&st);
	return;
drop:
	mark->thread = NULL;
}

/* Every mark of a parked thread (its own tables: no thread is writing one now). */
static void translate_marks_of(struct dacce_thread *thread, struct parked *threads, size_t n,
			       const struct dacce_dict *prev, const struct dacce_dict *next)
{
	struct dacce_marks *tables[2] = { &thread->marks_at, &thread->marks_by_return };

	for (int t = 0; t < 2; t++)
		for (uint32_t i = 0; i < tables[t]->cap; i++)
			if (tables[t]->slots[i].key && tables[t]->slots[i].mark.thread)
				translate_mark(&tables[t]->slots[i].mark, threads, n, prev, next);
}

/* ------------------------------------------------------------------ re-encoding */

struct stopped {
	struct parked *threads;
	size_t n;
};

static void moved(uintptr_t from, uintptr_t to, void *ctx)
{
	struct stopped *all = ctx;

	for (size_t i = 0; i < all->n; i++)
		if (all->threads[i].thread->pc == from)
			all->threads[i].thread->resume_pc = to;
}

/* Finds where each parked thread is and copies its context. */
static int collect(struct stopped *all)
{
	size_t cap = 0;
	int err;

	/* A coroutine's saved state (coroutines.c) is on no thread: soon resumed, maybe. */
	if (dacce_contexts_suspended())
		return -EAGAIN;

	for (struct dacce_thread *t = dacce_threads_first(); t; t = t->next)
		cap++;
	all->threads = calloc(cap ? cap : 1, sizeof(*all->threads));
	if (!all->threads)
		return -ENOMEM;
	for (struct dacce_thread *t = dacce_threads_first(); t; t = t->next) {
		struct parked *p;

		if (atomic_load(&t->gone) || !t->tls->cc_base)
			continue; /* ending, or no context yet */
		if (t->handlers_over_code > 0)
			return -EAGAIN; /* a handler over half-run code: soon back in it */
		p = &all->threads[all->n++];
		p->thread = t;
		p->node = rt_node_at(t->tls, t->pc);
		if (!rt_entry_is_current(t->pc))
			return -EAGAIN; /* on the entry of superseded code: soon out of it */
		if (p->node == DACCE_NONE)
			/* Half way through generated code: soon out of it.  Elsewhere: not now. */
			return dacce_codecache_contains(&rt.cache, t->pc) ? -EAGAIN : -ENOLINK;
		err = thread_state(p);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Tail edges that a live frame entered while they were free, which an epoch
 * making them cost something could not translate (the frame would need a
 * tail record, and where its return address lies is not known): each is
 * made the hottest way into its callee, so that the encoder leaves it free.
 * Without this, every epoch was put off for as long as such a frame lived:
 * CPython's json encoder loop, a whole run long, kept every edge found after
 * it pushed.
 */
static void keep_tail_edges_free(void)
{
	const struct dacce_hashmap *kept = &ep.keep_free;

	for (uint32_t i = 0; i < kept->capacity; i++) {
		uint64_t hottest = 0;
		uint32_t e, callee;

		if (!kept->used[i] || (e = (uint32_t)kept->keys[i]) >= rt.graph->n_edges)
			continue;
		callee = rt.graph->edges[e].callee;
		for (uint32_t k = 0; k < rt.graph->n_edges; k++)
			if (k != e && rt.graph->edges[k].callee == callee &&
			    rt.graph->edges[k].freq > hottest)
				hottest = rt.graph->edges[k].freq;
		if (rt.graph->edges[e].freq <= hottest)
			rt.graph->edges[e].freq = hottest + 1;
	}
}

/*
 * Observed calls become the frequencies the encoder orders edges by.  Those
 * counted while the current epoch encoded the edge are its encoded calls
 * too (restore_native_calls in rt.c gives back only counted ones).
 */
static void take_frequencies(void)
{
	const struct dacce_dict *d = rt.dict;
	uint32_t n = rt.graph->n_edges < RT_MAX_COUNTED_EDGES ? rt.graph->n_edges
							      : RT_MAX_COUNTED_EDGES;

	for (uint32_t e = 0; e < n; e++) {
		uint64_t hits = rt.edge_hits[e];

		if (rt.edge_counts && hits > rt.edge_counts[e].taken) {
			if (e < d->n_edges && d->edge_class[e] == DACCE_EDGE_ENCODED)
				rt.edge_counts[e].encoded += hits - rt.edge_counts[e].taken;
			rt.edge_counts[e].taken = hits;
		}
		if (hits > rt.graph->edges[e].freq)
			rt.graph->edges[e].freq = hits;
	}
	keep_tail_edges_free();
}

static int retire(struct dacce_dict *dict)
{
	if (ep.n_retired == ep.cap_retired) {
		size_t cap = ep.cap_retired ? ep.cap_retired * 2 : 8;
		struct dacce_dict **grown = realloc(ep.retired, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		ep.retired = grown;
		ep.cap_retired = cap;
	}
	ep.retired[ep.n_retired++] = dict;
	return 0;
}

/*
 * Whether a parked thread's context holds edge: a frame it entered is live
 * (contexts are exact, so every live frame is one of the context's; a
 * handler's context goes on through the one it interrupted).  A context that
 * does not decode is taken to hold it.
 */
static bool context_holds(const struct dacce_dict *dict, const struct parked *p, uint32_t edge)
{
	struct dacce_snapshot snap = dacce_snapshot_of(&p->st, p->node);
	struct dacce_path path;
	bool holds;

	dacce_path_init(&path);
	holds = dacce_decode_append(dict, rt.graph, &snap, &path, NULL) != 0;
	for (size_t i = 0; i < path.len && !holds; i++)
		holds = path.frames[i].edge == edge;
	dacce_path_fini(&path);
	return holds;
}

/*
 * With the world stopped and rt.lock held: installs next (encoded before the
 * stop; edges found since are later edges to it).  On success next belongs
 * to the runtime.  Nothing here may take a lock a program thread could hold:
 * memory comes from the runtime's own heap (private_alloc.h).
 */
static int reencode_stopped(struct dacce_dict *next)
{
	struct stopped all = { 0 };
	struct dacce_dict *prev = rt.dict;
	struct rt_code_plan *plan = NULL;
	int err;

	/* A module being unloaded may be gone from under the code written: not now. */
	if (rt.loader_busy)
		return -EAGAIN;
	err = collect(&all);
	for (size_t i = 0; i < all.n && !err && ep.taking_back != DACCE_NONE; i++) {
		if (!context_holds(prev, &all.threads[i], ep.taking_back))
			continue;
		ep.put_off.tid = all.threads[i].thread->tid;
		ep.put_off.pc = all.threads[i].thread->pc;
		ep.put_off.why = "a frame entered by a call given back lives";
		err = -EBUSY;
	}
	for (size_t i = 0; i < all.n && !err; i++) {
		struct dacce_decode_error why = { 0 };

		err = dacce_translate(prev, next, rt.graph, &all.threads[i].st, all.threads[i].node,
				      &why);
		if (err) {
			ep.put_off.tid = all.threads[i].thread->tid;
			ep.put_off.pc = all.threads[i].thread->pc;
			ep.put_off.why = why.message ? why.message : "no context";
			ep.put_off.keep_free = why.keep_free;
		}
		/* A frame without the tail record it would need: not soon gone, unlike -EAGAIN's cases. */
		if (err == -EAGAIN)
			err = -EBUSY;
	}
	if (!err)
		err = retire(prev); /* the one step that can fail after this is fatal */
	if (err)
		goto cleanup;
	rt.dict = next;
	err = rt_plan_code(&plan);
	if (err) {
		rt.dict = prev;
		ep.n_retired--;
		goto cleanup;
	}
	/* Committed from here on: nothing may fail half way. */
	for (size_t t = 0; t < all.n; t++)
		translate_marks_of(all.threads[t].thread, all.threads, all.n, prev, next);
	err = rt_apply_code(plan, moved, &all);
	if (err)
		rt_fatal("installing the code of a new epoch", err);
	for (size_t i = 0; i < all.n; i++) {
		struct dacce_thread *t = all.threads[i].thread;
		uintptr_t in_copy = t->resume_pc ? 0 : rt_relocated_resume(t->pc);

		if (in_copy)
			t->resume_pc = in_copy;
	}
	for (size_t i = 0; i < all.n; i++) {
		store_state(&all.threads[i]);
		all.threads[i].thread->tls->reset_id = next->max_id + 1;
	}
	dacce_patch_sync_cores();
cleanup:
	rt_plan_free(plan);
	for (size_t i = 0; i < all.n; i++)
		parked_fini(&all.threads[i]);
	free(all.threads);
	return err;
}

/* Edges found since the last epoch that an encoding would take in, and their pushes. */
static void fresh_edges(uint32_t *count, uint64_t *pushes)
{
	*count = 0;
	*pushes = 0;
	for (uint32_t e = rt.dict->n_edges; e < rt.graph->n_edges; e++) {
		const struct dacce_edge *edge = &rt.graph->edges[e];

		if ((edge->flags & DACCE_EDGE_PINNED) || !dacce_site_kind_is_encodable(edge->kind))
			continue;
		(*count)++;
		if (e < RT_MAX_COUNTED_EDGES)
			*pushes += rt.edge_hits[e];
	}
}

/*
 * Whether an epoch wanted for one hot edge alone is worth its stop: the
 * edge's calls since the last epoch, at their rate so far and for as long
 * again as the process has run (one that ran a second will likely run
 * another), would save more than the last epoch's pause.  gcc's cc1 stopped
 * three times for 20 ms each for tail calls made half a million times
 * (about 1 ms saved each); CPython's and lua's loops make millions a second.
 */
#define TAIL_CALL_SAVED_NS 2 /* a tail call that costs something, against a free one */
#define PUSH_SAVED_NS 5	     /* a push and pop of the ccStack, against an encoded add */
static bool worth_a_stop(uint64_t calls, long saved_per_call_ns)
{
	long now = now_ns(), window = now - ep.installed_ns, run = now - ep.started_ns;

	if (window <= 0 || ep.last_pause_ns <= 0)
		return true;
	return (double)calls / (double)window * (double)run * (double)saved_per_call_ns >=
	       (double)ep.last_pause_ns;
}

/* An edge's counted calls since the last encoding took its count in (take_frequencies). */
static uint64_t calls_since_encoding(uint32_t e)
{
	uint64_t hits = e < RT_MAX_COUNTED_EDGES ? rt.edge_hits[e] : 0;

	return hits > rt.graph->edges[e].freq ? hits - rt.graph->edges[e].freq : 0;
}

/*
 * A tail call that costs something (a record, the return through the stub)
 * made HOT_TAIL_CALLS times or more and twice as often as the edge its callee
 * is entered by for free: a re-encoding gives it the free place.  CPython's
 * deallocations are tail calls from _Py_Dealloc whose frequencies were
 * counted at start-up, when other callers of each deallocator ran more: 1.6
 * million tail calls through one edge with an En in a 400,000-record json
 * round trip.  Twice: an edge that loses the free place is counted from then
 * on, and must outrun the winner's count to take it back, so two edges
 * trading places make fewer and fewer epochs.
 */
#define HOT_TAIL_CALLS 10000
static uint32_t hot_tail_edge(void)
{
	const struct dacce_dict *d = rt.dict;
	uint32_t tried;

	for (uint32_t e = 0; e < d->n_edges && e < rt.graph->n_edges; e++) {
		uint32_t callee = d->edge_callee[e], free_in;
		uint64_t calls;

		if (!dacce_site_kind_is_tail(rt.graph->edges[e].kind) ||
		    d->edge_class[e] != DACCE_EDGE_ENCODED || d->en[e] == 0 ||
		    d->in_start[callee] == d->in_start[callee + 1])
			continue;
		calls = rt_edge_calls_seen(e);
		free_in = d->in_edges[d->in_start[callee]];
		if (calls >= HOT_TAIL_CALLS && d->en[free_in] == 0 &&
		    calls > 2 * rt_edge_calls_seen(free_in) &&
		    dacce_hashmap_get(&ep.tails_tried, e, &tried) != 0 &&
		    worth_a_stop(calls_since_encoding(e), TAIL_CALL_SAVED_NS))
			return e;
	}
	return DACCE_NONE;
}

/*
 * A back edge of a cycle (pushed at every call) pushed HOT_BACK_PUSHES times
 * since the last encoding: the encoder leaves the lightest edges of a cycle
 * back (encode.c), and its count may now outweigh an edge of its cycle that
 * was counted only while it was new.  lua5.4's table.sort comparator calls
 * (lua_callk to luaD_callnoyield, 3.8 million) were a back edge for the
 * whole run.  Each edge asks once, whatever the encoding then gives, so
 * edges of one cycle trading places cost one epoch each at most.  Not
 * recursion onto itself, which no encoding can take off the ccStack.
 */
#define HOT_BACK_PUSHES 20000
static uint32_t hot_back_edge(void)
{
	const struct dacce_dict *d = rt.dict;
	uint32_t tried;

	for (uint32_t e = 0; e < d->n_edges && e < rt.graph->n_edges && e < RT_MAX_COUNTED_EDGES;
	     e++) {
		uint64_t seen = rt.graph->edges[e].freq, hits = rt.edge_hits[e];

		if (d->edge_class[e] == DACCE_EDGE_BACK && d->edge_caller[e] != d->edge_callee[e] &&
		    hits >= seen + HOT_BACK_PUSHES && dacce_hashmap_get(&ep.backs_tried, e, &tried) != 0 &&
		    worth_a_stop(hits - seen, PUSH_SAVED_NS))
			return e;
	}
	return DACCE_NONE;
}

/*
 * The direct calls free in this epoch, counted since (rt.c, may_be_given_back),
 * that have made GIVE_BACK_CALLS calls: a re-encoding gives them the
 * program's own call back (restore_native_calls), when together they pay for
 * the stop.  Each edge asks once.  Together, because one stop gives back
 * every such call: gcc's `cc1` made 25 million calls through 1,500 such
 * edges after its last epoch, none of which paid for a stop on its own
 * (629,000 calls at most).  Returns the first, with all in ep.direct_candidates.
 */
#define FREE_CALL_SAVED_NS 2 /* a trampoline's two jumps, against the program's call */
static uint32_t direct_call_to_give_back(void)
{
	const struct dacce_dict *d = rt.dict;
	uint64_t calls = 0, *tail_calls = NULL;
	uint32_t tried;

	ep.n_direct_candidates = 0;
	if (!rt.edge_counts)
		return DACCE_NONE;
	for (uint32_t e = 0; e < d->n_edges && e < rt.graph->n_edges && e < RT_MAX_COUNTED_EDGES;
	     e++) {
		const struct dacce_edge *edge = &rt.graph->edges[e];
		uint64_t since = calls_since_encoding(e);

		/* The stop would not give back one into a function busy tail calls enter. */
		if ((edge->kind != DACCE_SITE_DIRECT && edge->kind != DACCE_SITE_PLT) ||
		    d->edge_class[e] != DACCE_EDGE_ENCODED || d->en[e] != 0 ||
		    (edge->flags & DACCE_EDGE_KEEP_FREE) || since == 0 ||
		    rt.edge_counts[e].encoded + since < GIVE_BACK_CALLS ||
		    dacce_hashmap_get(&ep.direct_tried, e, &tried) == 0 ||
		    !rt_tail_calls_cold(&tail_calls, edge->callee, rt.edge_counts[e].encoded + since))
			continue;
		if (ep.n_direct_candidates == ep.cap_direct_candidates) {
			size_t cap = ep.cap_direct_candidates ? 2 * ep.cap_direct_candidates : 64;
			uint32_t *grown = realloc(ep.direct_candidates, cap * sizeof(*grown));

			if (!grown)
				break; /* those found so far */
			ep.direct_candidates = grown;
			ep.cap_direct_candidates = cap;
		}
		ep.direct_candidates[ep.n_direct_candidates++] = e;
		calls += since;
	}
	free(tail_calls);
	if (!ep.n_direct_candidates || !worth_a_stop(calls, FREE_CALL_SAVED_NS)) {
		ep.n_direct_candidates = 0;
		return DACCE_NONE;
	}
	return ep.direct_candidates[0];
}

/*
 * Whether the pushes of the edges found since the last epoch pay for a stop
 * before the pause budget would allow one: at their rate so far, for as long
 * again as the process has run, they would cost more than the last pause.
 * gcc's `cc1` finds most of its 36,000 edges in bursts, as each pass of the
 * compiler first runs; after a pause of 20 ms the next epoch waited 400 ms
 * while millions of calls through new edges were pushed (a third of its
 * pushes).  Not while backing off from a failed attempt, which would fail
 * again as soon.
 */
static bool fresh_pushes_pay(void)
{
	uint32_t count;
	uint64_t pushes;

	fresh_edges(&count, &pushes);
	return count && pushes >= ep.hot_pushes && worth_a_stop(pushes, PUSH_SAVED_NS);
}

/* Sets ep.tail_wanted or ep.back_wanted when the only reason is a hot edge of that kind. */
static bool epoch_due(void)
{
	uint32_t count;
	uint64_t pushes;

	ep.tail_wanted = ep.back_wanted = ep.direct_wanted = DACCE_NONE;
	fresh_edges(&count, &pushes);
	if (count && (ep.stress || pushes >= ep.hot_pushes || count >= ep.new_edges))
		return true;
	if (ep.stress)
		return false;
	ep.tail_wanted = hot_tail_edge();
	if (ep.tail_wanted == DACCE_NONE)
		ep.back_wanted = hot_back_edge();
	if (ep.tail_wanted == DACCE_NONE && ep.back_wanted == DACCE_NONE)
		ep.direct_wanted = direct_call_to_give_back();
	return ep.tail_wanted != DACCE_NONE || ep.back_wanted != DACCE_NONE ||
	       ep.direct_wanted != DACCE_NONE;
}

/*
 * An epoch wanted only to make a hot tail edge free that the new encoding
 * does not make free (its callee's ranges start above 0, the edge closes a
 * cycle, ...): not worth a stop, and that edge is not tried again.
 */
static bool encoding_helps(const struct dacce_dict *next)
{
	uint32_t e = ep.tail_wanted;

	if (ep.back_wanted != DACCE_NONE) {
		e = ep.back_wanted;
		dacce_hashmap_put(&ep.backs_tried, e, 1);
		return e < next->n_edges && next->edge_class[e] == DACCE_EDGE_ENCODED;
	}
	if (ep.direct_wanted != DACCE_NONE) {
		bool helps = false;

		for (size_t i = 0; i < ep.n_direct_candidates; i++) {
			e = ep.direct_candidates[i];
			dacce_hashmap_put(&ep.direct_tried, e, 1);
			/* else nothing to give back */
			helps = helps || (e < next->n_edges &&
					  next->edge_class[e] == DACCE_EDGE_ENCODED && next->en[e] == 0);
		}
		return helps;
	}
	if (e == DACCE_NONE)
		return true;
	if (e < next->n_edges && next->edge_class[e] == DACCE_EDGE_ENCODED && next->en[e] == 0)
		return true;
	dacce_hashmap_put(&ep.tails_tried, e, 1);
	return false;
}

/*
 * An epoch for a hot tail call into a function whose free place a given-back
 * call holds (restore_native_calls in rt.c) takes that call back: else the
 * encoder keeps the call free and the epoch is not worth its stop.  The stop
 * then makes sure no frame the native call entered is live (context_holds):
 * it returns to the site, past any code that could undo a new operation.
 * A tail edge whose attempts found such a frame TAKE_BACK_TRIES times is
 * left as it is (a frame that lives as long as the program).
 */
#define TAKE_BACK_TRIES 3
static void take_back_for_tail(void)
{
	uint32_t call, tries = 0;
	sigset_t saved;

	ep.taking_back = DACCE_NONE;
	if (ep.tail_wanted == DACCE_NONE)
		return;
	rt_lock(&saved);
	call = rt_given_back_into(rt.graph->edges[ep.tail_wanted].callee);
	(void)dacce_hashmap_get(&ep.take_back_tries, ep.tail_wanted, &tries);
	if (call != DACCE_NONE && tries < TAKE_BACK_TRIES && rt_take_back_call(call) == 0)
		ep.taking_back = call;
	rt_unlock(&saved);
}

/* Undoes take_back_for_tail when its epoch is not installed; counts a try the stop refused. */
static void give_back_again(void)
{
	uint32_t tries = 0;
	sigset_t saved;

	if (ep.taking_back == DACCE_NONE)
		return;
	rt_lock(&saved);
	rt_give_back_again(ep.taking_back);
	rt_unlock(&saved);
	if (ep.tail_wanted != DACCE_NONE) {
		(void)dacce_hashmap_get(&ep.take_back_tries, ep.tail_wanted, &tries);
		if (dacce_hashmap_put(&ep.take_back_tries, ep.tail_wanted, tries + 1) != 0 ||
		    tries + 1 >= TAKE_BACK_TRIES)
			(void)dacce_hashmap_put(&ep.tails_tried, ep.tail_wanted, 1);
	}
	ep.taking_back = DACCE_NONE;
}

/*
 * The next epoch's dictionary, from the graph and frequencies as they are
 * now.  Encoded from a copy, outside the lock: encoding gcc's `cc1` (36,000
 * edges) took up to 16 ms, while its first calls waited for the lock; the
 * copy takes a fraction of a millisecond.  Edges found meanwhile are later
 * edges to the result, as are those found before the stop.
 */
static int encode_next(struct dacce_dict **next)
{
	struct dacce_encode_opts opts;
	sigset_t saved;
	int err = 0;

	if (!ep.graph_copy && !(ep.graph_copy = dacce_graph_new_copy()))
		return -ENOMEM;
	rt_lock(&saved);
	take_frequencies();
	dacce_encode_opts_default(&opts);
	opts.epoch = rt.dict->epoch + 1;
	err = dacce_graph_copy_for_encoding(rt.graph, ep.graph_copy);
	rt_unlock(&saved);
	return err ? err : dacce_encode(ep.graph_copy, &opts, next);
}

void dacce_epoch_announce(const struct dacce_dict *dict, long pause_ns)
{
	uint32_t driver = dict->epoch == 0 ? DACCE_EPOCH_BY_START : ep.driver;
	uint8_t *buf = NULL;
	size_t len = 0;

	if (DACCE_PROBE_EPOCH_WANTED() && dacce_dict_serialize(dict, &buf, &len))
		buf = NULL, len = 0; /* the tracer learns the epoch without its dictionary */
	DACCE_PROBE(epoch, dict->epoch, dict->max_id, dict->n_nodes, dict->n_edges, buf, len,
		    pause_ns, driver);
	free(buf);
}

/* One re-encoding: 0 when installed, -EAGAIN or -ENOLINK when not now. */
static int reencode(void)
{
	struct dacce_dict *next = NULL;
	long start = now_ns(), pause;
	uint64_t epoch = 0, used_before, used;
	size_t ahead;
	sigset_t saved;
	bool retry_soon;
	int err;

	take_back_for_tail();
	/* Encoding sorts with qsort, which may call malloc: before the stop, not during. */
	err = encode_next(&next);
	if (err) {
		/* -EDEADLK: a call given back would cost something (encode.c); never expected. */
		dacce_rt_log(false, "epoch not encoded: %s", strerror(-err));
		give_back_again();
		return err;
	}
	if (!encoding_helps(next)) {
		give_back_again();
		dacce_dict_free(next);
		return 0;
	}
	/*
	 * The code, built while the program runs.  Not after an attempt that was
	 * put off: a thread that stays in a callback would have every attempt
	 * build code that is never used, and the code cache keeps all of it.
	 */
	used_before = rt.n_prebuilt_used;
	if (!ep.last_put_off)
		rt_prebuild_code(next);
	dacce_threads_lock();
	for (int busy = 0, undecodable = 0;;) {
		struct timespec moment = { 0 };

		ep.put_off.why = NULL;
		ep.put_off.keep_free = DACCE_NONE;
		start = now_ns();
		err = dacce_stop_world();
		if (err)
			break;
		rt_lock(&saved);
		err = reencode_stopped(next);
		epoch = rt.dict->epoch;
		rt_unlock(&saved);
		dacce_resume_world();
		if (err == -EAGAIN && ++busy < TRANSIENT_RETRIES)
			moment.tv_nsec = 200 * 1000;
		else if ((err == -EILSEQ || err == -ENOLINK) && ++undecodable < UNDECODABLE_RETRIES)
			moment.tv_nsec = UNDECODABLE_RETRY_NS;
		else
			break;
		nanosleep(&moment, NULL);
	}
	dacce_threads_unlock();
	pause = now_ns() - start;
	ahead = dacce_prebuilt_count();
	used = rt.n_prebuilt_used - used_before;
	/*
	 * Put off for a tail edge that the next attempt, soon, leaves free: that
	 * encoding differs little, so this one's code is kept for it (a
	 * trampoline is taken only for the same edge, target and operation).
	 * Rebuilding all of it with the world stopped made such a retry's pause
	 * twice or three times the others (cc1: 29 to 39 ms).
	 */
	retry_soon = err && ep.put_off.keep_free != DACCE_NONE;
	if (!retry_soon)
		rt_prebuilt_drop();
	ep.last_put_off = err && !retry_soon;
	if (err) {
		if (ep.put_off.why)
			dacce_rt_log(false, "epoch %llu put off: thread %d at %#lx: %s",
				     (unsigned long long)next->epoch, (int)ep.put_off.tid,
				     (unsigned long)ep.put_off.pc, ep.put_off.why);
		give_back_again();
		/* The next attempt leaves that tail edge free: it need not wait for the frame. */
		if (ep.put_off.keep_free != DACCE_NONE &&
		    dacce_hashmap_put(&ep.keep_free, ep.put_off.keep_free, 1) != 0) {
			ep.put_off.keep_free = DACCE_NONE;
			rt_prebuilt_drop();
		}
		dacce_dict_free(next);
		return err;
	}
	if (ep.taking_back != DACCE_NONE) {
		rt.n_taken_back++;
		dacce_rt_log(false, "epoch %llu takes back the call given back through edge %u",
			     (unsigned long long)epoch, ep.taking_back);
	}
	ep.taking_back = DACCE_NONE;
	ep.epochs++;
	ep.installed_ns = now_ns();
	ep.last_pause_ns = pause;
	ep.quiet_until_ns = ep.installed_ns + ep.pause_budget * pause;
	ep.backing_off = false;
	ep.pause_total_ns += pause;
	if (pause > ep.pause_max_ns)
		ep.pause_max_ns = pause;
	dacce_epoch_announce(rt.dict, pause);
	dacce_rt_log(false,
		     "epoch %llu installed%s: %u edges, maxID %llu, threads paused %ld us, "
		     "%llu of its trampolines built ahead (%zu)",
		     (unsigned long long)epoch,
		     ep.tail_wanted != DACCE_NONE     ? " for a hot tail call"
		     : ep.back_wanted != DACCE_NONE   ? " for a hot back edge"
		     : ep.direct_wanted != DACCE_NONE ? " to give direct calls back"
						      : "",
		     rt.graph->n_edges,
		     (unsigned long long)rt.dict->max_id, pause / 1000,
		     (unsigned long long)used, ahead);
	return 0;
}

#define LIVENESS_MS 100

/* CPU time of the program's threads (the process's, less this thread's), in ns. */
static long program_cpu_ns(void)
{
	struct timespec process, self;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &process) ||
	    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &self))
		return LONG_MAX; /* not known: as if it ran */
	return (process.tv_sec - self.tv_sec) * 1000000000L + (process.tv_nsec - self.tv_nsec);
}

/*
 * Whether the policy looks at every edge now (epoch_due, rt_reorder_dispatch,
 * a fraction of a millisecond each time for gcc's cc1's 36,000 edges).
 * Edges get hot only while the program runs: after a new edge, or once its
 * threads have run for an interval's worth of CPU time since the last look.
 * A busy program is looked at every interval as before; an idle one (a
 * server waiting for requests) is not, where looking every 20 ms took 2 %
 * of a core for CPython's 10,000 edges.  Called holding the lock.
 */
static bool worth_a_look(void)
{
	long cpu = program_cpu_ns();

	/* A clock that went back (a fork child's, which starts again) counts as run. */
	if (rt.graph->n_edges == ep.edges_at_check && cpu >= ep.program_cpu_at_check &&
	    cpu - ep.program_cpu_at_check < ep.interval_ms * 1000000L)
		return false;
	ep.edges_at_check = rt.graph->n_edges;
	ep.program_cpu_at_check = cpu;
	ep.checks++;
	return true;
}

static void *policy_main(void *unused)
{
	(void)unused;
	dacce_thread_self()->runtime_own = true;
	/* All this thread runs is the runtime: so its samples read (tls.h). */
	dacce_tls_self()->runtime_depth = 1;
	/*
	 * Stacks nobody reads: the program's code that libraries reach from here
	 * (its own malloc, from qsort) runs natively but through the trampolines
	 * of sites already patched, which push and pop on them.
	 */
	dacce_rt_thread_partial();
	/* The descriptors it keeps, opened while its starter waits (keptfd.h). */
	(void)dacce_patch_mem_prepare();
	dacce_control_connect();
	atomic_store(&ep.thread_ready, 1);
	syscall(SYS_futex, &ep.thread_ready, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	for (;;) {
		long ms = ep.backoff_ms < LIVENESS_MS ? ep.backoff_ms : LIVENESS_MS;
		struct timespec wait = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
		unsigned nudges = atomic_load(&ep.nudges);
		sigset_t saved;
		bool due, asked, look;
		int err, threads;

		/*
		 * With a controller, which decides when, this thread waits for its
		 * requests, waking every LIVENESS_MS for the checks below (a thread
		 * ending is noticed that late).  Waking every interval instead took
		 * 10 to 17 % of a QEMU guest's samples, where system calls are
		 * emulated.  Without one, it sleeps until the interval is over, or a
		 * nudge (a new edge in stress mode, a thread ending).
		 */
		if (dacce_control_attached() && !ep.stress)
			dacce_control_wait(LIVENESS_MS);
		else
			syscall(SYS_futex, &ep.nudges, FUTEX_WAIT_PRIVATE, nudges, &wait, NULL, 0);
		/* A thread not made by pthread_create (glibc's timer helper): patches take the int3 steps. */
		threads = dacce_watch_threads();
		if (threads != 2)
			dacce_patch_sole_thread(false);
		dacce_signals_reclaim_trap();
		/* The count includes a main thread gone by pthread_exit (a zombie until the process ends). */
		if (dacce_watch_alone(threads)) {
			/* Exit handlers are program code: they run with a partial context, as after main. */
			dacce_rt_thread_partial();
			exit(0);
		}
		/* A controller decides when; only the stress test still forces every edge. */
		asked = dacce_control_take_request();
		rt_lock(&saved);
		if (rt.summary_written) {
			rt_unlock(&saved);
			if (asked)
				dacce_control_done(-ECANCELED, rt.dict->epoch);
			continue;
		}
		rt_code_names_flush();
		dacce_scan_cache_save_if_due();
		/* epoch_due sets them, when it is asked */
		ep.tail_wanted = ep.back_wanted = ep.direct_wanted = DACCE_NONE;
		look = asked || ep.stress || worth_a_look();
		if (look)
			rt_reorder_dispatch();
		due = asked || ep.stress ||
		      (look && !dacce_control_attached() &&
		       (now_ns() >= ep.quiet_until_ns || (!ep.backing_off && fresh_pushes_pay())));
		due = due && (asked || epoch_due());
		rt_unlock(&saved);
		if (!due)
			continue;
		ep.driver = asked ? DACCE_EPOCH_BY_CONTROLLER : DACCE_EPOCH_BY_RUNTIME;
		err = reencode();
		if (asked)
			dacce_control_done(err, rt.dict->epoch);
		if (!err || ep.put_off.keep_free != DACCE_NONE) {
			/* Done, or to be tried again soon with a tail edge kept free. */
			ep.backoff_ms = ep.interval_ms;
		} else {
			/*
			 * Not now (a thread long in a callback, a frame without the
			 * tail record it would need): wait longer each time, so a
			 * thread that stays there costs less and less encoding.
			 */
			ep.given_up++;
			ep.quiet_until_ns = now_ns() + ep.backoff_ms * 1000000L;
			ep.backing_off = true;
			if (ep.backoff_ms < MAX_BACKOFF_MS)
				ep.backoff_ms = ep.backoff_ms * 2 + 1;
		}
	}
	return NULL;
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static int start_policy_thread(void)
{
	/* The real one: ours would make it a program thread. */
	pthread_create_fn create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
	struct dacce_single_thread before;
	sigset_t all, saved;
	int err;

	if (!create)
		return -ENOSYS;
	dacce_single_thread_note(&before);
	/* Every signal blocked (but traps: trap.h): the program's signals go to the program's threads. */
	dacce_signals_but_trap(&all);
	/* Its files, while no program thread runs beside us (keptfd.h). */
	dacce_watch_open();
	atomic_store(&ep.thread_ready, 0);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	err = create(&ep.thread, NULL, policy_main, NULL);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (err)
		return -err;
	while (atomic_load(&ep.thread_ready) == 0)
		syscall(SYS_futex, &ep.thread_ready, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	pthread_detach(ep.thread);
	ep.running = true;
	/* From here on the policy thread keeps single_thread.h's rule. */
	if (dacce_single_thread_restore(&before))
		dacce_rt_log(false, "glibc still sees one thread: the policy thread keeps out of its way");
	return 0;
}

int dacce_epoch_start(void)
{
	const char *off = dacce_env("DACCE_EPOCHS");
	const char *stress = dacce_env("DACCE_EPOCH_STRESS");
	int err;

	ep.off = off && strcmp(off, "0") == 0;
	ep.stress = stress && *stress && strcmp(stress, "0") != 0;
	ep.interval_ms = env_long("DACCE_EPOCH_INTERVAL_MS", DEFAULT_INTERVAL_MS);
	if (ep.interval_ms < 1)
		ep.interval_ms = 1;
	ep.hot_pushes = (uint64_t)env_long("DACCE_EPOCH_HOT_PUSHES", DEFAULT_HOT_PUSHES);
	ep.new_edges = (uint32_t)env_long("DACCE_EPOCH_NEW_EDGES", DEFAULT_NEW_EDGES);
	ep.pause_budget = env_long("DACCE_EPOCH_PAUSE_BUDGET", DEFAULT_PAUSE_BUDGET);
	if (ep.pause_budget < 0)
		ep.pause_budget = 0;
	ep.backoff_ms = ep.interval_ms;
	ep.started_ns = ep.installed_ns = now_ns();
	ep.taking_back = DACCE_NONE;
	if (ep.off)
		return 0;
	dacce_control_configure();
	err = dacce_stop_init();
	return err ? err : start_policy_thread();
}

void dacce_epoch_nudge(void)
{
	if (!ep.running)
		return;
	atomic_fetch_add(&ep.nudges, 1);
	syscall(SYS_futex, &ep.nudges, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void dacce_epoch_new_edge(void)
{
	/* Only the stress test wants an epoch per edge; otherwise the interval decides. */
	if (ep.stress)
		dacce_epoch_nudge();
}

void dacce_epoch_after_fork(void)
{
	dacce_control_forget();
	ep.program_cpu_at_check = 0; /* the child's CPU clock starts again */
	/* The policy thread did not come along; the child gets its own. */
	if (ep.running && start_policy_thread())
		dacce_rt_log(true, "no re-encoding in process %d: cannot start the policy thread",
			     (int)getpid());
}

const struct dacce_dict *dacce_epoch_dict(uint64_t epoch)
{
	if (rt.dict && rt.dict->epoch == epoch)
		return rt.dict;
	/* Retired in order: epoch k's dictionary is the k-th. */
	if (epoch < ep.n_retired && ep.retired[epoch]->epoch == epoch)
		return ep.retired[epoch];
	return NULL;
}

void dacce_epoch_summary(char *buf, size_t len)
{
	snprintf(buf, len,
		 "%llu epochs (threads paused %ld us in all, %ld us at most), %llu put off, "
		 "%llu policy checks",
		 (unsigned long long)ep.epochs, ep.pause_total_ns / 1000, ep.pause_max_ns / 1000,
		 (unsigned long long)ep.given_up, (unsigned long long)ep.checks);
}
