// SPDX-License-Identifier: MIT
#include "testgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what)
{
	fprintf(stderr, "testgraph: %s\n", what);
	abort();
}

void tg_init(struct testgraph *tg)
{
	static const uint8_t build_id[] = { 0xda, 0xcc, 0xe0, 0x01 };

	memset(tg, 0, sizeof(*tg));
	tg->graph = dacce_graph_new();
	if (!tg->graph || dacce_graph_add_module(tg->graph, build_id, sizeof(build_id), &tg->module))
		die("cannot create graph");
	tg->next_site_offset = 0x100000;
}

void tg_fini(struct testgraph *tg)
{
	dacce_graph_free(tg->graph);
	tg->graph = NULL;
}

uint32_t tg_fn(struct testgraph *tg, const char *name)
{
	for (uint32_t i = 0; i < tg->n_names; i++)
		if (strcmp(tg->names[i], name) == 0)
			return tg->nodes[i];
	if (tg->n_names == TG_MAX_NAMES || strlen(name) >= sizeof(tg->names[0]))
		die("too many or too long names");
	snprintf(tg->names[tg->n_names], sizeof(tg->names[0]), "%s", name);
	if (dacce_graph_add_node(tg->graph, tg->module, 0x1000 + 0x100 * tg->n_names,
				 &tg->nodes[tg->n_names]))
		die("cannot add node");
	return tg->nodes[tg->n_names++];
}

const char *tg_name(const struct testgraph *tg, uint32_t node)
{
	for (uint32_t i = 0; i < tg->n_names; i++)
		if (tg->nodes[i] == node)
			return tg->names[i];
	return node == DACCE_ROOT_NODE ? "R" : "?";
}

uint32_t tg_site(struct testgraph *tg, const char *caller, enum dacce_site_kind kind)
{
	uint32_t site;

	if (dacce_graph_add_site(tg->graph, tg_fn(tg, caller), tg->module,
				 tg->next_site_offset++, kind, &site))
		die("cannot add site");
	return site;
}

uint32_t tg_edge_at(struct testgraph *tg, uint32_t site, const char *callee, uint64_t freq)
{
	uint32_t edge;

	if (dacce_graph_add_edge(tg->graph, site, tg_fn(tg, callee), &edge))
		die("cannot add edge");
	tg->graph->edges[edge].freq += freq;
	return edge;
}

uint32_t tg_call(struct testgraph *tg, const char *caller, const char *callee, uint64_t freq)
{
	return tg_edge_at(tg, tg_site(tg, caller, DACCE_SITE_DIRECT), callee, freq);
}

uint32_t tg_root(struct testgraph *tg, const char *fn)
{
	uint32_t edge;

	if (dacce_graph_add_root_edge(tg->graph, DACCE_ROOT_SITE_MAIN, tg_fn(tg, fn), &edge))
		die("cannot add root edge");
	return edge;
}

void tg_path_names(const struct testgraph *tg, const struct dacce_frame *frames, int n,
		   char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = n - 1; i >= 0 && used < len; i--)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i == n - 1 ? "" : " ",
					 tg_name(tg, frames[i].node));
}
