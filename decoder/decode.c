// SPDX-License-Identifier: MIT
/*
 * Algorithm 1 of the DACCE paper, generalised.
 *
 * A context is a stack of sub-paths.  The bottom one starts at R; every other
 * starts at the callee (the "head") of the ccStack entry below it, and its id
 * carries the offset maxID + 1 (the paper's [maxID+1, 2*maxID+1] range,
 * "onstack").  Within a sub-path only encoded edges are taken, so it is
 * acyclic and its head appears once: walking back from the innermost node,
 * reaching the head with a residual id of 0 is the only way to meet the top
 * entry's callee, and then the entry is popped.  Otherwise the incoming
 * encoded edge whose range [En, En + numCC(caller)) holds the id is taken.
 *
 * Generalisations: entries with a repeat count stand for count + 1 equal
 * pushes; nested-root entries (signals, callbacks) continue in the node they
 * interrupted instead of the edge's caller; edges found after the epoch are
 * read from the later graph; a context inside a leaf call (DACCE_IN_LEAF)
 * starts with the leaf edge whose range in the shared leaf id space holds
 * the id.  Every index is checked before use and every
 * sub-path walk is bounded by the node count, so a corrupt context gives an
 * error instead of a crash or a loop.
 */
#include "decode.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct sink {
	struct dacce_frame *frames;
	size_t len, cap;
	struct dacce_path *path; /* grows when set */
};

struct decoder {
	const struct dacce_dict *dict;
	const struct dacce_graph *later;
	const struct dacce_snapshot *snap;
	struct dacce_decode_error *err;
	struct sink *out;
	uint32_t node_limit;
	uint32_t node;
	uint64_t id;
	bool onstack;
	uint32_t entries;	/* entries not yet fully popped: the top is entries - 1 */
	uint32_t repeats_left;	/* repeats of the top entry still to pop */
};

static int fail(struct decoder *d, int code, const char *message)
{
	if (d->err) {
		d->err->message = message;
		d->err->frames_done = (uint32_t)(d->out->path ? d->out->path->len : d->out->len);
	}
	return code;
}

int dacce_path_push(struct dacce_path *path, struct dacce_frame frame)
{
	if (path->len == path->cap) {
		size_t cap = path->cap ? path->cap * 2 : 64;
		struct dacce_frame *grown = realloc(path->frames, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		path->frames = grown;
		path->cap = cap;
	}
	path->frames[path->len++] = frame;
	return 0;
}

static int emit(struct decoder *d, uint32_t node, uint32_t edge)
{
	struct sink *out = d->out;

	if (out->path) {
		if (dacce_path_push(out->path, (struct dacce_frame){ .node = node, .edge = edge }))
			return fail(d, -ENOMEM, "out of memory");
		return 0;
	}
	if (out->len == out->cap)
		return fail(d, -E2BIG, "more frames than room");
	out->frames[out->len++] = (struct dacce_frame){ .node = node, .edge = edge };
	return 0;
}

/* The paper's AdjustID: split the id into sub-path value and onstack flag. */
static int adjust_id(struct decoder *d, uint64_t id)
{
	uint64_t max_id = d->dict->max_id;

	if (id > max_id) {
		if (id - (max_id + 1) > max_id)
			return fail(d, -EILSEQ, "context id beyond 2*maxID+1");
		d->id = id - (max_id + 1);
		d->onstack = true;
	} else {
		d->id = id;
		d->onstack = false;
	}
	return 0;
}

/* Ends of an edge of the epoch, or of one found after it. */
static int edge_ends(const struct decoder *d, uint32_t edge, struct dacce_edge_ends *ends)
{
	const struct dacce_edge *e;

	if (edge < d->dict->n_edges) {
		*ends = d->dict->edge_ends[edge];
		return 0;
	}
	if (!d->later || edge >= d->later->n_edges)
		return -ENOENT;
	e = &d->later->edges[edge];
	*ends = (struct dacce_edge_ends){ .caller = e->caller, .callee = e->callee, .kind = e->kind };
	return 0;
}

/* Pops one push of the top entry if its callee is the current node. */
static int try_pop(struct decoder *d, bool *popped)
{
	const struct dacce_cc_entry *entry = &d->snap->cc[d->entries - 1];
	struct dacce_edge_ends v;
	bool nested;
	uint32_t next;
	int err;

	*popped = false;
	if (edge_ends(d, entry->edge, &v))
		return fail(d, -EILSEQ, "ccStack names an unknown edge");
	if (v.callee != d->node)
		return 0;
	err = emit(d, d->node, entry->edge);
	if (err)
		return err;
	nested = dacce_site_kind_is_nested_root(v.kind);
	next = nested ? entry->aux : v.caller;
	if (nested && next == DACCE_NONE)
		return fail(d, -ENOLINK, "partial context: the interrupted function is unknown");
	if ((next >= d->node_limit && !(nested && next == DACCE_IN_LEAF)) ||
	    (nested && next == DACCE_ROOT_NODE))
		return fail(d, -EILSEQ, "ccStack entry leads to an unknown function");
	if (!nested && d->repeats_left > 0) {
		d->repeats_left--;
	} else {
		d->entries--;
		d->repeats_left = d->entries ? d->snap->cc[d->entries - 1].aux : 0;
	}
	d->node = next;
	*popped = true;
	return adjust_id(d, entry->id);
}

/*
 * Takes the encoded incoming edge whose range holds the id; inside a leaf
 * call (DACCE_IN_LEAF), the leaf edge whose range in the leaf id space does.
 */
static int take_encoded_edge(struct decoder *d)
{
	const struct dacce_dict *dict = d->dict;
	const struct dacce_in_range *ranges, *hit;
	uint32_t node = d->node, lo, hi, first;

	if (d->node == DACCE_IN_LEAF) {
		ranges = dict->leaf_range;
		lo = 0;
		hi = dict->n_leaf_range;
	} else if (d->node < dict->n_nodes) {
		ranges = dict->in_range;
		lo = dict->in_start[d->node];
		hi = dict->in_start[d->node + 1];
	} else {
		return fail(d, -EILSEQ, "function was not encoded in this epoch");
	}
	first = lo;
	/* Find the last range starting at or below the id: they are sorted and disjoint. */
	if (hi - lo <= 8) {
		while (hi > lo && ranges[hi - 1].en > d->id)
			hi--;
	} else {
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (ranges[mid].en <= d->id)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (hi == first || d->id >= ranges[hi - 1].end)
		return fail(d, -EILSEQ, node == DACCE_IN_LEAF ? "no leaf call holds the id"
							     : "no encoded edge holds the id");
	hit = &ranges[hi - 1];
	if (node == DACCE_IN_LEAF)
		node = dict->edge_ends[hit->edge].callee;
	d->id -= hit->en;
	d->node = hit->caller;
	return emit(d, node, hit->edge);
}

static int run(struct decoder *d)
{
	const struct dacce_snapshot *snap = d->snap;
	uint32_t steps = 0;
	bool popped;
	int err;

	if (snap->epoch != d->dict->epoch)
		return fail(d, -EINVAL, "context is from another epoch");
	if (snap->cc_depth && !snap->cc)
		return fail(d, -EINVAL, "ccStack missing");
	d->node_limit = d->dict->n_nodes;
	if (d->later && d->later->n_nodes > d->node_limit)
		d->node_limit = d->later->n_nodes;
	if ((snap->node >= d->node_limit && snap->node != DACCE_IN_LEAF) ||
	    snap->node == DACCE_ROOT_NODE)
		return fail(d, -EILSEQ, "context ends in an unknown function");
	d->node = snap->node;
	d->entries = snap->cc_depth;
	d->repeats_left = d->entries ? snap->cc[d->entries - 1].aux : 0;
	err = adjust_id(d, snap->id);
	if (err)
		return err;

	while (d->node != DACCE_ROOT_NODE) {
		if (d->onstack && d->id == 0 && d->entries > 0) {
			err = try_pop(d, &popped);
			if (err)
				return err;
			if (popped) {
				steps = 0;
				continue;
			}
		}
		/* A sub-path visits each node at most once. */
		if (++steps > d->dict->n_nodes)
			return fail(d, -EILSEQ, "sub-path longer than the graph");
		err = take_encoded_edge(d);
		if (err)
			return err;
	}
	if (d->onstack || d->id != 0 || d->entries != 0)
		return fail(d, -EILSEQ, "reached the root with context left over");
	return 0;
}

int dacce_decode(const struct dacce_dict *dict, const struct dacce_graph *later,
		 const struct dacce_snapshot *snap, struct dacce_frame *frames,
		 size_t capacity, struct dacce_decode_error *err)
{
	struct sink out = { .frames = frames, .cap = capacity };
	struct decoder d = { .dict = dict, .later = later, .snap = snap, .err = err, .out = &out };
	int ret;

	if (!dict || !snap || (capacity && !frames))
		return -EINVAL;
	ret = run(&d);
	if (ret)
		return ret;
	return (int)(out.len > (size_t)INT32_MAX ? INT32_MAX : out.len);
}

void dacce_path_init(struct dacce_path *path)
{
	memset(path, 0, sizeof(*path));
}

void dacce_path_fini(struct dacce_path *path)
{
	if (!path)
		return;
	free(path->frames);
	memset(path, 0, sizeof(*path));
}

int dacce_decode_append(const struct dacce_dict *dict, const struct dacce_graph *later,
			const struct dacce_snapshot *snap, struct dacce_path *path,
			struct dacce_decode_error *err)
{
	struct sink out = { .path = path };
	struct decoder d = { .dict = dict, .later = later, .snap = snap, .err = err, .out = &out };

	if (!dict || !snap || !path)
		return -EINVAL;
	return run(&d);
}

int dacce_decode_chain(dacce_dict_lookup_fn lookup, void *lookup_ctx,
		       const struct dacce_graph *later, const struct dacce_snapshot *chain,
		       size_t n_chain, struct dacce_path *path, struct dacce_decode_error *err)
{
	for (size_t i = 0; i < n_chain; i++) {
		const struct dacce_dict *dict = lookup(lookup_ctx, chain[i].epoch);
		struct dacce_edge_view outer;
		int ret;

		if (!dict) {
			if (err)
				err->message = "no dictionary for the context's epoch";
			return -ENOENT;
		}
		ret = dacce_decode_append(dict, later, &chain[i], path, err);
		if (ret)
			return ret;
		if (i + 1 == n_chain)
			break;
		/* Only a thread's own context continues in its creator's. */
		if (path->len == 0 ||
		    dacce_dict_edge(dict, later, path->frames[path->len - 1].edge, &outer) ||
		    outer.kind != DACCE_SITE_ROOT_THREAD) {
			if (err)
				err->message = "creation prefix follows a context that is not a thread's";
			return -EILSEQ;
		}
	}
	return 0;
}
