// SPDX-License-Identifier: MIT
/*
 * Reference simulator: random programs run under exactly the instrumentation
 * semantics of machine.h, with re-encodings at random points, and at every
 * step the decoded context must equal the true call stack.
 *
 * A program is a set of functions, each with call sites (direct, indirect
 * with up to thousands of targets, PLT, direct and indirect tail calls).
 * Threads are created with the creator's context as a prefix; signals and
 * callbacks arrive as nested roots, nested too.  Call edges are discovered
 * when first executed, as the runtime discovers them, so each epoch starts
 * with unencoded edges that the next one encodes.  Re-encodings use random
 * id limits (forcing demotions), random dispatch thresholds and compression
 * settings, go through the dictionary file format, and translate every live
 * thread's state.
 *
 * Prints: simulate: programs=P calls=C reencodings=R mismatches=M
 * Exit status: 0 when M == 0 (or, with --expect-mismatch, when M > 0).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "dict.h"
#include "dict_io.h"
#include "graph.h"
#include "machine.h"
#include "translate.h"

/* ------------------------------------------------------------------ random */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint32_t rnd_below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static bool chance(double p)
{
	return (double)(rnd() >> 11) / (double)(1ULL << 53) < p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		fprintf(stderr, "simulate: out of memory\n");
		exit(2);
	}
	return p;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (!p) {
		fprintf(stderr, "simulate: out of memory\n");
		exit(2);
	}
	return p;
}

/* ------------------------------------------------------------------ programs */

struct sim_site {
	uint32_t fn;
	uint8_t kind;
	uint32_t *targets;
	uint32_t n_targets;
	uint32_t graph_site; /* DACCE_NONE until first executed */
};

struct sim_fn {
	uint32_t node; /* DACCE_NONE until first entered */
	uint32_t first_site, n_sites;
	bool leaf;     /* a library function that calls nothing back (graph.h's leaf edges) */
};

struct program {
	struct sim_fn *fns;
	uint32_t n_fns;
	struct sim_site *sites;
	uint32_t n_sites;
	uint32_t *thread_starts, n_thread_starts;
	uint32_t *handlers, n_handlers;
	double p_return; /* base probability of returning at a step */
	uint32_t max_depth;
	uint32_t call_budget;
};

static uint8_t random_site_kind(void)
{
	uint32_t r = rnd_below(100);

	if (r < 55)
		return DACCE_SITE_DIRECT;
	if (r < 72)
		return DACCE_SITE_INDIRECT;
	if (r < 78)
		return DACCE_SITE_PLT;
	if (r < 92)
		return DACCE_SITE_TAIL_DIRECT;
	return DACCE_SITE_TAIL_INDIRECT;
}

static void generate_program(struct program *p)
{
	bool big_indirect = chance(0.05);
	uint32_t n_core = 3 + rnd_below(chance(0.2) ? 120 : 30);
	uint32_t n_extra = big_indirect ? 500 + rnd_below(2500) : 0;
	uint32_t n_leaves = chance(0.7) ? 1 + rnd_below(6) : 0, first_leaf = n_core + n_extra;
	double p_leaf = n_leaves ? 0.05 + 0.25 * (double)rnd_below(100) / 100.0 : 0;

	memset(p, 0, sizeof(*p));
	p->n_fns = n_core + n_extra + n_leaves;
	p->fns = xcalloc(p->n_fns, sizeof(*p->fns));
	for (uint32_t f = 0; f < p->n_fns; f++) {
		/* main always calls something; leaves call nothing */
		uint32_t n_sites = f == 0 ? 1 + rnd_below(5) : f < n_core ? rnd_below(6)
							  : f < first_leaf ? rnd_below(2) : 0;

		p->fns[f].node = DACCE_NONE;
		p->fns[f].leaf = f >= first_leaf;
		p->fns[f].first_site = p->n_sites;
		p->fns[f].n_sites = n_sites;
		p->sites = xrealloc(p->sites, sizeof(*p->sites) * (p->n_sites + n_sites));
		for (uint32_t k = 0; k < n_sites; k++) {
			struct sim_site *s = &p->sites[p->n_sites++];
			bool many;

			s->fn = f;
			s->kind = random_site_kind();
			s->graph_site = DACCE_NONE;
			many = s->kind == DACCE_SITE_INDIRECT || s->kind == DACCE_SITE_TAIL_INDIRECT;
			s->n_targets = many ? 2 + rnd_below(12) : 1;
			/* The big site of the program, on main's path. */
			if (big_indirect && f < 2 && k == 0 && s->kind == DACCE_SITE_INDIRECT)
				s->n_targets = n_extra;
			s->targets = xcalloc(s->n_targets, sizeof(*s->targets));
			for (uint32_t t = 0; t < s->n_targets; t++)
				s->targets[t] = s->n_targets == n_extra && big_indirect
							? n_core + t
						: chance(p_leaf) ? first_leaf + rnd_below(n_leaves)
							: rnd_below(n_core);
		}
	}
	p->n_thread_starts = 1 + rnd_below(3);
	p->thread_starts = xcalloc(p->n_thread_starts, sizeof(uint32_t));
	for (uint32_t i = 0; i < p->n_thread_starts; i++)
		p->thread_starts[i] = rnd_below(n_core);
	p->n_handlers = 1 + rnd_below(2);
	p->handlers = xcalloc(p->n_handlers, sizeof(uint32_t));
	for (uint32_t i = 0; i < p->n_handlers; i++)
		p->handlers[i] = rnd_below(n_core);
	/* Some programs recurse deeply, most stay shallow. */
	if (chance(0.05)) {
		p->p_return = 0.05;
		p->max_depth = 3000;
	} else {
		p->p_return = 0.25 + 0.3 * (double)rnd_below(100) / 100.0;
		p->max_depth = 64 + rnd_below(200);
	}
	p->call_budget = 300 + rnd_below(2200);
}

static void free_program(struct program *p)
{
	for (uint32_t i = 0; i < p->n_sites; i++)
		free(p->sites[i].targets);
	free(p->sites);
	free(p->fns);
	free(p->thread_starts);
	free(p->handlers);
}

/* ------------------------------------------------------------------ threads */

/* A logical frame of the true stack. */
struct lframe {
	uint32_t node;
	uint32_t edge;
};

/* RF_NATIVE: a call through an edge free for good, run as the program's own call (no op). */
enum rframe_kind { RF_ROOT, RF_CALL, RF_NESTED, RF_NATIVE };

/* A real (machine) frame: one return address. */
struct rframe {
	uint8_t kind;
	uint32_t edge;
	uint32_t lstart; /* its first logical frame */
};

struct thread {
	bool alive;
	struct dacce_state st;
	struct lframe *l;
	uint32_t n_l, cap_l;
	struct rframe *r;
	uint32_t n_r, cap_r;
	/* Creation prefix: snapshots (owning their ccStack copies) and truth. */
	struct dacce_snapshot *prefix;
	uint32_t n_prefix;
	struct lframe *prefix_truth; /* innermost first */
	uint32_t n_prefix_truth;
};

struct stats {
	uint64_t programs, calls, reencodings, put_off, mismatches, checks;
	/* Coverage: proof that every mechanism was exercised. */
	uint64_t tail_calls, nested_roots, threads, chain_checks, dispatch_hits;
	uint64_t demoted_edges, back_edges, compressed_pushes, caught_programs;
	uint64_t leaf_calls, leaf_checks, kept_edges, native_calls, taken_back;
	uint32_t max_depth, max_cc_depth;
};

struct sim {
	struct program prog;
	struct dacce_graph *graph;
	uint32_t module;
	struct dacce_dict **dicts; /* by epoch */
	uint32_t n_dicts;
	struct thread *threads;
	uint32_t n_threads, max_threads;
	struct stats *stats;
	uint64_t seed, program_index;
	bool mutate, roundtrip;
	bool keep_free; /* this program makes free edges free for good, as the runtime does */
	uint64_t step;
};

static const struct dacce_dict *current_dict(const struct sim *s)
{
	return s->dicts[s->n_dicts - 1];
}

static const struct dacce_dict *dict_by_epoch(void *ctx, uint64_t epoch)
{
	const struct sim *s = ctx;

	return epoch < s->n_dicts ? s->dicts[epoch] : NULL;
}

static int mismatch(struct sim *s, const char *what, int code)
{
	/* Mutated runs expect mismatches: only the summary matters there. */
	if (!s->mutate && s->stats->mismatches < 5)
		fprintf(stderr,
			"simulate: mismatch: %s (%d) at step %llu; rerun: simulate --seed %llu --program %llu\n",
			what, code, (unsigned long long)s->step, (unsigned long long)s->seed,
			(unsigned long long)s->program_index);
	s->stats->mismatches++;
	return -1;
}

static void push_l(struct thread *t, uint32_t node, uint32_t edge)
{
	if (t->n_l == t->cap_l) {
		t->cap_l = t->cap_l ? t->cap_l * 2 : 64;
		t->l = xrealloc(t->l, sizeof(*t->l) * t->cap_l);
	}
	t->l[t->n_l++] = (struct lframe){ .node = node, .edge = edge };
}

static void push_r(struct thread *t, enum rframe_kind kind, uint32_t edge)
{
	if (t->n_r == t->cap_r) {
		t->cap_r = t->cap_r ? t->cap_r * 2 : 64;
		t->r = xrealloc(t->r, sizeof(*t->r) * t->cap_r);
	}
	t->r[t->n_r++] = (struct rframe){ .kind = (uint8_t)kind, .edge = edge, .lstart = t->n_l };
}

static void free_thread(struct thread *t)
{
	dacce_state_fini(&t->st);
	free(t->l);
	free(t->r);
	for (uint32_t i = 0; i < t->n_prefix; i++)
		free((void *)t->prefix[i].cc);
	free(t->prefix);
	free(t->prefix_truth);
	memset(t, 0, sizeof(*t));
}

static void die_errno(const char *what, int err)
{
	fprintf(stderr, "simulate: %s: %s\n", what, strerror(-err));
	exit(2);
}

/* The graph node of a function, added when first entered. */
static uint32_t node_of(struct sim *s, uint32_t fn)
{
	int err;

	if (s->prog.fns[fn].node == DACCE_NONE) {
		err = dacce_graph_add_node(s->graph, s->module, 0x1000 + 0x10 * (uint64_t)fn,
					   &s->prog.fns[fn].node);
		if (err)
			die_errno("add node", err);
	}
	return s->prog.fns[fn].node;
}

static uint32_t fn_of_node(const struct sim *s, uint32_t node)
{
	return (uint32_t)((s->graph->nodes[node].offset - 0x1000) / 0x10);
}

/* ------------------------------------------------------------------ checking */

/*
 * Where the runtime and the sampler say a thread is: its function, or, in a
 * leaf (library code), the call out just pushed when there is one (id =
 * maxID + 1), else DACCE_IN_LEAF: the id names the leaf call.
 */
static uint32_t where(const struct sim *s, const struct dacce_dict *d, const struct thread *t)
{
	uint32_t node = t->l[t->n_l - 1].node;
	struct dacce_edge_view top;

	if (!s->prog.fns[fn_of_node(s, node)].leaf)
		return node;
	if (t->st.cc_depth > 0 && t->st.id == d->max_id + 1 &&
	    dacce_dict_edge(d, s->graph, t->st.cc[t->st.cc_depth - 1].edge, &top) == 0 &&
	    top.callee == node)
		return node;
	return DACCE_IN_LEAF;
}

static bool frames_equal(const struct dacce_frame *got, const struct lframe *want, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (got[i].node != want[i].node || got[i].edge != want[i].edge)
			return false;
	return true;
}

/* Decodes the thread's own context and compares it with the true stack. */
static int check_thread(struct sim *s, struct thread *t)
{
	struct dacce_decode_error err = { 0 };
	struct dacce_snapshot snap = dacce_snapshot_of(&t->st, where(s, current_dict(s), t));
	struct dacce_path path;
	int ret;

	s->stats->checks++;
	s->stats->leaf_checks += snap.node == DACCE_IN_LEAF;
	dacce_path_init(&path);
	ret = dacce_decode_append(current_dict(s), s->graph, &snap, &path, &err);
	if (ret) {
		dacce_path_fini(&path);
		return mismatch(s, err.message ? err.message : "decode failed", ret);
	}
	bool ok = path.len == t->n_l;

	for (uint32_t i = 0; ok && i < t->n_l; i++)
		ok = path.frames[i].node == t->l[t->n_l - 1 - i].node &&
		     path.frames[i].edge == t->l[t->n_l - 1 - i].edge;
	dacce_path_fini(&path);
	return ok ? 0 : mismatch(s, "decoded context differs from the true stack", 0);
}

/* Decodes own context plus every creation prefix, each in its own epoch. */
static int check_chain(struct sim *s, struct thread *t)
{
	struct dacce_decode_error err = { 0 };
	struct dacce_snapshot *chain = xcalloc(t->n_prefix + 1, sizeof(*chain));
	struct dacce_path path;
	int ret;

	s->stats->chain_checks++;
	chain[0] = dacce_snapshot_of(&t->st, t->l[t->n_l - 1].node);
	memcpy(chain + 1, t->prefix, sizeof(*chain) * t->n_prefix);
	dacce_path_init(&path);
	ret = dacce_decode_chain(dict_by_epoch, s, s->graph, chain, t->n_prefix + 1, &path, &err);
	free(chain);
	if (ret) {
		dacce_path_fini(&path);
		return mismatch(s, err.message ? err.message : "chain decode failed", ret);
	}
	bool ok = path.len == (size_t)t->n_l + t->n_prefix_truth;

	for (uint32_t i = 0; ok && i < t->n_l; i++)
		ok = path.frames[i].node == t->l[t->n_l - 1 - i].node &&
		     path.frames[i].edge == t->l[t->n_l - 1 - i].edge;
	if (ok) {
		struct dacce_frame *rest = path.frames + t->n_l;

		ok = frames_equal(rest, t->prefix_truth, t->n_prefix_truth);
	}
	dacce_path_fini(&path);
	return ok ? 0 : mismatch(s, "decoded thread chain differs from the truth", 0);
}

/* ------------------------------------------------------------------ epochs */

static void mutate_dict(struct dacce_dict *d)
{
	/* One wrong fact per encoding; any of them must be caught. */
	for (int tries = 0; tries < 64; tries++) {
		uint32_t which = rnd_below(3);

		if (which == 0 && d->n_edges) {
			uint32_t e = rnd_below(d->n_edges);

			if (d->edge_class[e] == DACCE_EDGE_ENCODED && d->en[e] > 0) {
				d->en[e]--;
				return;
			}
		} else if (which == 1 && d->max_id > 0) {
			d->max_id--;
			return;
		} else if (which == 2 && d->n_nodes) {
			uint32_t n = rnd_below(d->n_nodes);

			if (d->num_cc[n] > 1) {
				d->num_cc[n]--;
				return;
			}
		}
	}
}

static struct dacce_dict *through_file_format(struct dacce_dict *dict)
{
	struct dacce_dict *back = NULL;
	const char *why = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	err = dacce_dict_serialize(dict, &buf, &len);
	if (err)
		die_errno("serialize dictionary", err);
	err = dacce_dict_deserialize(buf, len, &back, &why);
	if (err) {
		fprintf(stderr, "simulate: dictionary did not read back: %s\n", why ? why : "?");
		exit(2);
	}
	free(buf);
	dacce_dict_free(dict);
	return back;
}

static void encode_epoch(struct sim *s)
{
	struct dacce_encode_opts opts;
	struct dacce_dict *dict = NULL;
	int err;

	dacce_encode_opts_default(&opts);
	opts.epoch = s->n_dicts;
	if (chance(0.3))
		opts.id_limit = 2 + rnd_below(chance(0.5) ? 8 : 200);
	opts.dispatch_min_targets = rnd_below(4) == 0 ? 0 : 2 + rnd_below(14);
	opts.compress_back_edges = chance(0.7);
	opts.compress_unencoded = chance(0.5);
	err = dacce_encode(s->graph, &opts, &dict);
	if (err)
		die_errno("encode", err);
	for (uint32_t e = 0; e < dict->n_edges; e++) {
		bool nested = dacce_site_kind_is_nested_root(dict->site_kind[dict->edge_site[e]]);

		s->stats->demoted_edges += !nested && dict->edge_class[e] == DACCE_EDGE_UNENCODED;
		s->stats->back_edges += dict->edge_class[e] == DACCE_EDGE_BACK;
	}
	if (s->roundtrip)
		dict = through_file_format(dict);
	if (s->mutate && s->n_dicts > 0) {
		mutate_dict(dict);
		err = dacce_dict_index(dict);
		/* Overlapping leaf ranges: the file reader would refuse it, so it is caught. */
		if (err == -EBADMSG)
			mismatch(s, "leaf ranges overlap", err);
		else if (err)
			die_errno("index dictionary", err);
	}
	s->dicts = xrealloc(s->dicts, sizeof(*s->dicts) * (s->n_dicts + 1));
	s->dicts[s->n_dicts++] = dict;
}

/*
 * What the runtime does after an epoch: some call edges encoded at 0 become
 * free for good (their sites run the program's own call from then on).  The
 * encoder must keep them so (dacce_encode fails otherwise), and their frames
 * return without any op: a broken promise shows as a wrong context.
 */
static void keep_free_edges(struct sim *s)
{
	const struct dacce_dict *d = current_dict(s);

	for (uint32_t e = 0; e < d->n_edges; e++) {
		const struct dacce_edge *edge = &s->graph->edges[e];

		if (d->edge_class[e] != DACCE_EDGE_ENCODED || d->en[e] != 0 ||
		    dacce_site_kind_is_tail(edge->kind) ||
		    dacce_site_kind_is_nested_root(edge->kind) ||
		    (edge->flags & (DACCE_EDGE_LEAF | DACCE_EDGE_PINNED | DACCE_EDGE_KEEP_FREE)) ||
		    edge->callee == DACCE_ROOT_NODE || !chance(0.5))
			continue;
		if (dacce_graph_keep_free_edge(s->graph, e))
			die_errno("keep edge free", -EINVAL);
		s->stats->kept_edges++;
	}
}

/* Whether a live thread has a real frame entered through edge as the program's own call. */
static bool native_frame_lives(const struct sim *s, uint32_t edge)
{
	for (uint32_t i = 0; i < s->n_threads; i++) {
		const struct thread *t = &s->threads[i];

		for (uint32_t k = 0; t->alive && k < t->n_r; k++)
			if (t->r[k].kind == RF_NATIVE && t->r[k].edge == edge)
				return true;
	}
	return false;
}

/*
 * What the runtime does before an encoding for a hotter tail call (epoch.c,
 * take_back_for_tail): an edge free for good is taken back when no live
 * frame entered through it as the program's own call (the runtime finds
 * none in the decoded contexts; here, the true frames say it), and the
 * encoding may then give it an operation.  Returns how many, in *taken.
 */
static uint32_t take_back_edges(struct sim *s, uint32_t **taken)
{
	uint32_t n = 0;

	*taken = NULL;
	for (uint32_t e = 0; e < s->graph->n_edges; e++) {
		if (!(s->graph->edges[e].flags & DACCE_EDGE_KEEP_FREE) || !chance(0.3) ||
		    native_frame_lives(s, e))
			continue;
		if (dacce_graph_unkeep_free_edge(s->graph, e))
			die_errno("take edge back", -EINVAL);
		*taken = xrealloc(*taken, sizeof(**taken) * (n + 1));
		(*taken)[n++] = e;
	}
	return n;
}

/*
 * Translates every live thread into the new epoch, or none: a thread in a
 * frame that would need a tail record it does not hold puts the epoch off
 * (-EAGAIN), as the runtime does, and the new dictionary is dropped (and
 * edges taken back for it are free for good again).
 */
static void reencode(struct sim *s)
{
	const struct dacce_dict *from = current_dict(s);
	struct dacce_state *next = xcalloc(s->n_threads ? s->n_threads : 1, sizeof(*next));
	int *result = xcalloc(s->n_threads ? s->n_threads : 1, sizeof(*result));
	bool put_off = false;
	uint32_t *taken = NULL, n_taken = 0;
	int err;

	if (s->keep_free && chance(0.5))
		n_taken = take_back_edges(s, &taken);
	encode_epoch(s);
	for (uint32_t i = 0; i < s->n_threads && !put_off; i++) {
		struct thread *t = &s->threads[i];

		dacce_state_init(&next[i], 0);
		if (!t->alive)
			continue;
		err = dacce_state_copy(&next[i], &t->st);
		if (err)
			die_errno("copy state", err);
		result[i] = dacce_translate(from, current_dict(s), s->graph, &next[i],
					    where(s, from, t), NULL);
		put_off = result[i] == -EAGAIN;
	}
	if (put_off) {
		dacce_dict_free((struct dacce_dict *)current_dict(s));
		s->n_dicts--;
		s->stats->put_off++;
		for (uint32_t i = 0; i < n_taken; i++)
			if (dacce_graph_keep_free_edge(s->graph, taken[i]))
				die_errno("keep edge free again", -EINVAL);
	} else {
		s->stats->taken_back += n_taken;
		s->stats->reencodings++;
		if (s->keep_free)
			keep_free_edges(s);
	}
	for (uint32_t i = 0; i < s->n_threads; i++) {
		struct thread *t = &s->threads[i];

		if (!put_off && t->alive && result[i]) {
			mismatch(s, "translate failed", result[i]);
			t->alive = false; /* its state is now meaningless */
		} else if (!put_off && t->alive) {
			dacce_state_fini(&t->st);
			t->st = next[i];
			dacce_state_init(&next[i], 0);
		}
		dacce_state_fini(&next[i]);
	}
	free(next);
	free(result);
	free(taken);
}

/* ------------------------------------------------------------------ execution */

static int start_thread(struct sim *s, struct thread *t, enum dacce_root_site kind, uint32_t fn)
{
	uint32_t edge;
	int err;

	err = dacce_graph_add_root_edge(s->graph, kind, node_of(s, fn), &edge);
	if (err)
		die_errno("add root edge", err);
	t->alive = true;
	dacce_state_init(&t->st, current_dict(s)->epoch);
	err = dacce_op_thread_start(&t->st, current_dict(s), s->graph, edge);
	if (err)
		return mismatch(s, "thread start", err);
	push_r(t, RF_ROOT, edge);
	push_l(t, node_of(s, fn), edge);
	return 0;
}

static struct dacce_cc_entry *copy_cc(const struct dacce_state *st)
{
	struct dacce_cc_entry *cc = xcalloc(st->cc_depth, sizeof(*cc));

	if (st->cc_depth)
		memcpy(cc, st->cc, sizeof(*cc) * st->cc_depth);
	return cc;
}

/* Thread creation: the new thread's prefix is the creator's context now. */
static int create_thread(struct sim *s, uint32_t creator_index)
{
	struct thread *c, *t;
	uint32_t fn = s->prog.thread_starts[rnd_below(s->prog.n_thread_starts)];

	s->threads = xrealloc(s->threads, sizeof(*s->threads) * (s->n_threads + 1));
	c = &s->threads[creator_index];
	t = &s->threads[s->n_threads++];
	memset(t, 0, sizeof(*t));

	s->stats->threads++;
	t->n_prefix = c->n_prefix + 1;
	t->prefix = xcalloc(t->n_prefix, sizeof(*t->prefix));
	t->prefix[0] = dacce_snapshot_of(&c->st, c->l[c->n_l - 1].node);
	t->prefix[0].cc = copy_cc(&c->st);
	for (uint32_t i = 0; i < c->n_prefix; i++) {
		struct dacce_cc_entry *cc = xcalloc(c->prefix[i].cc_depth, sizeof(*cc));

		if (c->prefix[i].cc_depth)
			memcpy(cc, c->prefix[i].cc, sizeof(*cc) * c->prefix[i].cc_depth);
		t->prefix[i + 1] = c->prefix[i];
		t->prefix[i + 1].cc = cc;
	}
	t->n_prefix_truth = c->n_l + c->n_prefix_truth;
	t->prefix_truth = xcalloc(t->n_prefix_truth, sizeof(*t->prefix_truth));
	for (uint32_t i = 0; i < c->n_l; i++)
		t->prefix_truth[i] = c->l[c->n_l - 1 - i];
	if (c->n_prefix_truth)
		memcpy(t->prefix_truth + c->n_l, c->prefix_truth,
		       sizeof(*t->prefix_truth) * c->n_prefix_truth);
	return start_thread(s, t, DACCE_ROOT_SITE_THREAD, fn);
}

/* The edge a site takes to a target, discovered on first execution. */
static uint32_t discover_edge(struct sim *s, struct sim_site *site, uint32_t target)
{
	uint32_t caller = node_of(s, site->fn), callee = node_of(s, target), edge;
	int err;

	if (site->graph_site == DACCE_NONE) {
		err = dacce_graph_add_site(s->graph, caller, s->module,
					   0x1000000 + (uint64_t)(site - s->prog.sites),
					   site->kind, &site->graph_site);
		if (err)
			die_errno("add site", err);
	}
	err = dacce_graph_add_edge(s->graph, site->graph_site, callee, &edge);
	if (!err && s->prog.fns[target].leaf)
		err = dacce_graph_leaf_edge(s->graph, edge);
	if (err)
		die_errno("add edge", err);
	return edge;
}

/* What the runtime's dispatch would find: the table when the site has one. */
static int check_dispatch(struct sim *s, const struct sim_site *site, uint32_t callee,
			  uint32_t edge)
{
	const struct dacce_dict *d = current_dict(s);
	const struct dacce_dispatch *table;
	uint32_t found;

	if (site->graph_site >= d->n_sites)
		return 0;
	table = dacce_dict_dispatch(d, site->graph_site);
	if (!table)
		return 0;
	found = dacce_dispatch_lookup(table, callee);
	s->stats->dispatch_hits += found != DACCE_NONE;
	/* A miss is right only for edges newer than the epoch. */
	if (edge < d->n_edges ? found != edge : found != DACCE_NONE)
		return mismatch(s, "dispatch table disagrees with the graph", 0);
	return 0;
}

static int do_call(struct sim *s, struct thread *t, struct sim_site *site)
{
	uint32_t target = site->targets[rnd_below(site->n_targets)];
	uint32_t edge = discover_edge(s, site, target);
	int err;

	if (check_dispatch(s, site, node_of(s, target), edge))
		return -1;
	s->graph->edges[edge].freq++;
	s->stats->calls++;
	s->stats->leaf_calls += s->prog.fns[target].leaf;
	if (dacce_site_kind_is_tail(site->kind)) {
		s->stats->tail_calls++;
		err = dacce_op_tail(&t->st, current_dict(s), s->graph, edge, t->n_r - 1);
	} else if (s->graph->edges[edge].flags & DACCE_EDGE_KEEP_FREE) {
		s->stats->native_calls++;
		err = 0;
		push_r(t, RF_NATIVE, edge);
	} else {
		err = dacce_op_call(&t->st, current_dict(s), s->graph, edge);
		push_r(t, RF_CALL, edge);
	}
	if (err)
		return mismatch(s, "call", err);
	push_l(t, node_of(s, target), edge);
	if (t->st.cc_depth && t->st.cc[t->st.cc_depth - 1].aux && t->st.cc[t->st.cc_depth - 1].edge == edge)
		s->stats->compressed_pushes++;
	if (t->n_l > s->stats->max_depth)
		s->stats->max_depth = t->n_l;
	if (t->st.cc_depth > s->stats->max_cc_depth)
		s->stats->max_cc_depth = t->st.cc_depth;
	return 0;
}

static int do_nested(struct sim *s, struct thread *t)
{
	enum dacce_root_site kind = chance(0.8) ? DACCE_ROOT_SITE_SIGNAL : DACCE_ROOT_SITE_CALLBACK;
	uint32_t fn = s->prog.handlers[rnd_below(s->prog.n_handlers)], edge;
	int err;

	err = dacce_graph_add_root_edge(s->graph, kind, node_of(s, fn), &edge);
	if (err)
		die_errno("add root edge", err);
	err = dacce_op_nested_enter(&t->st, current_dict(s), edge, where(s, current_dict(s), t));
	if (err)
		return mismatch(s, "nested root", err);
	push_r(t, RF_NESTED, edge);
	push_l(t, node_of(s, fn), edge);
	s->stats->nested_roots++;
	return 0;
}

/* The innermost real frame returns; the thread ends when its root does. */
static int do_return(struct sim *s, struct thread *t)
{
	struct rframe *r = &t->r[t->n_r - 1];
	int err;

	err = dacce_op_frame_exit(&t->st, t->n_r - 1);
	if (!err) {
		if (r->kind == RF_CALL)
			err = dacce_op_return(&t->st, current_dict(s), s->graph, r->edge);
		else if (r->kind == RF_NESTED)
			err = dacce_op_nested_leave(&t->st, r->edge);
	}
	if (err)
		return mismatch(s, "return", err);
	t->n_l = r->lstart;
	t->n_r--;
	if (t->n_r == 0)
		t->alive = false;
	return 0;
}

static int step_thread(struct sim *s, uint32_t index)
{
	struct thread *t = &s->threads[index];
	const struct sim_fn *f = &s->prog.fns[fn_of_node(s, t->l[t->n_l - 1].node)];
	double p_ret = s->prog.p_return + 0.5 * (double)t->n_l / s->prog.max_depth;

	if (t->n_r == 1)
		p_ret = 0.002; /* roots rarely end */
	/* A signal may arrive while a leaf runs; a leaf calls nothing. */
	if (f->leaf && chance(0.05) && t->n_r < 4096)
		return do_nested(s, t);
	if (f->n_sites == 0 || t->n_l >= s->prog.max_depth || chance(p_ret))
		return do_return(s, t);
	if (chance(0.004) && t->n_r < 4096)
		return do_nested(s, t);
	if (chance(0.002) && s->n_threads < s->max_threads)
		return create_thread(s, index);
	return do_call(s, t, &s->prog.sites[f->first_site + rnd_below(f->n_sites)]);
}

static void run_program(struct sim *s)
{
	int err;

	generate_program(&s->prog);
	s->keep_free = !s->mutate && chance(0.5);
	s->graph = dacce_graph_new();
	if (!s->graph)
		die_errno("graph", -ENOMEM);
	err = dacce_graph_add_module(s->graph, (const uint8_t *)"sim", 3, &s->module);
	if (err)
		die_errno("module", err);
	s->max_threads = 1 + rnd_below(6);
	/* Epoch 0 knows only main's root edge, as at process start. */
	node_of(s, 0);
	uint32_t main_edge;

	err = dacce_graph_add_root_edge(s->graph, DACCE_ROOT_SITE_MAIN, node_of(s, 0), &main_edge);
	if (err)
		die_errno("root", err);
	encode_epoch(s);
	s->threads = xcalloc(1, sizeof(*s->threads));
	s->n_threads = 1;
	start_thread(s, &s->threads[0], DACCE_ROOT_SITE_MAIN, 0);

	uint64_t calls_at_start = s->stats->calls, mismatches_at_start = s->stats->mismatches;
	double p_reencode = 2.0 / s->prog.call_budget * (1 + rnd_below(8));

	for (s->step = 0; s->stats->calls - calls_at_start < s->prog.call_budget; s->step++) {
		uint32_t live = 0, pick;

		for (uint32_t i = 0; i < s->n_threads; i++)
			live += s->threads[i].alive;
		if (live == 0)
			break;
		pick = rnd_below(live);
		for (uint32_t i = 0; i < s->n_threads; i++) {
			if (!s->threads[i].alive || pick--)
				continue;
			if (step_thread(s, i) == 0 && s->threads[i].alive) {
				check_thread(s, &s->threads[i]);
				if (s->threads[i].n_prefix && (s->step & 15) == 0)
					check_chain(s, &s->threads[i]);
			}
			break;
		}
		if (chance(p_reencode))
			reencode(s);
		if (s->mutate && s->stats->mismatches > mismatches_at_start)
			break;
	}
	s->stats->caught_programs += s->stats->mismatches > mismatches_at_start;

	for (uint32_t i = 0; i < s->n_threads; i++)
		free_thread(&s->threads[i]);
	free(s->threads);
	s->threads = NULL;
	s->n_threads = 0;
	for (uint32_t i = 0; i < s->n_dicts; i++)
		dacce_dict_free(s->dicts[i]);
	free(s->dicts);
	s->dicts = NULL;
	s->n_dicts = 0;
	dacce_graph_free(s->graph);
	s->graph = NULL;
	free_program(&s->prog);
	s->stats->programs++;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: simulate [--programs N] [--seed S] [--program P] [--mutate]\n"
		"                [--expect-mismatch] [--no-roundtrip]\n"
		"  --program P   run only program P of the seed (to reproduce a failure)\n"
		"  --mutate      corrupt every re-encoding: the run must then mismatch\n");
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "programs", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "program", required_argument, NULL, 'p' },
		{ "mutate", no_argument, NULL, 'm' },
		{ "expect-mismatch", no_argument, NULL, 'e' },
		{ "no-roundtrip", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct stats stats = { 0 };
	struct sim s = { .stats = &stats, .roundtrip = true };
	uint64_t programs = 1000, first = 0;
	bool expect_mismatch = false, one = false;
	int c;

	while ((c = getopt_long(argc, argv, "n:s:p:meh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'n': programs = strtoull(optarg, NULL, 0); break;
		case 's': s.seed = strtoull(optarg, NULL, 0); break;
		case 'p': first = strtoull(optarg, NULL, 0); one = true; break;
		case 'm': s.mutate = true; break;
		case 'e': expect_mismatch = true; break;
		case 'r': s.roundtrip = false; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (one)
		programs = 1;
	for (uint64_t i = 0; i < programs; i++) {
		s.program_index = first + i;
		rng_state = (s.seed + 1) * 0x9e3779b97f4a7c15ULL ^ (s.program_index + 1) * 0xd1b54a32d192ed03ULL;
		if (rng_state == 0)
			rng_state = 1;
		run_program(&s);
	}
	printf("simulate: programs=%llu calls=%llu reencodings=%llu put-off=%llu mismatches=%llu%s\n",
	       (unsigned long long)stats.programs, (unsigned long long)stats.calls,
	       (unsigned long long)stats.reencodings, (unsigned long long)stats.put_off,
	       (unsigned long long)stats.mismatches,
	       s.mutate ? " (mutated encodings)" : "");
	printf("simulate: coverage: tail=%llu nested=%llu threads=%llu chain-checks=%llu "
	       "dispatch-hits=%llu demoted=%llu back=%llu compressed=%llu max-depth=%u "
	       "max-ccstack=%u programs-with-mismatch=%llu checks=%llu leaf-calls=%llu "
	       "leaf-checks=%llu kept-free=%llu native-calls=%llu taken-back=%llu\n",
	       (unsigned long long)stats.tail_calls, (unsigned long long)stats.nested_roots,
	       (unsigned long long)stats.threads, (unsigned long long)stats.chain_checks,
	       (unsigned long long)stats.dispatch_hits, (unsigned long long)stats.demoted_edges,
	       (unsigned long long)stats.back_edges, (unsigned long long)stats.compressed_pushes,
	       stats.max_depth, stats.max_cc_depth, (unsigned long long)stats.caught_programs,
	       (unsigned long long)stats.checks, (unsigned long long)stats.leaf_calls,
	       (unsigned long long)stats.leaf_checks, (unsigned long long)stats.kept_edges,
	       (unsigned long long)stats.native_calls, (unsigned long long)stats.taken_back);
	if (expect_mismatch) {
		printf("simulate: mutation check %s: wrong encodings caught in %llu of %llu programs\n",
		       stats.mismatches ? "passed" : "FAILED",
		       (unsigned long long)stats.caught_programs,
		       (unsigned long long)stats.programs);
		return stats.mismatches ? 0 : 1;
	}
	return stats.mismatches ? 1 : 0;
}
