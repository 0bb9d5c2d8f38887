// SPDX-License-Identifier: MIT
/*
 * Core library benchmark: encoding a large random call graph, decoding real
 * contexts at several ccStack depths, and the size of the dictionary.
 *
 * It prints numbers and never fails on timing.  It exits non-zero only when
 * the set-up fails or a context does not decode to the path that built it.
 * Everything runs on one core with a fixed seed; every measurement is
 * repeated and reported as best and median.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode.h"
#include "dict.h"
#include "dict_io.h"
#include "graph.h"
#include "machine.h"

#define BENCH_SEED 0xdacce2024ULL
#define BENCH_NODES 50000u	     /* including R */
#define BENCH_EDGES 250000u	     /* including the root edge */
#define MAIN_NODE 1u
#define BACKWARD_CALL_PERCENT 3u     /* calls to an earlier function: cycles */
#define RECURSION_REACH 32u	     /* how far back such a call goes */
#define PLT_PERCENT 10u
#define INDIRECT_SHARE_PERCENT 35u   /* the graph's edges once indirect sites are in */
#define ZIPF_SCALE 1000000000ULL
#define SMALL_ID_LIMIT (1ULL << 20)

#define ENCODE_RUNS 5
#define CODEC_RUNS 5
#define DECODE_RUNS 5
#define DECODE_RUN_SECONDS 0.2
#define CONTEXTS_PER_DEPTH 1000u
#define FRAME_CAPACITY 4096u
#define MAX_WALK_EDGES 2000u	     /* stays well inside FRAME_CAPACITY */

#define TARGET_ENCODE_SECONDS 1.0
#define TARGET_DECODE_RATE 1000000.0
#define TARGET_DECODE_DEPTH 8u

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ basics */

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "bench-core: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void die_errno(const char *what, int err)
{
	die("%s: %s", what, strerror(-err));
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory");
	return p;
}

static uint64_t rng_state = BENCH_SEED;

/* splitmix64: good enough, and the same sequence on every machine. */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rnd_below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static bool percent_chance(uint32_t percent)
{
	return rnd_below(100) < percent;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Migrations between cores add noise; stay where we started. */
static void pin_to_one_core(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0) {
		fprintf(stderr, "bench-core: cannot tell the current cpu; not pinned\n");
		return;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "bench-core: cannot pin to cpu %d; not pinned\n", cpu);
	else
		printf("bench-core: pinned to cpu %d, seed 0x%llx\n", cpu,
		       (unsigned long long)BENCH_SEED);
}

struct summary {
	double best, median;
};

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static struct summary summarize(double *samples, int n, bool higher_is_better)
{
	struct summary s;

	qsort(samples, (size_t)n, sizeof(*samples), compare_doubles);
	s.best = higher_is_better ? samples[n - 1] : samples[0];
	s.median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
	return s;
}

/* ------------------------------------------------------------------ the graph */

struct bench_graph {
	struct dacce_graph *graph;
	uint32_t module;
	uint32_t root_edge;
	uint64_t next_site_offset;
	uint32_t n_indirect_sites, max_targets;
};

static uint32_t new_site(struct bench_graph *bg, uint32_t caller, enum dacce_site_kind kind)
{
	uint32_t site;
	int err;

	err = dacce_graph_add_site(bg->graph, caller, bg->module, bg->next_site_offset, kind,
				   &site);
	if (err)
		die_errno("add site", err);
	bg->next_site_offset += 8;
	return site;
}

/* Returns whether the edge is new (a site may pick the same target twice). */
static bool add_edge(struct bench_graph *bg, uint32_t site, uint32_t callee)
{
	uint32_t before = bg->graph->n_edges, edge;
	int err;

	err = dacce_graph_add_edge(bg->graph, site, callee, &edge);
	if (err)
		die_errno("add edge", err);
	return bg->graph->n_edges != before;
}

/* Recursion is mostly local: the caller itself or a function close before it. */
static uint32_t pick_recursive_callee(uint32_t caller)
{
	uint32_t above_main = caller - MAIN_NODE;
	uint32_t reach = above_main < RECURSION_REACH ? above_main : RECURSION_REACH;

	if (rnd_below(2))
		return caller;
	return caller - rnd_below(reach);
}

/* Mostly calls deeper into the program (a higher index), sometimes back: cycles. */
static uint32_t pick_callee(uint32_t caller)
{
	uint32_t last = BENCH_NODES - 1;

	/* main (node 1) is called only by R, as in a real program. */
	if (caller > MAIN_NODE && (caller == last || percent_chance(BACKWARD_CALL_PERCENT)))
		return pick_recursive_callee(caller);
	return caller + 1 + rnd_below(last - caller);
}

static enum dacce_site_kind direct_kind(void)
{
	return percent_chance(PLT_PERCENT) ? DACCE_SITE_PLT : DACCE_SITE_DIRECT;
}

static void add_indirect_site(struct bench_graph *bg, uint32_t caller, uint32_t n_targets)
{
	uint32_t site = new_site(bg, caller, DACCE_SITE_INDIRECT);
	uint32_t added = 0;

	for (uint32_t tries = 0; added < n_targets && tries < 4 * n_targets; tries++)
		added += add_edge(bg, site, pick_callee(caller));
	bg->n_indirect_sites++;
	if (added > bg->max_targets)
		bg->max_targets = added;
}

static void add_nodes(struct bench_graph *bg)
{
	static const uint8_t build_id[] = { 0xbe, 0x4c, 0xda, 0xcc, 0xe0 };
	uint32_t node;
	int err;

	err = dacce_graph_add_module(bg->graph, build_id, sizeof(build_id), &bg->module);
	if (err)
		die_errno("add module", err);
	for (uint32_t i = 1; i < BENCH_NODES; i++) {
		uint64_t offset = 0x1000 + 0x40 * (uint64_t)i;

		err = dacce_graph_add_node(bg->graph, bg->module, offset, &node);
		if (err)
			die_errno("add node", err);
		if (node != i)
			die("graph gave node %u for function %u; expected dense indices", node, i);
	}
	err = dacce_graph_add_root_edge(bg->graph, DACCE_ROOT_SITE_MAIN, MAIN_NODE, &bg->root_edge);
	if (err)
		die_errno("add root edge", err);
}

/* A random recursive tree below main: every function is reachable. */
static void add_spanning_tree(struct bench_graph *bg)
{
	for (uint32_t callee = MAIN_NODE + 1; callee < BENCH_NODES; callee++) {
		uint32_t caller = MAIN_NODE + rnd_below(callee - MAIN_NODE);

		add_edge(bg, new_site(bg, caller, direct_kind()), callee);
	}
}

static void add_indirect_sites(struct bench_graph *bg)
{
	static const uint32_t big_dispatcher_targets[] = { 1000, 2000, 3000, 5000 };
	uint32_t stop = BENCH_EDGES / 100 * INDIRECT_SHARE_PERCENT;

	/* Big dispatchers (interpreters, plugin tables) sit close to main. */
	for (size_t i = 0; i < ARRAY_SIZE(big_dispatcher_targets); i++)
		add_indirect_site(bg, MAIN_NODE + rnd_below(32), big_dispatcher_targets[i]);
	while (bg->graph->n_edges < stop) {
		uint32_t want = 2 + rnd_below(23), room = stop - bg->graph->n_edges;

		add_indirect_site(bg, MAIN_NODE + rnd_below(BENCH_NODES - MAIN_NODE),
				  want < room ? want : room);
	}
}

static void add_direct_sites(struct bench_graph *bg)
{
	while (bg->graph->n_edges < BENCH_EDGES) {
		uint32_t caller = MAIN_NODE + rnd_below(BENCH_NODES - MAIN_NODE);

		add_edge(bg, new_site(bg, caller, direct_kind()), pick_callee(caller));
	}
}

/* Zipf-like heat: a random permutation of ranks, frequency ~ 1 / rank. */
static void assign_frequencies(struct bench_graph *bg)
{
	struct dacce_graph *g = bg->graph;
	uint32_t *rank = xcalloc(g->n_edges, sizeof(*rank));

	for (uint32_t e = 0; e < g->n_edges; e++)
		rank[e] = e + 1;
	for (uint32_t e = g->n_edges; e > 1; e--) {
		uint32_t other = rnd_below(e), tmp = rank[e - 1];

		rank[e - 1] = rank[other];
		rank[other] = tmp;
	}
	for (uint32_t e = 0; e < g->n_edges; e++)
		g->edges[e].freq = ZIPF_SCALE / rank[e] ? ZIPF_SCALE / rank[e] : 1;
	g->edges[bg->root_edge].freq = ZIPF_SCALE; /* every context starts with it */
	free(rank);
}

static void build_graph(struct bench_graph *bg)
{
	double start = now_seconds();

	memset(bg, 0, sizeof(*bg));
	bg->next_site_offset = 0x400000;
	bg->graph = dacce_graph_new();
	if (!bg->graph)
		die("cannot create the graph");
	add_nodes(bg);
	add_spanning_tree(bg);
	add_indirect_sites(bg);
	add_direct_sites(bg);
	assign_frequencies(bg);
	if (bg->graph->n_nodes != BENCH_NODES || bg->graph->n_edges != BENCH_EDGES)
		die("graph has %u nodes and %u edges; expected %u and %u", bg->graph->n_nodes,
		    bg->graph->n_edges, BENCH_NODES, BENCH_EDGES);
	printf("bench-core: graph %u nodes %u edges %u sites (%u indirect, largest %u targets), "
	       "built in %.1f ms\n",
	       bg->graph->n_nodes, bg->graph->n_edges, bg->graph->n_sites, bg->n_indirect_sites,
	       bg->max_targets, (now_seconds() - start) * 1e3);
}

/* ------------------------------------------------------------------ encoding */

struct edge_counts {
	uint32_t encoded, back, demoted;
};

static struct edge_counts count_edge_classes(const struct dacce_dict *d)
{
	struct edge_counts c = { 0 };

	for (uint32_t e = 0; e < d->n_edges; e++) {
		bool nested = dacce_site_kind_is_nested_root(d->site_kind[d->edge_site[e]]);

		c.encoded += d->edge_class[e] == DACCE_EDGE_ENCODED;
		c.back += d->edge_class[e] == DACCE_EDGE_BACK;
		c.demoted += !nested && d->edge_class[e] == DACCE_EDGE_UNENCODED;
	}
	return c;
}

/* Encodes ENCODE_RUNS times; returns the last dictionary and the median time. */
static struct dacce_dict *bench_encode(const struct dacce_graph *g, uint64_t id_limit,
				       const char *label, double *median_seconds)
{
	struct dacce_encode_opts opts;
	struct dacce_dict *dict = NULL;
	double seconds[ENCODE_RUNS];
	struct edge_counts c;
	struct summary s;
	int err;

	dacce_encode_opts_default(&opts);
	if (id_limit)
		opts.id_limit = id_limit;
	for (int run = 0; run < ENCODE_RUNS; run++) {
		double start;

		dacce_dict_free(dict);
		dict = NULL;
		start = now_seconds();
		err = dacce_encode(g, &opts, &dict);
		seconds[run] = now_seconds() - start;
		if (err)
			die_errno("encode", err);
	}
	s = summarize(seconds, ENCODE_RUNS, false);
	c = count_edge_classes(dict);
	printf("bench-core: encode %u nodes %u edges%s: best %.1f ms median %.1f ms "
	       "(%.2f M edges/s) maxID=%" PRIu64 " back=%u demoted=%u encoded=%u dispatch=%u\n",
	       g->n_nodes, g->n_edges, label, s.best * 1e3, s.median * 1e3,
	       g->n_edges / s.median / 1e6, dict->max_id, c.back, c.demoted, c.encoded,
	       dict->n_dispatch);
	if (median_seconds)
		*median_seconds = s.median;
	return dict;
}

/* Decoding binary-searches a node's encoded in-edges: their count sets its cost. */
static void report_in_edges(const struct dacce_dict *d)
{
	uint32_t max = 0, busy = 0;

	for (uint32_t n = 0; n < d->n_nodes; n++) {
		uint32_t count = d->in_start[n + 1] - d->in_start[n];

		max = count > max ? count : max;
		busy += count > 16;
	}
	printf("bench-core: encoded in-edges per node: mean %.1f max %u, "
	       "%u nodes with more than 16\n",
	       (double)d->in_start[d->n_nodes] / d->n_nodes, max, busy);
}

/* ------------------------------------------------------------------ contexts */

/* Out-edges of each node in the dictionary, split by what a call does. */
struct out_lists {
	uint32_t *start; /* n_nodes + 1 offsets */
	uint32_t *edges;
};

struct walker {
	struct bench_graph *bg;
	const struct dacce_dict *dict;
	struct out_lists encoded; /* id += En */
	struct out_lists pushed;  /* back and demoted edges: ccStack pushes */
	uint32_t *later_edge;	  /* per node: a call found after the epoch */
	uint32_t n_later;
	struct dacce_state st;
	uint32_t node;
	uint32_t *path; /* edges taken, outermost (the root edge) first */
	uint32_t n_path;
};

static void build_out_lists(const struct dacce_dict *d, bool want_encoded, struct out_lists *out)
{
	uint32_t *fill;

	out->start = xcalloc((size_t)d->n_nodes + 1, sizeof(*out->start));
	for (uint32_t e = 0; e < d->n_edges; e++)
		if (d->edge_caller[e] != DACCE_ROOT_NODE &&
		    (d->edge_class[e] == DACCE_EDGE_ENCODED) == want_encoded)
			out->start[d->edge_caller[e] + 1]++;
	for (uint32_t n = 0; n < d->n_nodes; n++)
		out->start[n + 1] += out->start[n];
	out->edges = xcalloc(out->start[d->n_nodes], sizeof(*out->edges));
	fill = xcalloc(d->n_nodes, sizeof(*fill));
	memcpy(fill, out->start, sizeof(*fill) * d->n_nodes);
	for (uint32_t e = 0; e < d->n_edges; e++)
		if (d->edge_caller[e] != DACCE_ROOT_NODE &&
		    (d->edge_class[e] == DACCE_EDGE_ENCODED) == want_encoded)
			out->edges[fill[d->edge_caller[e]]++] = e;
	free(fill);
}

static void walker_init(struct walker *w, struct bench_graph *bg, const struct dacce_dict *dict)
{
	memset(w, 0, sizeof(*w));
	w->bg = bg;
	w->dict = dict;
	build_out_lists(dict, true, &w->encoded);
	build_out_lists(dict, false, &w->pushed);
	w->later_edge = xcalloc(dict->n_nodes, sizeof(*w->later_edge));
	for (uint32_t n = 0; n < dict->n_nodes; n++)
		w->later_edge[n] = DACCE_NONE;
	w->path = xcalloc(MAX_WALK_EDGES + 1, sizeof(*w->path));
	dacce_state_init(&w->st, dict->epoch);
}

static void walker_fini(struct walker *w)
{
	free(w->encoded.start);
	free(w->encoded.edges);
	free(w->pushed.start);
	free(w->pushed.edges);
	free(w->later_edge);
	free(w->path);
	dacce_state_fini(&w->st);
}

static void walker_take(struct walker *w, uint32_t edge)
{
	int err = dacce_op_call(&w->st, w->dict, w->bg->graph, edge);

	if (err)
		die_errno("call during a walk", err);
	w->path[w->n_path++] = edge;
	w->node = w->bg->graph->edges[edge].callee;
}

static void walker_start(struct walker *w)
{
	int err = dacce_op_thread_start(&w->st, w->dict, w->bg->graph, w->bg->root_edge);

	if (err)
		die_errno("thread start", err);
	w->n_path = 0;
	w->path[w->n_path++] = w->bg->root_edge;
	w->node = MAIN_NODE;
}

static bool walk_is_full(const struct walker *w)
{
	return w->n_path >= MAX_WALK_EDGES;
}

/* Up to steps encoded calls; stops early where none leaves the node. */
static void walk_encoded(struct walker *w, uint32_t steps)
{
	for (uint32_t i = 0; i < steps && !walk_is_full(w); i++) {
		uint32_t lo = w->encoded.start[w->node], hi = w->encoded.start[w->node + 1];

		if (lo == hi)
			return;
		walker_take(w, w->encoded.edges[lo + rnd_below(hi - lo)]);
	}
}

/*
 * A call that pushes: a back or demoted edge when the node has one, else a
 * call first seen after the epoch (one per node, made on demand), which is
 * unencoded by definition.
 */
static void walk_pushed(struct walker *w)
{
	uint32_t lo = w->pushed.start[w->node], hi = w->pushed.start[w->node + 1];
	uint32_t *later = &w->later_edge[w->node];

	if (lo < hi) {
		walker_take(w, w->pushed.edges[lo + rnd_below(hi - lo)]);
		return;
	}
	if (*later == DACCE_NONE) {
		uint32_t site = new_site(w->bg, w->node, DACCE_SITE_DIRECT);
		uint32_t callee = MAIN_NODE + 1 + rnd_below(BENCH_NODES - MAIN_NODE - 1);
		int err = dacce_graph_add_edge(w->bg->graph, site, callee, later);

		if (err)
			die_errno("add a later edge", err);
		w->n_later++;
	}
	walker_take(w, *later);
}

/*
 * A random run of calls from main that ends with exactly cc_depth ccStack
 * entries.  Returns false when the walk grew too long (the caller retries).
 */
static bool walk_to_depth(struct walker *w, uint32_t cc_depth)
{
	walker_start(w);
	if (cc_depth == 0) {
		walk_encoded(w, 1 + rnd_below(24));
		return true;
	}
	while (w->st.cc_depth < cc_depth) {
		if (walk_is_full(w))
			return false;
		walk_encoded(w, rnd_below(4));
		if (walk_is_full(w))
			return false;
		walk_pushed(w);
	}
	walk_encoded(w, rnd_below(6));
	return true;
}

/* A context ready to decode, with the path that produced it. */
struct context {
	struct dacce_snapshot snap; /* owns its ccStack copy */
	uint32_t *path;
	uint32_t n_path;
	uint64_t hash;
};

struct context_set {
	uint32_t cc_depth;
	struct context *ctx;
	uint32_t n;
	uint64_t total_frames;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

/* Identity of a context: what a decoder sees of it. */
static uint64_t context_hash(const struct dacce_state *st, uint32_t node)
{
	uint64_t h = mix(mix(0xcbf29ce484222325ULL, node), st->id);

	for (uint32_t i = 0; i < st->cc_depth; i++)
		h = mix(mix(mix(h, st->cc[i].id), st->cc[i].edge), st->cc[i].aux);
	return h;
}

static bool seen_before(const struct context_set *set, uint64_t hash)
{
	for (uint32_t i = 0; i < set->n; i++)
		if (set->ctx[i].hash == hash)
			return true;
	return false;
}

static void keep_context(struct context_set *set, const struct walker *w, uint64_t hash)
{
	struct context *c = &set->ctx[set->n++];
	struct dacce_cc_entry *cc = xcalloc(w->st.cc_depth, sizeof(*cc));

	if (w->st.cc_depth)
		memcpy(cc, w->st.cc, sizeof(*cc) * w->st.cc_depth);
	c->snap = dacce_snapshot_of(&w->st, w->node);
	c->snap.cc = cc;
	c->path = xcalloc(w->n_path, sizeof(*c->path));
	memcpy(c->path, w->path, sizeof(*c->path) * w->n_path);
	c->n_path = w->n_path;
	c->hash = hash;
	set->total_frames += w->n_path;
}

static void make_contexts(struct context_set *set, struct walker *w, uint32_t cc_depth)
{
	uint32_t attempts = 0;

	memset(set, 0, sizeof(*set));
	set->cc_depth = cc_depth;
	set->ctx = xcalloc(CONTEXTS_PER_DEPTH, sizeof(*set->ctx));
	while (set->n < CONTEXTS_PER_DEPTH) {
		uint64_t hash;

		if (++attempts > 100 * CONTEXTS_PER_DEPTH)
			die("found only %u distinct contexts at ccStack depth %u", set->n,
			    cc_depth);
		if (!walk_to_depth(w, cc_depth))
			continue;
		if (w->st.cc_depth != cc_depth)
			die("walk ended at ccStack depth %u instead of %u", w->st.cc_depth,
			    cc_depth);
		hash = context_hash(&w->st, w->node);
		if (!seen_before(set, hash))
			keep_context(set, w, hash);
	}
}

static void free_contexts(struct context_set *set)
{
	for (uint32_t i = 0; i < set->n; i++) {
		free((void *)set->ctx[i].snap.cc);
		free(set->ctx[i].path);
	}
	free(set->ctx);
	memset(set, 0, sizeof(*set));
}

/* ------------------------------------------------------------------ decoding */

/* Every context must decode, innermost frame first, to the path that built it. */
static void verify_contexts(const struct context_set *set, const struct dacce_dict *dict,
			    const struct dacce_graph *later, struct dacce_frame *frames)
{
	for (uint32_t i = 0; i < set->n; i++) {
		const struct context *c = &set->ctx[i];
		struct dacce_decode_error err = { 0 };
		int n = dacce_decode(dict, later, &c->snap, frames, FRAME_CAPACITY, &err);

		if (n <= 0)
			die("context %u at ccStack depth %u did not decode: %s (%d)", i,
			    set->cc_depth, err.message ? err.message : "no frames", n);
		if ((uint32_t)n != c->n_path)
			die("context %u at ccStack depth %u decoded to %d frames, walked %u", i,
			    set->cc_depth, n, c->n_path);
		for (uint32_t k = 0; k < c->n_path; k++)
			if (frames[k].edge != c->path[c->n_path - 1 - k])
				die("context %u at ccStack depth %u: frame %u differs from "
				    "the walk", i, set->cc_depth, k);
	}
}

/* Decodes the set round-robin for about DECODE_RUN_SECONDS; returns contexts/s. */
static double decode_rate(const struct context_set *set, const struct dacce_dict *dict,
			  const struct dacce_graph *later, struct dacce_frame *frames)
{
	uint64_t decoded = 0, frames_out = 0;
	double start = now_seconds(), elapsed;

	do {
		for (uint32_t i = 0; i < set->n; i++)
			frames_out += (uint64_t)dacce_decode(dict, later, &set->ctx[i].snap, frames,
							     FRAME_CAPACITY, NULL);
		decoded += set->n;
		elapsed = now_seconds() - start;
	} while (elapsed < DECODE_RUN_SECONDS);
	if (frames_out != decoded / set->n * set->total_frames)
		die("decoding at ccStack depth %u changed between runs", set->cc_depth);
	return (double)decoded / elapsed;
}

static double bench_decode(const struct context_set *set, const struct dacce_dict *dict,
			   const struct dacce_graph *later)
{
	struct dacce_frame *frames = xcalloc(FRAME_CAPACITY, sizeof(*frames));
	double rates[DECODE_RUNS];
	double mean_frames = (double)set->total_frames / set->n;
	struct summary s;

	verify_contexts(set, dict, later, frames);
	for (int run = 0; run < DECODE_RUNS; run++)
		rates[run] = decode_rate(set, dict, later, frames);
	free(frames);
	s = summarize(rates, DECODE_RUNS, true);
	printf("bench-core: decode ccStack depth %u: %u contexts, mean %.1f frames: "
	       "best %.3f M contexts/s median %.3f M contexts/s (%.1f M frames/s)\n",
	       set->cc_depth, set->n, mean_frames, s.best / 1e6, s.median / 1e6,
	       s.median * mean_frames / 1e6);
	return s.median;
}

/* ------------------------------------------------------------------ size */

/* Bytes of the arrays a dictionary needs; in_edges counted as used. */
static size_t dict_footprint(const struct dacce_dict *d)
{
	size_t n = d->n_nodes, s = d->n_sites, e = d->n_edges;
	size_t bytes = sizeof(*d);

	bytes += n * (sizeof(*d->num_cc) + sizeof(*d->dummy));
	bytes += (n + 1) * sizeof(*d->in_start);
	bytes += (size_t)d->in_start[d->n_nodes] * sizeof(*d->in_edges);
	bytes += s * (sizeof(*d->site_caller) + sizeof(*d->site_kind));
	bytes += e * (sizeof(*d->edge_site) + sizeof(*d->edge_caller) + sizeof(*d->edge_callee) +
		      sizeof(*d->edge_class) + sizeof(*d->edge_compress) + sizeof(*d->en));
	bytes += d->n_dispatch * sizeof(*d->dispatch);
	for (uint32_t i = 0; i < d->n_dispatch; i++)
		bytes += ((size_t)1 << d->dispatch[i].bits) *
			 (sizeof(*d->dispatch[i].callee) + sizeof(*d->dispatch[i].edge));
	return bytes;
}

static void bench_size(const struct dacce_dict *dict)
{
	double ser[CODEC_RUNS], de[CODEC_RUNS];
	size_t len = 0, footprint = dict_footprint(dict);
	size_t spare = ((size_t)dict->n_edges - dict->in_start[dict->n_nodes]) *
		       sizeof(*dict->in_edges);
	struct summary s_ser, s_de;

	for (int run = 0; run < CODEC_RUNS; run++) {
		struct dacce_dict *back = NULL;
		const char *why = NULL;
		uint8_t *buf = NULL;
		double start = now_seconds();
		int err = dacce_dict_serialize(dict, &buf, &len);

		ser[run] = now_seconds() - start;
		if (err)
			die_errno("serialize dictionary", err);
		start = now_seconds();
		err = dacce_dict_deserialize(buf, len, &back, &why);
		de[run] = now_seconds() - start;
		if (err)
			die("dictionary did not read back: %s", why ? why : strerror(-err));
		dacce_dict_free(back);
		free(buf);
	}
	s_ser = summarize(ser, CODEC_RUNS, false);
	s_de = summarize(de, CODEC_RUNS, false);
	printf("bench-core: dictionary file %zu bytes (%.1f bytes/edge); serialize best %.2f ms "
	       "median %.2f ms, deserialize best %.2f ms median %.2f ms\n",
	       len, (double)len / dict->n_edges, s_ser.best * 1e3, s_ser.median * 1e3,
	       s_de.best * 1e3, s_de.median * 1e3);
	/* Only a dictionary fresh from dacce_encode sizes in_edges for every edge. */
	printf("bench-core: dictionary in memory ~%zu bytes (%.1f bytes/edge), "
	       "plus %zu bytes of in_edges allocated unused after encoding\n",
	       footprint, (double)footprint / dict->n_edges, spare);
}

/* ------------------------------------------------------------------ main */

static const uint32_t decode_depths[] = { 0, TARGET_DECODE_DEPTH, 64 };

int main(void)
{
	struct bench_graph bg;
	struct dacce_dict *dict, *small;
	struct walker walker;
	double encode_median, target_rate = 0;
	uint32_t n_epoch_edges;

	pin_to_one_core();
	build_graph(&bg);
	dict = bench_encode(bg.graph, 0, "", &encode_median);
	small = bench_encode(bg.graph, SMALL_ID_LIMIT, " id_limit=2^20", NULL);
	dacce_dict_free(small);
	report_in_edges(dict);
	bench_size(dict);

	n_epoch_edges = bg.graph->n_edges;
	walker_init(&walker, &bg, dict);
	for (size_t i = 0; i < ARRAY_SIZE(decode_depths); i++) {
		struct context_set set;
		double rate;

		make_contexts(&set, &walker, decode_depths[i]);
		rate = bench_decode(&set, dict, bg.graph);
		if (decode_depths[i] == TARGET_DECODE_DEPTH)
			target_rate = rate;
		free_contexts(&set);
	}
	printf("bench-core: walks added %u call edges after the epoch (graph now %u edges, "
	       "%u in the epoch)\n",
	       walker.n_later, bg.graph->n_edges, n_epoch_edges);
	walker_fini(&walker);
	dacce_dict_free(dict);
	dacce_graph_free(bg.graph);

	printf("target: encode 250k edges < 1 s: median %.1f ms (%s)\n", encode_median * 1e3,
	       encode_median < TARGET_ENCODE_SECONDS ? "met" : "NOT met");
	printf("target: decode depth 8 >= 1,000,000 contexts/s: median %.0f contexts/s (%s)\n",
	       target_rate, target_rate >= TARGET_DECODE_RATE ? "met" : "NOT met");
	return 0;
}
