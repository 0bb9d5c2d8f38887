// SPDX-License-Identifier: MIT
#include "dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void dacce_encode_opts_default(struct dacce_encode_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->id_limit = DACCE_ID_LIMIT_DEFAULT;
	opts->dispatch_min_targets = 8;
	opts->compress_back_edges = true;
	opts->compress_unencoded = true;
}

void dacce_dict_free(struct dacce_dict *dict)
{
	if (!dict)
		return;
	free(dict->num_cc);
	free(dict->dummy);
	free(dict->in_start);
	free(dict->in_edges);
	free(dict->in_range);
	free(dict->edge_ends);
	free(dict->leaf_range);
	free(dict->site_caller);
	free(dict->site_kind);
	free(dict->edge_site);
	free(dict->edge_caller);
	free(dict->edge_callee);
	free(dict->edge_class);
	free(dict->edge_compress);
	free(dict->en);
	for (uint32_t i = 0; dict->dispatch && i < dict->n_dispatch; i++) {
		free(dict->dispatch[i].callee);
		free(dict->dispatch[i].edge);
	}
	free(dict->dispatch);
	free(dict);
}

/* calloc that accepts 0 elements (returns a valid, freeable pointer). */
static void *zalloc(size_t count, size_t size)
{
	return calloc(count ? count : 1, size);
}

struct dacce_dict *dacce_dict_alloc(uint32_t n_nodes, uint32_t n_sites, uint32_t n_edges,
				    uint32_t n_in_edges, uint32_t n_dispatch)
{
	struct dacce_dict *dict = calloc(1, sizeof(*dict));

	if (!dict)
		return NULL;
	dict->n_nodes = n_nodes;
	dict->n_sites = n_sites;
	dict->n_edges = n_edges;
	dict->n_dispatch = n_dispatch;
	dict->num_cc = zalloc(n_nodes, sizeof(*dict->num_cc));
	dict->dummy = zalloc(n_nodes, sizeof(*dict->dummy));
	dict->in_start = zalloc((size_t)n_nodes + 1, sizeof(*dict->in_start));
	dict->in_edges = zalloc(n_in_edges, sizeof(*dict->in_edges));
	dict->site_caller = zalloc(n_sites, sizeof(*dict->site_caller));
	dict->site_kind = zalloc(n_sites, sizeof(*dict->site_kind));
	dict->edge_site = zalloc(n_edges, sizeof(*dict->edge_site));
	dict->edge_caller = zalloc(n_edges, sizeof(*dict->edge_caller));
	dict->edge_callee = zalloc(n_edges, sizeof(*dict->edge_callee));
	dict->edge_class = zalloc(n_edges, sizeof(*dict->edge_class));
	dict->edge_compress = zalloc(n_edges, sizeof(*dict->edge_compress));
	dict->en = zalloc(n_edges, sizeof(*dict->en));
	dict->dispatch = zalloc(n_dispatch, sizeof(*dict->dispatch));
	if (!dict->num_cc || !dict->dummy || !dict->in_start || !dict->in_edges ||
	    !dict->site_caller || !dict->site_kind || !dict->edge_site || !dict->edge_caller ||
	    !dict->edge_callee || !dict->edge_class || !dict->edge_compress || !dict->en ||
	    !dict->dispatch) {
		dacce_dict_free(dict);
		return NULL;
	}
	return dict;
}

static int by_en(const void *a, const void *b)
{
	const struct dacce_in_range *x = a, *y = b;

	return x->en < y->en ? -1 : x->en > y->en;
}

/* The leaf nodes' ranges in one sorted list, checked to be disjoint and above every other id. */
static int index_leaf_ranges(struct dacce_dict *dict)
{
	struct dacce_in_range *leaf;
	uint64_t floor = 0;
	uint32_t n = 0;

	for (uint32_t v = 0; v < dict->n_nodes; v++) {
		if (dict->dummy[v] == DACCE_DUMMY_LEAF)
			n += dict->in_start[v + 1] - dict->in_start[v];
		else if (dict->num_cc[v] > floor)
			floor = dict->num_cc[v];
	}
	leaf = calloc(n ? n : 1, sizeof(*leaf));
	if (!leaf)
		return -ENOMEM;
	n = 0;
	for (uint32_t v = 0; v < dict->n_nodes; v++)
		if (dict->dummy[v] == DACCE_DUMMY_LEAF)
			for (uint32_t k = dict->in_start[v]; k < dict->in_start[v + 1]; k++)
				leaf[n++] = dict->in_range[k];
	qsort(leaf, n, sizeof(*leaf), by_en);
	for (uint32_t k = 0; k < n; k++) {
		if (leaf[k].en < (k ? leaf[k - 1].end : floor)) {
			free(leaf);
			return -EBADMSG;
		}
	}
	free(dict->leaf_range);
	dict->leaf_range = leaf;
	dict->n_leaf_range = n;
	return 0;
}

int dacce_dict_index(struct dacce_dict *dict)
{
	uint32_t n_in = dict->in_start[dict->n_nodes];
	struct dacce_in_range *range = calloc(n_in ? n_in : 1, sizeof(*range));

	if (!range)
		return -ENOMEM;
	for (uint32_t k = 0; k < n_in; k++) {
		uint32_t e = dict->in_edges[k];
		uint32_t caller = dict->edge_caller[e];

		range[k] = (struct dacce_in_range){
			.en = dict->en[e],
			.end = dict->en[e] + dict->num_cc[caller],
			.caller = caller,
			.edge = e,
		};
	}
	free(dict->in_range);
	dict->in_range = range;

	struct dacce_edge_ends *ends = calloc(dict->n_edges ? dict->n_edges : 1, sizeof(*ends));

	if (!ends)
		return -ENOMEM;
	for (uint32_t e = 0; e < dict->n_edges; e++)
		ends[e] = (struct dacce_edge_ends){
			.caller = dict->edge_caller[e],
			.callee = dict->edge_callee[e],
			.kind = dict->site_kind[dict->edge_site[e]],
		};
	free(dict->edge_ends);
	dict->edge_ends = ends;
	return index_leaf_ranges(dict);
}

int dacce_dict_edge(const struct dacce_dict *dict, const struct dacce_graph *later,
		    uint32_t edge, struct dacce_edge_view *view)
{
	const struct dacce_edge *e;

	if (edge < dict->n_edges) {
		view->site = dict->edge_site[edge];
		view->caller = dict->edge_caller[edge];
		view->callee = dict->edge_callee[edge];
		view->kind = dict->site_kind[view->site];
		view->class = dict->edge_class[edge];
		view->compress = dict->edge_compress[edge];
		view->en = dict->en[edge];
		return 0;
	}
	if (!later || edge >= later->n_edges)
		return -ENOENT;
	e = &later->edges[edge];
	view->site = e->site;
	view->caller = e->caller;
	view->callee = e->callee;
	view->kind = e->kind;
	view->class = DACCE_EDGE_UNENCODED;
	view->compress = dict->compress_new && !dacce_site_kind_is_nested_root(e->kind);
	view->en = 0;
	return 0;
}

const struct dacce_dispatch *dacce_dict_dispatch(const struct dacce_dict *dict, uint32_t site)
{
	uint32_t lo = 0, hi = dict->n_dispatch;

	/* Tables are sorted by site. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (dict->dispatch[mid].site < site)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < dict->n_dispatch && dict->dispatch[lo].site == site)
		return &dict->dispatch[lo];
	return NULL;
}

uint32_t dacce_dispatch_lookup(const struct dacce_dispatch *table, uint32_t callee)
{
	uint32_t mask = (1u << table->bits) - 1;
	uint32_t slot = dacce_dispatch_slot(callee, table->bits);

	/* Linear probing; the table is at most half full, so an empty slot ends it. */
	for (uint32_t probes = 0; probes <= mask; probes++, slot = (slot + 1) & mask) {
		if (table->callee[slot] == callee)
			return table->edge[slot];
		if (table->callee[slot] == DACCE_NONE)
			return DACCE_NONE;
	}
	return DACCE_NONE;
}
