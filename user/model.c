// SPDX-License-Identifier: MIT
/* A capture read back, and samples resolved against it (see model.h). */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dacce_events.h"
#include "dict_io.h"

/* Row limits of one ancestor in a fork child's view: rows below them were inherited. */
struct limits {
	uint64_t modules, nodes, edges, epoch;
};

#define NO_LIMIT UINT64_MAX

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void *grow(void *array, size_t *cap, size_t need, size_t size)
{
	size_t cap_new = *cap ? *cap : 16;
	void *grown;

	if (need <= *cap)
		return array;
	while (cap_new < need)
		cap_new *= 2;
	grown = realloc(array, cap_new * size);
	if (grown)
		*cap = cap_new;
	return grown;
}

#define GROW(array, cap, need)                                                     \
	({                                                                         \
		void *grown_ = grow((array), &(cap), (need), sizeof(*(array)));    \
		if (grown_)                                                        \
			(array) = grown_;                                          \
		grown_ != NULL;                                                    \
	})

static int64_t column_or(sqlite3_stmt *stmt, int col, int64_t fallback)
{
	return sqlite3_column_type(stmt, col) == SQLITE_NULL ? fallback
							       : sqlite3_column_int64(stmt, col);
}

/* ------------------------------------------------------------------ loading */

struct loader {
	struct dacce_model *model;
	struct dacce_model_proc *proc;
	size_t cap_modules, cap_epochs, cap_regions, cap_threads, cap_fragments, cap_copies;
	uint32_t n_sizes; /* entries of proc->node_size */
	int err;
};

static sqlite3_stmt *query(struct loader *l, const char *sql, int64_t proc)
{
	sqlite3_stmt *stmt = dacce_store_prepare(l->model->store, sql);

	if (!stmt) {
		l->err = -EIO;
		return NULL;
	}
	sqlite3_bind_int64(stmt, 1, proc);
	return stmt;
}

/*
 * Replay stops at the first record missing (lost in a full ring buffer): what
 * follows would get the index of what is missing, and a ccStack entry naming
 * it would decode as another edge.  Contexts that need the rest do not decode.
 */
static void graph_failed(struct dacce_model_proc *proc, const char *what)
{
	if (!proc->graph_error)
		proc->graph_error = strdup(what);
}

static void load_graph_modules(struct loader *l, int64_t row, const struct limits *lim)
{
	sqlite3_stmt *stmt = query(l, "SELECT idx, build_id FROM modules WHERE proc = ?1 AND "
				      "idx IS NOT NULL ORDER BY idx, rowid", row);
	struct dacce_model_proc *p = l->proc;

	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		int64_t idx = sqlite3_column_int64(stmt, 0);
		const void *id = sqlite3_column_blob(stmt, 1);
		int id_len = sqlite3_column_bytes(stmt, 1);
		uint32_t got;

		if ((uint64_t)idx >= lim->modules || idx < p->graph->n_modules)
			continue;
		if (idx > p->graph->n_modules ||
		    dacce_graph_add_module(p->graph, id, id ? (size_t)id_len : 0, &got) ||
		    got != (uint64_t)idx) {
			graph_failed(p, "module records are missing");
			break;
		}
	}
	sqlite3_finalize(stmt);
}

/* node_size covers every node of the graph; nodes without a record (the root) have size 0. */
static bool grow_node_sizes(struct loader *l)
{
	struct dacce_model_proc *p = l->proc;
	uint32_t n = p->graph->n_nodes;
	uint64_t *sizes;

	if (n <= l->n_sizes && p->node_size)
		return true;
	sizes = realloc(p->node_size, (n ? n : 1) * sizeof(*sizes));
	if (!sizes)
		return false;
	memset(sizes + l->n_sizes, 0, (n - l->n_sizes) * sizeof(*sizes));
	p->node_size = sizes;
	l->n_sizes = n;
	return true;
}

static void load_nodes(struct loader *l, int64_t row, const struct limits *lim)
{
	sqlite3_stmt *stmt = query(l, "SELECT idx, module, offset, size FROM nodes WHERE proc = ?1 "
				      "ORDER BY idx", row);
	struct dacce_model_proc *p = l->proc;

	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		int64_t idx = sqlite3_column_int64(stmt, 0);
		uint32_t got;

		if ((uint64_t)idx >= lim->nodes || idx < p->graph->n_nodes)
			continue;
		if (idx > p->graph->n_nodes ||
		    dacce_graph_add_node(p->graph, (uint32_t)sqlite3_column_int64(stmt, 1),
					 (uint64_t)sqlite3_column_int64(stmt, 2), &got) ||
		    got != (uint64_t)idx) {
			graph_failed(p, "node records are missing");
			break;
		}
		if (!grow_node_sizes(l)) {
			l->err = -ENOMEM;
			break;
		}
		p->node_size[got] = (uint64_t)sqlite3_column_int64(stmt, 3);
	}
	sqlite3_finalize(stmt);
}

static int replay_edge(struct dacce_graph *g, uint32_t caller, uint32_t callee, uint8_t kind,
		       uint32_t site_module, uint64_t site_offset, uint32_t *edge)
{
	uint32_t site;
	int err;

	if (dacce_site_kind_is_root(kind))
		return dacce_graph_add_root_edge(g, (enum dacce_root_site)(kind - DACCE_SITE_ROOT_MAIN),
						 callee, edge);
	err = dacce_graph_add_site(g, caller, site_module, site_offset, kind, &site);
	return err ? err : dacce_graph_add_edge(g, site, callee, edge);
}

static void load_edges(struct loader *l, int64_t row, const struct limits *lim)
{
	sqlite3_stmt *stmt = query(l, "SELECT idx, caller, callee, kind, site_module, site_offset, "
				      "flags FROM edges WHERE proc = ?1 ORDER BY idx", row);
	struct dacce_model_proc *p = l->proc;

	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		int64_t idx = sqlite3_column_int64(stmt, 0);
		uint32_t got;

		if ((uint64_t)idx >= lim->edges || idx < p->graph->n_edges)
			continue;
		if (idx > p->graph->n_edges ||
		    replay_edge(p->graph, (uint32_t)sqlite3_column_int64(stmt, 1),
				(uint32_t)sqlite3_column_int64(stmt, 2),
				(uint8_t)sqlite3_column_int64(stmt, 3),
				(uint32_t)sqlite3_column_int64(stmt, 4),
				(uint64_t)sqlite3_column_int64(stmt, 5), &got) ||
		    got != (uint64_t)idx) {
			graph_failed(p, "edge records are missing");
			break;
		}
		if (sqlite3_column_int64(stmt, 6) & DACCE_EDGE_PINNED)
			dacce_graph_pin_edge(p->graph, got);
		if (sqlite3_column_int64(stmt, 6) & DACCE_EDGE_LEAF)
			dacce_graph_leaf_edge(p->graph, got);
	}
	sqlite3_finalize(stmt);
}

static void load_modules(struct loader *l, int64_t row)
{
	sqlite3_stmt *stmt = query(l, "SELECT idx, path, build_id, bias, start, end FROM modules "
				      "WHERE proc = ?1 ORDER BY rowid", row);
	struct dacce_model_proc *p = l->proc;

	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		struct dacce_model_module *m;
		int id_len = sqlite3_column_bytes(stmt, 2);

		if (!GROW(p->modules, l->cap_modules, p->n_modules + 1)) {
			l->err = -ENOMEM;
			break;
		}
		m = &p->modules[p->n_modules++];
		memset(m, 0, sizeof(*m));
		m->graph_index = column_or(stmt, 0, -1);
		m->path = strdup(sqlite3_column_text(stmt, 1) ? (const char *)sqlite3_column_text(stmt, 1)
							      : "");
		if (id_len > 0 && id_len <= DACCE_BUILD_ID_MAX) {
			memcpy(m->build_id, sqlite3_column_blob(stmt, 2), (size_t)id_len);
			m->build_id_len = (size_t)id_len;
		}
		m->bias = (uint64_t)sqlite3_column_int64(stmt, 3);
		m->start = (uint64_t)sqlite3_column_int64(stmt, 4);
		m->end = (uint64_t)sqlite3_column_int64(stmt, 5);
		if (!m->path)
			l->err = -ENOMEM;
	}
	sqlite3_finalize(stmt);
}

/* Fragments of the nodes row had within lim (a fork child inherits only the parent's first ones). */
static void load_fragments(struct loader *l, int64_t row, const struct limits *lim)
{
	sqlite3_stmt *stmt = query(l, "SELECT node, module, offset, size FROM fragments "
				      "WHERE proc = ?1", row);
	struct dacce_model_proc *p = l->proc;

	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		struct dacce_model_fragment f = {
			.node = (uint32_t)sqlite3_column_int64(stmt, 0),
			.module = (uint32_t)sqlite3_column_int64(stmt, 1),
			.offset = (uint64_t)sqlite3_column_int64(stmt, 2),
			.size = (uint64_t)sqlite3_column_int64(stmt, 3),
		};

		if (f.node >= lim->nodes)
			continue;
		if (!GROW(p->fragments, l->cap_fragments, p->n_fragments + 1)) {
			l->err = -ENOMEM;
			break;
		}
		p->fragments[p->n_fragments++] = f;
	}
	sqlite3_finalize(stmt);
}


static int by_copy_start(const void *a, const void *b)
{
	uint64_t x = ((const struct dacce_model_copy *)a)->start;
	uint64_t y = ((const struct dacce_model_copy *)b)->start;

	return x < y ? -1 : x > y;
}

static void load_code(struct loader *l, int64_t row)
{
	sqlite3_stmt *stmt = query(l, "SELECT start, size FROM code_regions WHERE proc = ?1", row);
	struct dacce_model_proc *p = l->proc;

	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		size_t cap = l->cap_regions;

		if (!GROW(p->region_start, cap, p->n_regions + 1) ||
		    !GROW(p->region_size, l->cap_regions, p->n_regions + 1)) {
			l->err = -ENOMEM;
			break;
		}
		p->region_start[p->n_regions] = (uint64_t)sqlite3_column_int64(stmt, 0);
		p->region_size[p->n_regions++] = (uint64_t)sqlite3_column_int64(stmt, 1);
	}
	sqlite3_finalize(stmt);
	stmt = query(l, "SELECT address, site_caller, site_offset FROM code_entries WHERE proc = ?1",
		     row);
	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		uint64_t address = (uint64_t)sqlite3_column_int64(stmt, 0);
		uint32_t caller = (uint32_t)sqlite3_column_int64(stmt, 1);
		uint64_t what = (uint64_t)sqlite3_column_int64(stmt, 2);

		if (caller != DACCE_CODE_COPY) {
			if (dacce_hashmap_put(&p->entries, address, caller))
				l->err = -ENOMEM;
		} else if (!GROW(p->copies, l->cap_copies, p->n_copies + 1)) {
			l->err = -ENOMEM;
		} else {
			p->copies[p->n_copies++] = (struct dacce_model_copy){
				.start = address, .size = what >> 32, .node = (uint32_t)what,
			};
		}
	}
	sqlite3_finalize(stmt);
	if (p->n_copies)
		qsort(p->copies, p->n_copies, sizeof(*p->copies), by_copy_start);
}

static void load_epochs(struct loader *l, int64_t row, const struct limits *lim)
{
	sqlite3_stmt *stmt = query(l, "SELECT epoch, max_id, n_nodes, n_edges, pause_ns, time_ns, "
				      "dict, driver FROM epochs WHERE proc = ?1 ORDER BY epoch", row);
	struct dacce_model_proc *p = l->proc;

	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		uint64_t epoch = (uint64_t)sqlite3_column_int64(stmt, 0);
		int blob_len = sqlite3_column_bytes(stmt, 6);
		struct dacce_model_epoch *e;

		if (epoch > lim->epoch)
			continue;
		if (!GROW(p->epochs, l->cap_epochs, p->n_epochs + 1)) {
			l->err = -ENOMEM;
			break;
		}
		e = &p->epochs[p->n_epochs++];
		memset(e, 0, sizeof(*e));
		e->epoch = epoch;
		e->max_id = (uint64_t)sqlite3_column_int64(stmt, 1);
		e->n_nodes = (uint32_t)sqlite3_column_int64(stmt, 2);
		e->n_edges = (uint32_t)sqlite3_column_int64(stmt, 3);
		e->pause_ns = (uint64_t)sqlite3_column_int64(stmt, 4);
		e->time_ns = (uint64_t)sqlite3_column_int64(stmt, 5);
		if (blob_len > 0) {
			uint8_t *copy = malloc((size_t)blob_len);

			if (copy)
				memcpy(copy, sqlite3_column_blob(stmt, 6), (size_t)blob_len);
			e->blob = copy;
			e->blob_len = copy ? (size_t)blob_len : 0;
		}
		e->driver = strdup(sqlite3_column_text(stmt, 7) ? (const char *)sqlite3_column_text(stmt, 7)
								: "");
	}
	sqlite3_finalize(stmt);
}

/* The procs row's fork point, and its parent (0 when none). */
static int64_t fork_point(struct loader *l, int64_t row, struct limits *fork)
{
	sqlite3_stmt *stmt = query(l, "SELECT parent, fork_modules, fork_nodes, fork_edges, "
				      "fork_epoch FROM procs WHERE id = ?1", row);
	int64_t parent = 0;

	if (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		parent = column_or(stmt, 0, 0);
		fork->modules = (uint64_t)column_or(stmt, 1, 0);
		fork->nodes = (uint64_t)column_or(stmt, 2, 0);
		fork->edges = (uint64_t)column_or(stmt, 3, 0);
		fork->epoch = (uint64_t)column_or(stmt, 4, 0);
	}
	sqlite3_finalize(stmt);
	return parent;
}

/* Loads row's records within lim, its ancestors' first (what a fork child inherited). */
static void load_lineage(struct loader *l, int64_t row, const struct limits *lim, int depth)
{
	struct limits fork = { 0 }, inherited;
	int64_t parent = fork_point(l, row, &fork);

	if (parent && depth < 64) {
		inherited = (struct limits){ min_u64(lim->modules, fork.modules),
					     min_u64(lim->nodes, fork.nodes),
					     min_u64(lim->edges, fork.edges),
					     min_u64(lim->epoch, fork.epoch) };
		load_lineage(l, parent, &inherited, depth + 1);
	}
	load_graph_modules(l, row, lim);
	load_nodes(l, row, lim);
	load_edges(l, row, lim);
	load_modules(l, row);
	load_code(l, row);
	load_fragments(l, row, lim);
	load_epochs(l, row, lim);
}

static void load_threads(struct loader *l)
{
	struct dacce_model_proc *p = l->proc;
	sqlite3_stmt *stmt = query(l, "SELECT tid, creator_tid, root_edge, ctx_epoch, ctx_id, "
				      "ctx_reset_id, ctx_depth, ctx_flags, ctx_entries FROM threads "
				      "WHERE proc = ?1", p->id);

	while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		struct dacce_model_thread *t;
		int bytes = sqlite3_column_bytes(stmt, 8);

		if (!GROW(p->threads, l->cap_threads, p->n_threads + 1)) {
			l->err = -ENOMEM;
			break;
		}
		t = &p->threads[p->n_threads++];
		memset(t, 0, sizeof(*t));
		t->tid = (uint32_t)sqlite3_column_int64(stmt, 0);
		t->creator_tid = (uint32_t)column_or(stmt, 1, 0);
		t->root_edge = column_or(stmt, 2, -1);
		t->has_creation_ctx = sqlite3_column_type(stmt, 3) != SQLITE_NULL;
		t->ctx_epoch = (uint64_t)column_or(stmt, 3, 0);
		t->ctx_id = (uint64_t)column_or(stmt, 4, 0);
		t->ctx_reset_id = (uint64_t)column_or(stmt, 5, 0);
		t->ctx_depth = (uint32_t)column_or(stmt, 6, 0);
		t->ctx_flags = (uint32_t)column_or(stmt, 7, 0);
		if (bytes > 0 && bytes % (int)sizeof(struct dacce_cc_entry) == 0) {
			t->ctx_entries = malloc((size_t)bytes);
			if (t->ctx_entries) {
				memcpy(t->ctx_entries, sqlite3_column_blob(stmt, 8), (size_t)bytes);
				t->ctx_n = (uint32_t)((size_t)bytes / sizeof(struct dacce_cc_entry));
			}
		}
	}
	sqlite3_finalize(stmt);
}

static const struct dacce_graph *sorting_graph;

static int by_module_offset(const void *a, const void *b)
{
	const struct dacce_node *x = &sorting_graph->nodes[*(const uint32_t *)a];
	const struct dacce_node *y = &sorting_graph->nodes[*(const uint32_t *)b];

	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return (x->offset > y->offset) - (x->offset < y->offset);
}

/* The program's functions sorted by address, for finding the one a pc is in. */
static void index_functions(struct loader *l)
{
	struct dacce_model_proc *p = l->proc;

	p->functions = malloc((p->graph->n_nodes ? p->graph->n_nodes : 1) * sizeof(*p->functions));
	if (!p->functions) {
		l->err = -ENOMEM;
		return;
	}
	for (uint32_t n = 0; n < p->graph->n_nodes; n++)
		if (p->node_size[n])
			p->functions[p->n_functions++] = n;
	sorting_graph = p->graph;
	qsort(p->functions, p->n_functions, sizeof(*p->functions), by_module_offset);
}

static void index_graph_modules(struct loader *l)
{
	struct dacce_model_proc *p = l->proc;
	uint32_t n = p->graph->n_modules;

	p->module_of_graph = malloc((n ? n : 1) * sizeof(*p->module_of_graph));
	if (!p->module_of_graph) {
		l->err = -ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		p->module_of_graph[i] = -1;
	for (size_t i = 0; i < p->n_modules; i++) {
		int64_t g = p->modules[i].graph_index;

		if (g >= 0 && g < n && p->module_of_graph[g] < 0)
			p->module_of_graph[g] = (int64_t)i;
	}
	/* A scan's row of a module in the graph is that module: same file at the same place. */
	for (size_t i = 0; i < p->n_modules; i++) {
		struct dacce_model_module *m = &p->modules[i];

		for (uint32_t g = 0; g < n && m->graph_index < 0; g++) {
			const struct dacce_model_module *known;

			if (p->module_of_graph[g] < 0)
				continue;
			known = &p->modules[p->module_of_graph[g]];
			if (known->bias == m->bias && strcmp(known->path, m->path) == 0)
				m->graph_index = g;
		}
	}
}

static int load_proc(struct dacce_model *model, sqlite3_stmt *row, struct dacce_model_proc *p)
{
	struct loader l = { .model = model, .proc = p };
	const struct limits all = { NO_LIMIT, NO_LIMIT, NO_LIMIT, NO_LIMIT };

	memset(p, 0, sizeof(*p));
	p->id = sqlite3_column_int64(row, 0);
	p->pid = (uint32_t)sqlite3_column_int64(row, 1);
	p->parent = column_or(row, 2, 0);
	p->exe = strdup(sqlite3_column_text(row, 3) ? (const char *)sqlite3_column_text(row, 3) : "");
	p->runtime = sqlite3_column_int64(row, 4) != 0;
	p->fork_epoch = (uint64_t)column_or(row, 5, 0);
	dacce_hashmap_init(&p->entries);
	p->graph = dacce_graph_new();
	if (!p->exe || !p->graph)
		return -ENOMEM;
	load_lineage(&l, p->id, &all, 0);
	if (!l.err && !grow_node_sizes(&l))
		l.err = -ENOMEM;
	if (!l.err)
		index_graph_modules(&l);
	if (!l.err)
		index_functions(&l);
	if (!l.err)
		load_threads(&l);
	return l.err;
}

int dacce_model_load(struct dacce_store *store, struct dacce_model *model, char *why,
		     size_t why_len)
{
	sqlite3_stmt *stmt;
	size_t cap = 0;
	int err = 0;

	memset(model, 0, sizeof(*model));
	model->store = store;
	stmt = dacce_store_prepare(store, "SELECT id, pid, parent, exe, runtime, fork_epoch "
					  "FROM procs ORDER BY id");
	if (!stmt) {
		snprintf(why, why_len, "%s: cannot read processes", store->path);
		return -EIO;
	}
	while (!err && sqlite3_step(stmt) == SQLITE_ROW) {
		if (!GROW(model->procs, cap, model->n_procs + 1)) {
			err = -ENOMEM;
			break;
		}
		err = load_proc(model, stmt, &model->procs[model->n_procs]);
		model->n_procs++;
	}
	sqlite3_finalize(stmt);
	if (err)
		snprintf(why, why_len, "%s: cannot load the capture: %s", store->path, strerror(-err));
	return err;
}

static void proc_fini(struct dacce_model_proc *p)
{
	free(p->exe);
	free(p->graph_error);
	dacce_graph_free(p->graph);
	free(p->node_size);
	free(p->functions);
	free(p->module_of_graph);
	for (size_t i = 0; i < p->n_modules; i++)
		free(p->modules[i].path);
	free(p->modules);
	for (size_t i = 0; i < p->n_epochs; i++) {
		free((void *)p->epochs[i].blob);
		free(p->epochs[i].driver);
		dacce_dict_free(p->epochs[i].dict);
	}
	free(p->epochs);
	free(p->region_start);
	free(p->region_size);
	dacce_hashmap_fini(&p->entries);
	free(p->fragments);
	free(p->copies);
	for (size_t i = 0; i < p->n_threads; i++)
		free(p->threads[i].ctx_entries);
	free(p->threads);
}

void dacce_model_fini(struct dacce_model *model)
{
	if (!model)
		return;
	for (size_t i = 0; i < model->n_procs; i++)
		proc_fini(&model->procs[i]);
	free(model->procs);
	memset(model, 0, sizeof(*model));
}

/* ------------------------------------------------------------------ lookups */

struct dacce_model_proc *dacce_model_proc(struct dacce_model *model, int64_t id)
{
	for (size_t i = 0; i < model->n_procs; i++)
		if (model->procs[i].id == id)
			return &model->procs[i];
	return NULL;
}

const struct dacce_model_module *dacce_model_module_at(const struct dacce_model_proc *proc,
						       uint64_t address)
{
	/* The latest scan wins: an address range reused after dlclose names the new module. */
	for (size_t i = proc->n_modules; i-- > 0;)
		if (address >= proc->modules[i].start && address < proc->modules[i].end &&
		    proc->modules[i].path[0])
			return &proc->modules[i];
	return NULL;
}

const struct dacce_model_module *dacce_model_node_module(const struct dacce_model_proc *proc,
							 uint32_t node)
{
	uint32_t g;

	if (node >= proc->graph->n_nodes)
		return NULL;
	g = proc->graph->nodes[node].module;
	if (g >= proc->graph->n_modules || proc->module_of_graph[g] < 0)
		return NULL;
	return &proc->modules[proc->module_of_graph[g]];
}

const struct dacce_dict *dacce_model_dict(struct dacce_model_proc *proc, uint64_t epoch)
{
	for (size_t i = 0; i < proc->n_epochs; i++) {
		struct dacce_model_epoch *e = &proc->epochs[i];
		const char *why;

		if (e->epoch != epoch)
			continue;
		if (!e->dict && !e->dict_failed && e->blob)
			e->dict_failed = dacce_dict_deserialize(e->blob, e->blob_len, &e->dict, &why) != 0;
		/* A dictionary over more of the graph than the records rebuilt is of no use. */
		if (e->dict && (e->dict->n_nodes > proc->graph->n_nodes ||
				e->dict->n_edges > proc->graph->n_edges))
			return NULL;
		return e->dict;
	}
	return NULL;
}

static const struct dacce_model_thread *thread_of(const struct dacce_model_proc *proc,
						  uint32_t tid)
{
	for (size_t i = 0; i < proc->n_threads; i++)
		if (proc->threads[i].tid == tid)
			return &proc->threads[i];
	return NULL;
}

/* ------------------------------------------------------------------ resolving */

static const char *const status_names[DACCE_RESOLVE_STATUS_COUNT] = {
	[DACCE_RESOLVED] = "exact",
	[DACCE_RESOLVED_PARTIAL] = "partial (ccStack copy truncated)",
	[DACCE_RESOLVED_CALLBACK] = "partial (callback from uninstrumented code)",
	[DACCE_UNRESOLVED_NO_CONTEXT] = "no context (runtime not started in the thread)",
	[DACCE_UNRESOLVED_READ_FAILED] = "thread state unreadable at the sample",
	[DACCE_UNRESOLVED_TRAMPOLINE] = "inside generated code",
	[DACCE_UNRESOLVED_RUNTIME] = "inside the runtime",
	[DACCE_UNRESOLVED_UNKNOWN_PC] = "pc in no function of the context",
	[DACCE_UNRESOLVED_NO_DICT] = "dictionary of the epoch missing",
	[DACCE_UNRESOLVED_DECODE] = "did not decode",
	[DACCE_UNRESOLVED_SIGRETURN] = "returning from a signal handler",
};

const char *dacce_resolve_status_name(enum dacce_resolve_status status)
{
	return status < DACCE_RESOLVE_STATUS_COUNT ? status_names[status] : "unknown";
}

void dacce_resolved_init(struct dacce_resolved *r)
{
	memset(r, 0, sizeof(*r));
	dacce_path_init(&r->path);
}

void dacce_resolved_fini(struct dacce_resolved *r)
{
	dacce_path_fini(&r->path);
}

static bool in_code_cache(const struct dacce_model_proc *proc, uint64_t pc)
{
	for (size_t i = 0; i < proc->n_regions; i++)
		if (pc >= proc->region_start[i] && pc - proc->region_start[i] < proc->region_size[i])
			return true;
	return false;
}

/* Whether pc is in a function's copy: then *node is the function. */
static bool copy_at(const struct dacce_model_proc *proc, uint64_t pc, uint32_t *node)
{
	size_t lo = 0, hi = proc->n_copies;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct dacce_model_copy *c = &proc->copies[mid];

		if (pc < c->start) {
			hi = mid;
		} else if (pc - c->start >= c->size) {
			lo = mid + 1;
		} else {
			*node = c->node;
			return c->node < proc->graph->n_nodes;
		}
	}
	return false;
}

/* The decoded function of the program holding pc, or DACCE_NONE. */
static uint32_t function_at(const struct dacce_model_proc *proc,
			    const struct dacce_model_module *m, uint64_t pc)
{
	const struct dacce_node *nodes = proc->graph->nodes;
	uint32_t module = (uint32_t)m->graph_index, lo = 0, hi = proc->n_functions, n;
	uint64_t offset = pc - m->bias;

	if (m->graph_index < 0)
		return DACCE_NONE;
	/* The last function starting at or below (module, offset). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct dacce_node *f = &nodes[proc->functions[mid]];

		if (f->module < module || (f->module == module && f->offset <= offset))
			lo = mid + 1;
		else
			hi = mid;
	}
	n = lo ? proc->functions[lo - 1] : DACCE_NONE;
	if (n != DACCE_NONE && nodes[n].module == module &&
	    offset - nodes[n].offset < proc->node_size[n])
		return n;
	for (size_t i = 0; i < proc->n_fragments; i++) {
		const struct dacce_model_fragment *f = &proc->fragments[i];

		if (f->module == module && offset - f->offset < f->size &&
		    f->node < proc->graph->n_nodes)
			return f->node;
	}
	return DACCE_NONE;
}

uint32_t dacce_model_function_at(const struct dacce_model_proc *proc, uint64_t pc)
{
	const struct dacce_model_module *m = dacce_model_module_at(proc, pc);

	return m ? function_at(proc, m, pc) : DACCE_NONE;
}

/*
 * Outside instrumented code, a context ends in the call out on top of the
 * ccStack when it was just pushed (id is then maxID + 1); otherwise in a
 * leaf call (runtime/leaves.h), which the id names.
 */
static uint32_t boundary_on_top(struct dacce_model_proc *proc,
				const struct dacce_raw_context *ctx)
{
	const struct dacce_dict *dict = dacce_model_dict(proc, ctx->epoch);
	struct dacce_edge_view top;

	if (!dict || ctx->n_entries == 0 || ctx->id != ctx->reset_id ||
	    dacce_dict_edge(dict, proc->graph, ctx->entries[ctx->n_entries - 1].edge, &top) ||
	    top.callee >= proc->graph->n_nodes || proc->node_size[top.callee] != 0)
		return DACCE_NONE;
	return top.callee;
}

/* Whether the context's epoch has leaf calls at all (decoding then says whether the id names one). */
static bool epoch_has_leaf_calls(struct dacce_model_proc *proc, const struct dacce_raw_context *ctx)
{
	const struct dacce_dict *dict = dacce_model_dict(proc, ctx->epoch);

	return dict && dict->n_leaf_range > 0;
}

static enum dacce_resolve_status innermost(struct dacce_model_proc *proc, uint64_t pc,
					   const struct dacce_raw_context *ctx,
					   const char *runtime_path, uint32_t *node,
					   bool *outside)
{
	const struct dacce_model_module *m;
	uint32_t caller = DACCE_NONE;

	*outside = false;
	/*
	 * At a site's code entry the thread is still in the site's function; so
	 * it is on a hop in the program's padding (runtime/padding.h).
	 */
	if (dacce_hashmap_get(&proc->entries, pc, &caller) == 0 && caller < proc->graph->n_nodes) {
		*node = caller; /* not the tail-call return stub */
		return DACCE_RESOLVED;
	}
	if (in_code_cache(proc, pc)) {
		/* A function's copy is the function, but inside an inline call's operation. */
		if (caller != DACCE_CODE_INSIDE_OP && copy_at(proc, pc, node))
			return DACCE_RESOLVED;
		return DACCE_UNRESOLVED_TRAMPOLINE;
	}
	m = dacce_model_module_at(proc, pc);
	if (m && runtime_path && strcmp(m->path, runtime_path) == 0)
		return DACCE_UNRESOLVED_RUNTIME;
	if (m) {
		*node = function_at(proc, m, pc);
		if (*node != DACCE_NONE)
			return DACCE_RESOLVED;
	}
	*node = boundary_on_top(proc, ctx);
	if (*node == DACCE_NONE && m && epoch_has_leaf_calls(proc, ctx))
		*node = DACCE_IN_LEAF;
	if (*node == DACCE_NONE)
		return DACCE_UNRESOLVED_UNKNOWN_PC;
	*outside = true;
	return DACCE_RESOLVED;
}

/* Decodes one snapshot and appends it; a truncated copy gives its exact inner frames. */
static enum dacce_resolve_status decode_into(struct dacce_model_proc *proc,
					     const struct dacce_snapshot *snap, bool truncated,
					     struct dacce_resolved *r)
{
	const struct dacce_dict *dict = dacce_model_dict(proc, snap->epoch);
	struct dacce_decode_error why = { 0 };
	size_t before = r->path.len;

	if (!dict) {
		r->why = "no dictionary for the epoch";
		return DACCE_UNRESOLVED_NO_DICT;
	}
	if (dacce_decode_append(dict, proc->graph, snap, &r->path, &why) == 0)
		return DACCE_RESOLVED;
	if (truncated && r->path.len > before)
		return DACCE_RESOLVED_PARTIAL;
	r->why = why.message ? why.message : "decoding failed";
	return DACCE_UNRESOLVED_DECODE;
}

/* Whether the outermost frame so far was entered as a thread's root. */
static bool ends_in_thread_root(struct dacce_model_proc *proc, const struct dacce_resolved *r)
{
	uint32_t edge;

	if (r->path.len == 0)
		return false;
	edge = r->path.frames[r->path.len - 1].edge;
	return edge < proc->graph->n_edges &&
	       proc->graph->edges[edge].kind == DACCE_SITE_ROOT_THREAD;
}

/* Appends the contexts that created the thread, its creator's creator, and so on. */
static void append_creation(struct dacce_model_proc *proc, uint32_t tid,
			    struct dacce_resolved *r)
{
	for (int depth = 0; depth < 64 && ends_in_thread_root(proc, r); depth++) {
		const struct dacce_model_thread *t = thread_of(proc, tid);
		struct dacce_raw_context raw;
		struct dacce_snapshot snap;
		enum dacce_resolve_status st;

		if (!t || !t->has_creation_ctx || !(t->ctx_flags & DACCE_CTX_VALID) ||
		    (t->ctx_flags & DACCE_CTX_NO_STACK))
			return;
		raw = (struct dacce_raw_context){ .epoch = t->ctx_epoch, .id = t->ctx_id,
						  .reset_id = t->ctx_reset_id,
						  .depth = t->ctx_depth, .flags = t->ctx_flags,
						  .n_entries = t->ctx_n, .entries = t->ctx_entries };
		snap = (struct dacce_snapshot){ .epoch = raw.epoch, .id = raw.id,
						.node = boundary_on_top(proc, &raw),
						.cc_depth = raw.n_entries, .cc = raw.entries };
		if (snap.node == DACCE_NONE) {
			r->status = DACCE_RESOLVED_PARTIAL;
			return;
		}
		st = decode_into(proc, &snap, raw.flags & DACCE_CTX_TRUNCATED, r);
		if (st != DACCE_RESOLVED) {
			r->status = DACCE_RESOLVED_PARTIAL;
			return;
		}
		tid = t->creator_tid;
	}
}

/* The boundary node entry i of the ccStack called (a call out of the program), or DACCE_NONE. */
static uint32_t boundary_of_entry(struct dacce_model_proc *proc, const struct dacce_dict *dict,
				  const struct dacce_cc_entry *entry)
{
	struct dacce_edge_view v;

	if (dacce_dict_edge(dict, proc->graph, entry->edge, &v) || v.callee >= proc->graph->n_nodes ||
	    proc->node_size[v.callee] != 0)
		return DACCE_NONE;
	return v.callee;
}

/*
 * Keeps the frames of path from index start on that the id proves: walking
 * out from the innermost, an encoded edge is certain while what is left of
 * the sub-path value (id_rel) is not yet 0.  Where it reaches 0 the function
 * may have been entered from outside (a library calling back), so the path
 * ends there, marked as a gap.  False when the frames run out first.
 */
static bool keep_proven(struct dacce_model_proc *proc, const struct dacce_dict *dict,
			struct dacce_resolved *r, size_t start, uint32_t node, uint64_t id_rel)
{
	if (node == DACCE_IN_LEAF)
		return false;
	for (size_t i = start; i < r->path.len; i++) {
		struct dacce_edge_view v;

		if (id_rel == 0) {
			r->path.frames[i] = (struct dacce_frame){ node, DACCE_EDGE_GAP };
			r->path.len = i + 1;
			return true;
		}
		if (dacce_dict_edge(dict, proc->graph, r->path.frames[i].edge, &v) ||
		    v.class != DACCE_EDGE_ENCODED || v.en > id_rel)
			return false;
		id_rel -= v.en;
		node = v.caller;
	}
	if (id_rel != 0)
		return false;
	return dacce_path_push(&r->path, (struct dacce_frame){ node, DACCE_EDGE_GAP }) == 0;
}

/*
 * Decodes the part of a context above a call out of the program: the
 * entries [first, top) pushed after a library called back into program code.
 * Pops are exact down to the oldest of them; below it, and above any pushed
 * entry at all, only what the id proves is kept (keep_proven).  False when the
 * part does not decode.
 */
static bool decode_above_gap(struct dacce_model_proc *proc, const struct dacce_dict *dict,
			     const struct dacce_raw_context *ctx, uint32_t first, uint32_t top,
			     uint64_t id, uint32_t node, struct dacce_resolved *r)
{
	struct dacce_snapshot snap = { .epoch = ctx->epoch, .id = id, .node = node,
				       .cc_depth = top - first, .cc = ctx->entries + first };
	struct dacce_decode_error why = { 0 };
	size_t start = r->path.len, walk = start;
	uint64_t reset = ctx->reset_id;
	struct dacce_edge_view v;

	/* Whatever the decoder says after it runs out of entries is checked below. */
	dacce_decode_append(dict, proc->graph, &snap, &r->path, &why);
	if (top > first) {
		const struct dacce_cc_entry *oldest = &ctx->entries[first];
		size_t cut = SIZE_MAX;

		for (size_t i = start; i < r->path.len; i++)
			if (r->path.frames[i].edge == oldest->edge)
				cut = i;
		if (cut == SIZE_MAX || dacce_dict_edge(dict, proc->graph, oldest->edge, &v))
			return false;
		walk = cut + 1;
		node = v.caller;
		id = oldest->id;
	}
	/* A part above a call out starts right after a push: its id counts from maxID + 1. */
	if (id < reset)
		return false;
	return keep_proven(proc, dict, r, walk, node, id - reset);
}

/*
 * Program code running on top of a call out of it (a library calling back,
 * with no callback root, maybe several times over): each part between two
 * calls out decodes exactly, what ran inside the libraries is unknown, and
 * the part below the lowest call out decodes down to main.
 */
static void resolve_callback(struct dacce_model_proc *proc, uint32_t innermost,
			     const struct dacce_raw_context *ctx, struct dacce_resolved *r)
{
	const struct dacce_dict *dict = dacce_model_dict(proc, ctx->epoch);
	uint32_t top = ctx->n_entries, node = innermost;
	uint64_t id = ctx->id;

	r->path.len = 0;
	if (!dict)
		return;
	for (int gaps = 0; gaps < 64; gaps++) {
		struct dacce_snapshot snap = { .epoch = ctx->epoch, .id = id, .node = node,
					       .cc_depth = top, .cc = ctx->entries };
		size_t mark = r->path.len;
		uint32_t b = top, boundary = DACCE_NONE;

		if (decode_into(proc, &snap, ctx->flags & DACCE_CTX_TRUNCATED, r) != DACCE_UNRESOLVED_DECODE) {
			if (gaps > 0) {
				r->status = DACCE_RESOLVED_CALLBACK;
				r->why = NULL;
			}
			return;
		}
		r->path.len = mark;
		/* A call out on top that we are in (the pc in a library) belongs to this part. */
		if (b > 0 && boundary_of_entry(proc, dict, &ctx->entries[b - 1]) == node)
			b--;
		/* The newest call out below: the library that called back. */
		while (b > 0 && (boundary = boundary_of_entry(proc, dict, &ctx->entries[b - 1])) == DACCE_NONE)
			b--;
		if (b == 0 || !decode_above_gap(proc, dict, ctx, b, top, id, node, r))
			break;
		/* Below: the state right after the call out. */
		top = b;
		id = ctx->reset_id;
		node = boundary;
	}
	r->path.len = 0;
	r->status = DACCE_UNRESOLVED_DECODE;
}

void dacce_model_resolve(struct dacce_model_proc *proc, uint32_t tid, uint64_t pc,
			 const struct dacce_raw_context *ctx, const char *runtime_path,
			 struct dacce_resolved *r)
{
	struct dacce_snapshot snap;
	uint32_t node;

	r->path.len = 0;
	r->pc = pc;
	r->why = NULL;
	r->leaf_outside = false;
	if (!(ctx->flags & DACCE_CTX_VALID)) {
		r->status = ctx->flags & DACCE_CTX_READ_FAILED ? DACCE_UNRESOLVED_READ_FAILED
							       : DACCE_UNRESOLVED_NO_CONTEXT;
		return;
	}
	/* First: the runtime's own thread, or its start, has no ccStack either. */
	if (ctx->flags & DACCE_CTX_IN_RUNTIME) {
		r->status = DACCE_UNRESOLVED_RUNTIME;
		return;
	}
	if (ctx->flags & DACCE_CTX_NO_STACK) {
		r->status = DACCE_UNRESOLVED_NO_CONTEXT;
		return;
	}
	if (ctx->flags & DACCE_CTX_SIGRETURN) {
		r->status = DACCE_UNRESOLVED_SIGRETURN;
		return;
	}
	r->status = innermost(proc, pc, ctx, runtime_path, &node, &r->leaf_outside);
	if (r->status != DACCE_RESOLVED)
		return;
	snap = (struct dacce_snapshot){ .epoch = ctx->epoch, .id = ctx->id, .node = node,
					.cc_depth = ctx->n_entries, .cc = ctx->entries };
	r->status = decode_into(proc, &snap, ctx->flags & DACCE_CTX_TRUNCATED, r);
	if (r->status == DACCE_UNRESOLVED_DECODE) {
		const char *why = r->why;

		resolve_callback(proc, node, ctx, r);
		if (r->status == DACCE_UNRESOLVED_DECODE)
			r->why = why;
	}
	if (r->status == DACCE_RESOLVED || r->status == DACCE_RESOLVED_CALLBACK)
		append_creation(proc, tid, r);
}
