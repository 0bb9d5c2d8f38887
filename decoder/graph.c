// SPDX-License-Identifier: MIT
#include "graph.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const site_kind_names[DACCE_SITE_KIND_COUNT] = {
	[DACCE_SITE_DIRECT] = "direct",
	[DACCE_SITE_INDIRECT] = "indirect",
	[DACCE_SITE_PLT] = "plt",
	[DACCE_SITE_TAIL_DIRECT] = "tail",
	[DACCE_SITE_TAIL_INDIRECT] = "tail-indirect",
	[DACCE_SITE_ROOT_MAIN] = "root-main",
	[DACCE_SITE_ROOT_THREAD] = "root-thread",
	[DACCE_SITE_ROOT_SIGNAL] = "root-signal",
	[DACCE_SITE_ROOT_CALLBACK] = "root-callback",
};

const char *dacce_site_kind_name(enum dacce_site_kind kind)
{
	if ((unsigned)kind >= DACCE_SITE_KIND_COUNT)
		return "unknown";
	return site_kind_names[kind];
}

static const uint8_t root_site_kinds[DACCE_NR_ROOT_SITES] = {
	[DACCE_ROOT_SITE_MAIN] = DACCE_SITE_ROOT_MAIN,
	[DACCE_ROOT_SITE_THREAD] = DACCE_SITE_ROOT_THREAD,
	[DACCE_ROOT_SITE_SIGNAL] = DACCE_SITE_ROOT_SIGNAL,
	[DACCE_ROOT_SITE_CALLBACK] = DACCE_SITE_ROOT_CALLBACK,
};

/* Grows *array (of *cap elements of size elem) to hold one more element. */
static int reserve_one(void **array, uint32_t *cap, uint32_t count, size_t elem)
{
	uint32_t new_cap;
	void *grown;

	if (count < *cap)
		return 0;
	if (count >= DACCE_NONE - 1)
		return -ENOMEM;
	new_cap = *cap ? *cap * 2 : 64;
	if (new_cap < *cap || new_cap >= DACCE_NONE)
		new_cap = DACCE_NONE - 1;
	grown = realloc(*array, (size_t)new_cap * elem);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = new_cap;
	return 0;
}

static uint64_t identity_key(uint32_t module, uint64_t offset)
{
	return ((uint64_t)module << 48) | offset;
}

struct dacce_graph *dacce_graph_new(void)
{
	struct dacce_graph *graph = calloc(1, sizeof(*graph));
	uint32_t root, site;

	if (!graph)
		return NULL;
	dacce_hashmap_init(&graph->node_index);
	dacce_hashmap_init(&graph->site_index);
	dacce_hashmap_init(&graph->edge_index);

	/* R and the root sites have no identity in any module: not indexed. */
	if (reserve_one((void **)&graph->nodes, &graph->cap_nodes, 0, sizeof(*graph->nodes)))
		goto fail;
	root = graph->n_nodes++;
	graph->nodes[root] = (struct dacce_node){ .module = DACCE_NONE, .offset = 0 };

	for (int i = 0; i < DACCE_NR_ROOT_SITES; i++) {
		if (reserve_one((void **)&graph->sites, &graph->cap_sites, graph->n_sites,
				sizeof(*graph->sites)))
			goto fail;
		site = graph->n_sites++;
		graph->sites[site] = (struct dacce_site){
			.caller = root, .module = DACCE_NONE, .offset = (uint64_t)i,
			.kind = root_site_kinds[i],
		};
	}
	return graph;
fail:
	dacce_graph_free(graph);
	return NULL;
}

void dacce_graph_free(struct dacce_graph *graph)
{
	if (!graph)
		return;
	free(graph->modules);
	free(graph->nodes);
	free(graph->sites);
	free(graph->edges);
	dacce_hashmap_fini(&graph->node_index);
	dacce_hashmap_fini(&graph->site_index);
	dacce_hashmap_fini(&graph->edge_index);
	free(graph);
}

struct dacce_graph *dacce_graph_new_copy(void)
{
	struct dacce_graph *graph = calloc(1, sizeof(*graph));

	if (!graph)
		return NULL;
	dacce_hashmap_init(&graph->node_index);
	dacce_hashmap_init(&graph->site_index);
	dacce_hashmap_init(&graph->edge_index);
	return graph;
}

/* Makes *array (of *cap elements of size elem) hold at least count elements. */
static int reserve_all(void **array, uint32_t *cap, uint32_t count, size_t elem)
{
	void *grown;

	if (count <= *cap)
		return 0;
	grown = realloc(*array, (size_t)count * elem);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = count;
	return 0;
}

int dacce_graph_copy_for_encoding(const struct dacce_graph *from, struct dacce_graph *into)
{
	if (!from || !into || into->n_modules || into->cap_nodes)
		return -EINVAL;
	if (reserve_all((void **)&into->sites, &into->cap_sites, from->n_sites,
			sizeof(*into->sites)) ||
	    reserve_all((void **)&into->edges, &into->cap_edges, from->n_edges,
			sizeof(*into->edges)))
		return -ENOMEM;
	memcpy(into->sites, from->sites, (size_t)from->n_sites * sizeof(*into->sites));
	memcpy(into->edges, from->edges, (size_t)from->n_edges * sizeof(*into->edges));
	into->n_sites = from->n_sites;
	into->n_edges = from->n_edges;
	into->n_nodes = from->n_nodes;
	return 0;
}

int dacce_graph_add_module(struct dacce_graph *graph, const uint8_t *build_id,
			   size_t build_id_len, uint32_t *module)
{
	struct dacce_module *m;
	int err;

	if (!graph || !module || (build_id_len && !build_id) || build_id_len > DACCE_BUILD_ID_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < graph->n_modules; i++) {
		m = &graph->modules[i];
		if (m->build_id_len == build_id_len &&
		    memcmp(m->build_id, build_id, build_id_len) == 0) {
			*module = i;
			return 0;
		}
	}
	if (graph->n_modules > DACCE_MODULE_MAX)
		return -ENOSPC;
	err = reserve_one((void **)&graph->modules, &graph->cap_modules, graph->n_modules,
			  sizeof(*graph->modules));
	if (err)
		return err;
	m = &graph->modules[graph->n_modules];
	memset(m, 0, sizeof(*m));
	if (build_id_len)
		memcpy(m->build_id, build_id, build_id_len);
	m->build_id_len = (uint8_t)build_id_len;
	*module = graph->n_modules++;
	return 0;
}

uint32_t dacce_graph_find_node(const struct dacce_graph *graph, uint32_t module,
			       uint64_t offset)
{
	uint32_t node;

	if (module >= graph->n_modules || offset > DACCE_OFFSET_MAX)
		return DACCE_NONE;
	if (dacce_hashmap_get(&graph->node_index, identity_key(module, offset), &node))
		return DACCE_NONE;
	return node;
}

int dacce_graph_add_node(struct dacce_graph *graph, uint32_t module, uint64_t offset,
			 uint32_t *node)
{
	uint32_t found;
	int err;

	if (!graph || !node || module >= graph->n_modules || offset > DACCE_OFFSET_MAX)
		return -EINVAL;
	found = dacce_graph_find_node(graph, module, offset);
	if (found != DACCE_NONE) {
		*node = found;
		return 0;
	}
	err = reserve_one((void **)&graph->nodes, &graph->cap_nodes, graph->n_nodes,
			  sizeof(*graph->nodes));
	if (err)
		return err;
	err = dacce_hashmap_put(&graph->node_index, identity_key(module, offset), graph->n_nodes);
	if (err)
		return err;
	graph->nodes[graph->n_nodes] = (struct dacce_node){ .module = module, .offset = offset };
	*node = graph->n_nodes++;
	return 0;
}

uint32_t dacce_graph_find_site(const struct dacce_graph *graph, uint32_t module,
			       uint64_t offset)
{
	uint32_t site;

	if (module >= graph->n_modules || offset > DACCE_OFFSET_MAX)
		return DACCE_NONE;
	if (dacce_hashmap_get(&graph->site_index, identity_key(module, offset), &site))
		return DACCE_NONE;
	return site;
}

int dacce_graph_add_site(struct dacce_graph *graph, uint32_t caller, uint32_t module,
			 uint64_t offset, enum dacce_site_kind kind, uint32_t *site)
{
	uint32_t found;
	int err;

	if (!graph || !site || caller >= graph->n_nodes || caller == DACCE_ROOT_NODE ||
	    module >= graph->n_modules || offset > DACCE_OFFSET_MAX ||
	    (unsigned)kind >= DACCE_SITE_KIND_COUNT || dacce_site_kind_is_root(kind))
		return -EINVAL;
	found = dacce_graph_find_site(graph, module, offset);
	if (found != DACCE_NONE) {
		if (graph->sites[found].caller != caller || graph->sites[found].kind != kind)
			return -EEXIST;
		*site = found;
		return 0;
	}
	err = reserve_one((void **)&graph->sites, &graph->cap_sites, graph->n_sites,
			  sizeof(*graph->sites));
	if (err)
		return err;
	err = dacce_hashmap_put(&graph->site_index, identity_key(module, offset), graph->n_sites);
	if (err)
		return err;
	graph->sites[graph->n_sites] = (struct dacce_site){
		.caller = caller, .module = module, .offset = offset, .kind = (uint8_t)kind,
	};
	*site = graph->n_sites++;
	return 0;
}

uint32_t dacce_graph_find_edge(const struct dacce_graph *graph, uint32_t site,
			       uint32_t callee)
{
	uint32_t edge;

	if (dacce_hashmap_get(&graph->edge_index, ((uint64_t)site << 32) | callee, &edge))
		return DACCE_NONE;
	return edge;
}

int dacce_graph_add_edge(struct dacce_graph *graph, uint32_t site, uint32_t callee,
			 uint32_t *edge)
{
	const struct dacce_site *s;
	uint32_t found;
	int err;

	if (!graph || !edge || site >= graph->n_sites || callee >= graph->n_nodes ||
	    callee == DACCE_ROOT_NODE)
		return -EINVAL;
	found = dacce_graph_find_edge(graph, site, callee);
	if (found != DACCE_NONE) {
		*edge = found;
		return 0;
	}
	err = reserve_one((void **)&graph->edges, &graph->cap_edges, graph->n_edges,
			  sizeof(*graph->edges));
	if (err)
		return err;
	err = dacce_hashmap_put(&graph->edge_index, ((uint64_t)site << 32) | callee,
				graph->n_edges);
	if (err)
		return err;
	s = &graph->sites[site];
	graph->edges[graph->n_edges] = (struct dacce_edge){
		.site = site, .caller = s->caller, .callee = callee, .kind = s->kind, .freq = 0,
	};
	*edge = graph->n_edges++;
	return 0;
}

int dacce_graph_pin_edge(struct dacce_graph *graph, uint32_t edge)
{
	if (!graph || edge >= graph->n_edges)
		return -EINVAL;
	graph->edges[edge].flags |= DACCE_EDGE_PINNED;
	return 0;
}

int dacce_graph_leaf_edge(struct dacce_graph *graph, uint32_t edge)
{
	if (!graph || edge >= graph->n_edges)
		return -EINVAL;
	graph->edges[edge].flags |= DACCE_EDGE_LEAF;
	return 0;
}

int dacce_graph_keep_free_edge(struct dacce_graph *graph, uint32_t edge)
{
	if (!graph || edge >= graph->n_edges)
		return -EINVAL;
	graph->edges[edge].flags |= DACCE_EDGE_KEEP_FREE;
	return 0;
}

int dacce_graph_unkeep_free_edge(struct dacce_graph *graph, uint32_t edge)
{
	if (!graph || edge >= graph->n_edges)
		return -EINVAL;
	graph->edges[edge].flags &= ~DACCE_EDGE_KEEP_FREE;
	return 0;
}

int dacce_graph_add_root_edge(struct dacce_graph *graph, enum dacce_root_site root,
			      uint32_t callee, uint32_t *edge)
{
	if ((unsigned)root >= DACCE_NR_ROOT_SITES)
		return -EINVAL;
	return dacce_graph_add_edge(graph, (uint32_t)root, callee, edge);
}
