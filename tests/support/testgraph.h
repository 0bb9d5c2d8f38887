/* SPDX-License-Identifier: MIT */
/*
 * Small call graphs with named functions for unit tests: one module, a node
 * per name, a fresh site per call edge unless a site is given.
 */
#ifndef DACCE_TESTGRAPH_H
#define DACCE_TESTGRAPH_H

#include <stdint.h>

#include "decode.h"
#include "graph.h"

#define TG_MAX_NAMES 256

struct testgraph {
	struct dacce_graph *graph;
	uint32_t module;
	uint32_t next_site_offset;
	char names[TG_MAX_NAMES][16];
	uint32_t nodes[TG_MAX_NAMES];
	uint32_t n_names;
};

void tg_init(struct testgraph *tg);
void tg_fini(struct testgraph *tg);
/* The node of a named function, created on first use. */
uint32_t tg_fn(struct testgraph *tg, const char *name);
const char *tg_name(const struct testgraph *tg, uint32_t node);
/* A new call site in caller. */
uint32_t tg_site(struct testgraph *tg, const char *caller, enum dacce_site_kind kind);
/* An edge at a site, with an observed frequency. */
uint32_t tg_edge_at(struct testgraph *tg, uint32_t site, const char *callee, uint64_t freq);
/* A direct call edge at a new site. */
uint32_t tg_call(struct testgraph *tg, const char *caller, const char *callee, uint64_t freq);
uint32_t tg_root(struct testgraph *tg, const char *fn);
/* Names of a decoded path, outermost first, separated by spaces. */
void tg_path_names(const struct testgraph *tg, const struct dacce_frame *frames, int n,
		   char *buf, size_t len);

#endif
