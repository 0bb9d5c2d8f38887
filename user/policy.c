// SPDX-License-Identifier: MIT
/* The controller's re-encoding policy (see policy.h). */
#include "policy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dacce_events.h"
#include "graph.h"
#include "hashmap.h"

#define PENDING_TIMEOUT_NS (5ull * 1000 * 1000 * 1000)

/* The wait after an epoch, in units of its pause. */
#define PAUSE_BUDGET 20

/* What the policy knows of each edge. */
#define EDGE_ENCODABLE 0x1 /* a push of it could be avoided by encoding (not pinned, not a root) */
#define EDGE_SELF 0x2	   /* a function's call to itself: every encoding pushes it */
#define EDGE_BACK_TRIED 0x4 /* an epoch was asked for it as a hot back edge */

/* What the policy knows of one process. */
struct proc_policy {
	uint32_t pid;
	uint8_t *edge_flags; /* EDGE_* */
	uint32_t n_edges, cap_edges;
	uint32_t encoded_upto;	    /* edges the last epoch considered: below, pushed for good */
	uint32_t new_edges;	    /* encodable edges found since the last request */
	uint32_t window_samples;    /* samples since the last request */
	uint32_t window_pushed;	    /* of them, with an encodable edge on the ccStack */
	struct dacce_hashmap hits;  /* edge -> samples that had it pushed, since the last request */
	/*
	 * Back edges of the last epoch (pushed in every call) met in samples
	 * since the last request, edge -> samples: the encoder leaves the
	 * lightest edges of a cycle back (docs/encoding.md), and weights it
	 * learned while an edge was new may since have turned.  The runtime's
	 * own policy asks for such an epoch from its push counts
	 * (runtime/epoch.c); under a controller, this does.
	 */
	struct dacce_hashmap back_hits;
	uint32_t hottest;	    /* the hottest pushed edge at the last request */
	uint64_t last_request_ns;
	uint64_t last_pause_ns;	    /* how long the last epoch stopped its threads */
	bool epoch_pending;	    /* a request not yet answered by an epoch */
};

struct dacce_policy {
	struct dacce_policy_settings s;
	struct proc_policy *procs;
	size_t n_procs, cap_procs;
	uint64_t requests;
};

void dacce_policy_settings_default(struct dacce_policy_settings *s)
{
	s->new_edges = 32;
	s->pushed_share = 0.05;
	s->min_samples = 20;
	s->min_interval_ns = 100ull * 1000 * 1000;
}

int dacce_policy_new(const struct dacce_policy_settings *s, struct dacce_policy **out)
{
	struct dacce_policy *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	if (s)
		p->s = *s;
	else
		dacce_policy_settings_default(&p->s);
	*out = p;
	return 0;
}

void dacce_policy_free(struct dacce_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_procs; i++) {
		free(p->procs[i].edge_flags);
		dacce_hashmap_fini(&p->procs[i].hits);
		dacce_hashmap_fini(&p->procs[i].back_hits);
	}
	free(p->procs);
	free(p);
}

uint64_t dacce_policy_requests(const struct dacce_policy *p)
{
	return p->requests;
}

static struct proc_policy *proc_of(struct dacce_policy *p, uint32_t pid, bool create)
{
	struct proc_policy *pp;

	for (size_t i = 0; i < p->n_procs; i++)
		if (p->procs[i].pid == pid)
			return &p->procs[i];
	if (!create)
		return NULL;
	if (p->n_procs == p->cap_procs) {
		size_t cap = p->cap_procs ? p->cap_procs * 2 : 8;
		struct proc_policy *grown = realloc(p->procs, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		p->procs = grown;
		p->cap_procs = cap;
	}
	pp = &p->procs[p->n_procs++];
	memset(pp, 0, sizeof(*pp));
	pp->pid = pid;
	pp->hottest = DACCE_NONE;
	dacce_hashmap_init(&pp->hits);
	dacce_hashmap_init(&pp->back_hits);
	return pp;
}

/* A new image (exec) or a process gone: what was known no longer holds. */
static void forget(struct proc_policy *pp)
{
	uint32_t pid = pp->pid;

	free(pp->edge_flags);
	dacce_hashmap_fini(&pp->hits);
	dacce_hashmap_fini(&pp->back_hits);
	memset(pp, 0, sizeof(*pp));
	pp->pid = pid;
	pp->hottest = DACCE_NONE;
	dacce_hashmap_init(&pp->hits);
	dacce_hashmap_init(&pp->back_hits);
}

/* Samples taken before an epoch say nothing about the encoding after it. */
static void reset_window(struct proc_policy *pp)
{
	pp->window_samples = 0;
	pp->window_pushed = 0;
	dacce_hashmap_fini(&pp->hits);
	dacce_hashmap_init(&pp->hits);
	dacce_hashmap_fini(&pp->back_hits);
	dacce_hashmap_init(&pp->back_hits);
}

static void on_edge(struct proc_policy *pp, const struct dacce_ev_edge *ev)
{
	bool encodable = !(ev->flags & DACCE_EDGE_PINNED) && dacce_site_kind_is_encodable(ev->kind) &&
			 !dacce_site_kind_is_root(ev->kind);

	if (ev->edge >= pp->cap_edges) {
		uint32_t cap = pp->cap_edges ? pp->cap_edges : 256;
		uint8_t *grown;

		while (cap <= ev->edge)
			cap *= 2;
		grown = realloc(pp->edge_flags, cap);
		if (!grown)
			return;
		memset(grown + pp->cap_edges, 0, cap - pp->cap_edges);
		pp->edge_flags = grown;
		pp->cap_edges = cap;
	}
	pp->edge_flags[ev->edge] = (encodable ? EDGE_ENCODABLE : 0) |
				   (ev->caller == ev->callee ? EDGE_SELF : 0);
	if (ev->edge + 1 > pp->n_edges)
		pp->n_edges = ev->edge + 1;
	if (encodable)
		pp->new_edges++;
}

static void count_hit(struct dacce_hashmap *map, uint32_t edge)
{
	uint32_t hits = 0;

	dacce_hashmap_get(map, edge, &hits);
	dacce_hashmap_put(map, edge, hits + 1);
}

static void on_sample(struct proc_policy *pp, const struct dacce_ev_sample *ev)
{
	bool pushed = false;
	uint32_t n = ev->ctx.n_entries <= DACCE_BPF_CC_ENTRIES ? ev->ctx.n_entries : 0;

	if (!(ev->ctx.flags & DACCE_CTX_VALID))
		return;
	pp->window_samples++;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t edge = ev->ctx.entries[i].edge;
		uint8_t flags = edge < pp->n_edges ? pp->edge_flags[edge] : 0;

		if (!(flags & EDGE_ENCODABLE))
			continue;
		/* Left pushed by the last epoch: a back edge, helped once at most. */
		if (edge < pp->encoded_upto) {
			if (!(flags & (EDGE_SELF | EDGE_BACK_TRIED)))
				count_hit(&pp->back_hits, edge);
			continue;
		}
		pushed = true;
		count_hit(&pp->hits, edge);
	}
	if (pushed)
		pp->window_pushed++;
}

static void on_fork(struct dacce_policy *p, const struct dacce_ev_fork *ev)
{
	struct proc_policy *parent = proc_of(p, ev->h.tgid, false), *child;

	if (ev->child_tgid == ev->h.tgid || !parent)
		return;
	child = proc_of(p, ev->child_tgid, true);
	parent = proc_of(p, ev->h.tgid, false); /* the array may have moved */
	if (!child || !parent)
		return;
	forget(child);
	/* The child's graph starts as a copy of its parent's. */
	child->edge_flags = malloc(parent->cap_edges ? parent->cap_edges : 1);
	if (!child->edge_flags)
		return;
	memcpy(child->edge_flags, parent->edge_flags, parent->cap_edges);
	child->cap_edges = parent->cap_edges;
	child->n_edges = parent->n_edges;
	child->encoded_upto = parent->encoded_upto;
}

void dacce_policy_record(struct dacce_policy *p, const void *data, size_t size)
{
	const struct dacce_ev_header *h = data;
	struct proc_policy *pp;

	if (size < sizeof(*h))
		return;
	switch (h->type) {
	case DACCE_EV_EDGE:
		if (size >= sizeof(struct dacce_ev_edge) && (pp = proc_of(p, h->tgid, true)))
			on_edge(pp, data);
		break;
	case DACCE_EV_SAMPLE:
		if (size >= sizeof(struct dacce_ev_sample) && (pp = proc_of(p, h->tgid, false)))
			on_sample(pp, data);
		break;
	case DACCE_EV_EPOCH:
		if (size >= sizeof(struct dacce_ev_epoch) && (pp = proc_of(p, h->tgid, true))) {
			const struct dacce_ev_epoch *ev = data;

			pp->encoded_upto = ev->n_edges;
			pp->last_pause_ns = ev->pause_ns > 0 ? (uint64_t)ev->pause_ns : 0;
			pp->epoch_pending = false;
			reset_window(pp);
		}
		break;
	case DACCE_EV_FORK:
		if (size >= sizeof(struct dacce_ev_fork))
			on_fork(p, data);
		break;
	case DACCE_EV_EXEC:
		if ((pp = proc_of(p, h->tgid, false)))
			forget(pp);
		break;
	default:
		break;
	}
}

void dacce_policy_done(struct dacce_policy *p, uint32_t pid, int result, uint64_t epoch)
{
	struct proc_policy *pp = proc_of(p, pid, false);

	(void)epoch;
	/* An installed epoch clears it when its record arrives, which may be after this answer. */
	if (pp && result != 0)
		pp->epoch_pending = false;
}

static int by_samples(const void *a, const void *b)
{
	const struct dacce_control_hint *x = a, *y = b;

	return x->samples != y->samples ? (x->samples < y->samples ? 1 : -1)
					: (x->edge > y->edge) - (x->edge < y->edge);
}

/* The sampled edges of map, hottest first, after the n hints already there: the new count. */
static uint32_t add_hints(const struct dacce_hashmap *map, struct dacce_control_hint *hints,
			  uint32_t n)
{
	uint32_t first = n;

	for (uint32_t i = 0; i < map->capacity && n < DACCE_CONTROL_MAX_HINTS; i++)
		if (map->used[i])
			hints[n++] = (struct dacce_control_hint){ (uint32_t)map->keys[i],
								  map->values[i] };
	qsort(hints + first, n - first, sizeof(*hints), by_samples);
	return n;
}

/* The back edge sampled most, when it is on the ccStack in enough samples to ask for it. */
static uint32_t hot_back_edge(const struct dacce_policy *p, const struct proc_policy *pp)
{
	struct dacce_control_hint top[DACCE_CONTROL_MAX_HINTS];
	uint32_t n = add_hints(&pp->back_hits, top, 0);

	if (n == 0 || pp->window_samples < p->s.min_samples ||
	    (double)top[0].samples < p->s.pushed_share * pp->window_samples)
		return DACCE_NONE;
	return top[0].edge;
}

static bool due(const struct dacce_policy *p, const struct proc_policy *pp, uint32_t hottest)
{
	bool judged = pp->window_samples >= p->s.min_samples;

	if (pp->new_edges >= p->s.new_edges)
		return true;
	if (judged && (double)pp->window_pushed >= p->s.pushed_share * pp->window_samples)
		return true;
	if (hot_back_edge(p, pp) != DACCE_NONE)
		return true;
	/* Hot paths changed: the hottest pushed edge is another one. */
	return judged && hottest != DACCE_NONE && hottest != pp->hottest && pp->window_pushed;
}

int dacce_policy_due(const struct dacce_policy *p, uint32_t pid, uint64_t now_ns,
		     struct dacce_control_hint *hints, uint32_t *n_hints)
{
	const struct proc_policy *pp = NULL;
	uint64_t gap;
	uint32_t n;

	for (size_t i = 0; i < p->n_procs && !pp; i++)
		if (p->procs[i].pid == pid)
			pp = &p->procs[i];
	*n_hints = 0;
	if (!pp)
		return -ENOENT;
	/* Pauses at most about 5 % of the time, as the runtime's own policy (runtime/epoch.c). */
	gap = pp->last_pause_ns * PAUSE_BUDGET > p->s.min_interval_ns
		      ? pp->last_pause_ns * PAUSE_BUDGET
		      : p->s.min_interval_ns;
	if (pp->epoch_pending || now_ns - pp->last_request_ns < gap)
		return 0;
	/* Edges found since the last epoch first: their hottest tells whether hot paths changed. */
	n = add_hints(&pp->hits, hints, 0);
	if (!due(p, pp, n ? hints[0].edge : DACCE_NONE))
		return 0;
	*n_hints = add_hints(&pp->back_hits, hints, n);
	return 1;
}

void dacce_policy_requested(struct dacce_policy *p, uint32_t pid, uint64_t now_ns,
			    const struct dacce_control_hint *hints, uint32_t n_hints)
{
	struct proc_policy *pp = proc_of(p, pid, false);
	uint32_t back;

	if (!pp)
		return;
	back = hot_back_edge(p, pp);
	if (back != DACCE_NONE && back < pp->n_edges)
		pp->edge_flags[back] |= EDGE_BACK_TRIED; /* whatever the encoding then gives */
	p->requests++;
	pp->epoch_pending = true;
	pp->last_request_ns = now_ns;
	pp->hottest = n_hints && hints[0].edge >= pp->encoded_upto ? hints[0].edge : DACCE_NONE;
	pp->new_edges = 0;
	reset_window(pp);
}

void dacce_policy_tick(struct dacce_policy *p, struct dacce_control *ctl, uint64_t now_ns)
{
	static struct dacce_control_hint hints[DACCE_CONTROL_MAX_HINTS];

	for (size_t i = 0; i < p->n_procs; i++) {
		struct proc_policy *pp = &p->procs[i];
		uint32_t n;

		/* An answer lost with its connection must not stop the policy for good. */
		if (pp->epoch_pending && now_ns - pp->last_request_ns > PENDING_TIMEOUT_NS)
			pp->epoch_pending = false;
		if (!dacce_control_connected(ctl, pp->pid) ||
		    dacce_policy_due(p, pp->pid, now_ns, hints, &n) != 1 ||
		    dacce_control_request_epoch(ctl, pp->pid, hints, n))
			continue;
		dacce_policy_requested(p, pp->pid, now_ns, hints, n);
	}
}
