// SPDX-License-Identifier: MIT
/* A capture's samples into a printable profile (see profile_build.h). */
#include "profile_build.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dacce_events.h"
#include "intern.h"

struct dacce_profile_builder {
	struct dacce_model *model;
	struct dacce_symbolizer *sym;
	struct dacce_intern strings; /* text -> its one copy */
	struct dacce_intern frames;  /* packed frame -> struct dacce_rframe * */
	struct dacce_intern stacks;  /* (tid, frame pointers) -> stack index + 1 */
	size_t cap_stacks;
	/* One context's frames, innermost first, while it is being built. */
	const struct dacce_rframe **scratch;
	size_t n_scratch, cap_scratch;
	const struct dacce_rframe **decoded; /* dacce_profile_frames' answer */
	char *runtime_path;
	char *meta_event, *meta_unit;
	struct dacce_profile_result result;
};

/* ------------------------------------------------------------------ interning */

static const char *intern_str(struct dacce_profile_builder *b, const char *s)
{
	char *copy;

	if (!s)
		return NULL;
	copy = dacce_intern_get(&b->strings, s, strlen(s));
	if (copy)
		return copy;
	copy = strdup(s);
	if (!copy || dacce_intern_put(&b->strings, s, strlen(s), copy)) {
		free(copy);
		return NULL;
	}
	return copy;
}

/* The identity of a frame once its strings are interned. */
struct frame_key {
	const char *function, *module, *build_id, *file;
	uint64_t address;
	uint32_t line;
	uint8_t inlined, kind;
};

static const struct dacce_rframe *intern_frame(struct dacce_profile_builder *b,
					       const struct frame_key *k)
{
	struct dacce_rframe *f = dacce_intern_get(&b->frames, k, sizeof(*k));

	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	*f = (struct dacce_rframe){ .function = k->function, .module = k->module,
				    .build_id = k->build_id, .address = k->address,
				    .file = k->file, .line = k->line, .inlined = k->inlined,
				    .kind = k->kind };
	if (dacce_intern_put(&b->frames, k, sizeof(*k), f)) {
		free(f);
		return NULL;
	}
	return f;
}

static int push(struct dacce_profile_builder *b, const struct dacce_rframe *f)
{
	if (!f)
		return -ENOMEM;
	if (b->n_scratch == b->cap_scratch) {
		size_t cap = b->cap_scratch ? b->cap_scratch * 2 : 64;
		const struct dacce_rframe **grown = realloc(b->scratch, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		b->scratch = grown;
		b->cap_scratch = cap;
	}
	b->scratch[b->n_scratch++] = f;
	return 0;
}

/* ------------------------------------------------------------------ symbols */

static const char *hex_id(struct dacce_profile_builder *b, const struct dacce_model_module *m)
{
	char hex[2 * DACCE_BUILD_ID_MAX + 1];

	for (size_t i = 0; m && i < m->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
	hex[m ? 2 * m->build_id_len : 0] = 0;
	return intern_str(b, hex);
}

/*
 * Pushes the source frames at address (link-time) of module m, innermost
 * inlined first; the containing function gets kind.  entry is the function's
 * own link-time start, named when symbols say nothing.
 */
static int push_symbolized(struct dacce_profile_builder *b, const struct dacce_model_module *m,
			   uint64_t address, uint64_t entry, uint8_t kind, uint64_t *function_start)
{
	const struct dacce_sym_result *res = NULL;
	const char *module = intern_str(b, m && m->path[0] ? m->path : "[unknown]");
	const char *build_id = hex_id(b, m);
	char name[512];
	int err = 0;

	if (m && m->path[0])
		dacce_symbolize(b->sym, m->path, m->build_id, m->build_id_len, address, &res, NULL);
	if (!res || res->n_frames == 0) {
		char path[4096];

		snprintf(path, sizeof(path), "%s", m && m->path[0] ? m->path : "[unknown]");
		snprintf(name, sizeof(name), "%s+0x%llx", basename(path), (unsigned long long)entry);
		if (function_start)
			*function_start = entry;
		return push(b, intern_frame(b, &(struct frame_key){
						       .function = intern_str(b, name),
						       .module = module, .build_id = build_id,
						       .address = address, .kind = kind }));
	}
	for (uint32_t i = 0; i < res->n_frames && !err; i++) {
		const struct dacce_sym_frame *s = &res->frames[i];
		bool outermost = i + 1 == res->n_frames;

		err = push(b, intern_frame(b, &(struct frame_key){
					      .function = intern_str(b, s->function),
					      .module = module, .build_id = build_id,
					      .file = intern_str(b, s->file), .line = s->line,
					      .address = address, .inlined = !outermost,
					      .kind = outermost ? kind : DACCE_RFRAME_CALL }));
	}
	if (function_start)
		*function_start = res->frames[res->n_frames - 1].start;
	return err;
}

static uint8_t frame_kind(const struct dacce_model_proc *proc, uint32_t edge)
{
	uint8_t kind;

	if (edge >= proc->graph->n_edges)
		return DACCE_RFRAME_CALL;
	kind = proc->graph->edges[edge].kind;
	switch (kind) {
	case DACCE_SITE_TAIL_DIRECT:
	case DACCE_SITE_TAIL_INDIRECT: return DACCE_RFRAME_TAIL;
	case DACCE_SITE_ROOT_THREAD: return DACCE_RFRAME_THREAD_ROOT;
	case DACCE_SITE_ROOT_SIGNAL: return DACCE_RFRAME_SIGNAL_ROOT;
	case DACCE_SITE_ROOT_CALLBACK: return DACCE_RFRAME_CALLBACK_ROOT;
	default: return DACCE_RFRAME_CALL;
	}
}

/* Where in node frame i the thread is: the pc, or the call site of the frame inside it. */
static uint64_t frame_address(const struct dacce_model_proc *proc, const struct dacce_resolved *r,
			      size_t i, const struct dacce_model_module *m)
{
	uint32_t node = r->path.frames[i].node;
	uint64_t entry = proc->graph->nodes[node].offset;

	if (i == 0) {
		if (!r->leaf_outside && m && r->pc >= m->bias + entry &&
		    r->pc - m->bias - entry < proc->node_size[node])
			return r->pc - m->bias;
		return entry;
	}
	{
		uint32_t inner_edge = r->path.frames[i - 1].edge;
		const struct dacce_edge *e;

		if (inner_edge >= proc->graph->n_edges)
			return entry;
		e = &proc->graph->edges[inner_edge];
		if (dacce_site_kind_is_root(e->kind) || e->caller != node)
			return entry;
		return proc->graph->sites[e->site].offset;
	}
}

/* The frames of the code the pc was in, outside the context (a library), if any. */
static int push_leaf(struct dacce_profile_builder *b, struct dacce_model_proc *proc,
		     const struct dacce_resolved *r, uint32_t innermost_node)
{
	const struct dacce_model_module *m = dacce_model_module_at(proc, r->pc);
	const struct dacce_model_module *node_m =
		innermost_node == DACCE_NONE ? NULL : dacce_model_node_module(proc, innermost_node);
	size_t mark = b->n_scratch;
	uint64_t start = 0;
	int err;

	if (!m)
		return 0;
	err = push_symbolized(b, m, r->pc - m->bias, r->pc - m->bias, DACCE_RFRAME_LEAF, &start);
	/* The pc in the called function itself: its frame is there already. */
	if (!err && node_m && node_m == m && innermost_node != DACCE_NONE &&
	    start == proc->graph->nodes[innermost_node].offset)
		b->n_scratch = mark;
	return err;
}

static int push_truncated(struct dacce_profile_builder *b)
{
	return push(b, intern_frame(b, &(struct frame_key){ .function = intern_str(b, "[truncated]"),
							    .module = intern_str(b, "[dacce]"),
							    .build_id = intern_str(b, ""),
							    .kind = DACCE_RFRAME_TRUNCATED }));
}

/* Builds r's frames into scratch, innermost first. */
static int context_frames(struct dacce_profile_builder *b, struct dacce_model_proc *proc,
			  const struct dacce_resolved *r)
{
	char label[128];
	int err = 0;

	b->n_scratch = 0;
	if (r->status != DACCE_RESOLVED && r->status != DACCE_RESOLVED_PARTIAL &&
	    r->status != DACCE_RESOLVED_CALLBACK) {
		err = push_leaf(b, proc, r, DACCE_NONE);
		snprintf(label, sizeof(label), "[dacce: %s]", dacce_resolve_status_name(r->status));
		if (!err)
			err = push(b, intern_frame(b, &(struct frame_key){
						      .function = intern_str(b, label),
						      .module = intern_str(b, "[dacce]"),
						      .build_id = intern_str(b, "") }));
		return err;
	}
	if (r->leaf_outside && r->path.len)
		err = push_leaf(b, proc, r, r->path.frames[0].node);
	for (size_t i = 0; i < r->path.len && !err; i++) {
		uint32_t node = r->path.frames[i].node;
		const struct dacce_model_module *m;

		if (node >= proc->graph->n_nodes)
			return -EINVAL;
		m = dacce_model_node_module(proc, node);
		err = push_symbolized(b, m, frame_address(proc, r, i, m),
				      proc->graph->nodes[node].offset,
				      frame_kind(proc, r->path.frames[i].edge), NULL);
		/* Frames between this one and the next are not known (a callback). */
		if (!err && r->path.frames[i].edge == DACCE_EDGE_GAP)
			err = push_truncated(b);
	}
	if (!err && r->status == DACCE_RESOLVED_PARTIAL)
		err = push_truncated(b);
	return err;
}

/* ------------------------------------------------------------------ stacks */

static int add_stack(struct dacce_profile_builder *b, uint32_t tid)
{
	struct dacce_rprofile *p = &b->result.profile;
	size_t n = b->n_scratch, key_len = sizeof(uint32_t) + n * sizeof(void *);
	uint8_t *key = malloc(key_len);
	uintptr_t found;
	struct dacce_rstack *s;
	int err = 0;

	if (!key)
		return -ENOMEM;
	memcpy(key, &tid, sizeof(tid));
	memcpy(key + sizeof(tid), b->scratch, n * sizeof(void *));
	found = (uintptr_t)dacce_intern_get(&b->stacks, key, key_len);
	if (found) {
		p->stacks[found - 1].count++;
		goto out;
	}
	if (p->n_stacks == b->cap_stacks) {
		size_t cap = b->cap_stacks ? b->cap_stacks * 2 : 256;
		struct dacce_rstack *grown = realloc(p->stacks, cap * sizeof(*grown));

		if (!grown) {
			err = -ENOMEM;
			goto out;
		}
		p->stacks = grown;
		b->cap_stacks = cap;
	}
	s = &p->stacks[p->n_stacks];
	s->frames = malloc((n ? n : 1) * sizeof(*s->frames));
	if (!s->frames) {
		err = -ENOMEM;
		goto out;
	}
	/* Outermost first in a profile. */
	for (size_t i = 0; i < n; i++)
		s->frames[i] = b->scratch[n - 1 - i];
	s->n_frames = (uint32_t)n;
	s->tid = tid;
	s->comm = "";
	s->count = 1;
	p->n_stacks++;
	err = dacce_intern_put(&b->stacks, key, key_len, (void *)(uintptr_t)p->n_stacks);
out:
	free(key);
	return err;
}

/* ------------------------------------------------------------------ samples */

static void read_meta(struct dacce_profile_builder *b)
{
	struct dacce_store *store = b->model->store;
	struct dacce_rprofile *p = &b->result.profile;
	char *period = dacce_store_get_meta(store, "period");
	char *freq = dacce_store_get_meta(store, "freq");

	b->runtime_path = dacce_store_get_meta(store, "runtime");
	b->meta_event = dacce_store_get_meta(store, "event");
	b->meta_unit = dacce_store_get_meta(store, "period_unit");
	p->event = b->meta_event ? b->meta_event : "";
	p->period_unit = b->meta_unit ? b->meta_unit : "events";
	p->period = period && *period ? strtoull(period, NULL, 10) : 0;
	/* A clock sampled at a frequency: each sample stands for 1/freq s of CPU. */
	if (!p->period && freq && atoll(freq) > 0 && strcmp(p->period_unit, "nanoseconds") == 0)
		p->period = 1000000000ull / strtoull(freq, NULL, 10);
	free(period);
	free(freq);
}

static void read_totals(struct dacce_profile_builder *b)
{
	sqlite3_stmt *stmt = dacce_store_prepare(
		b->model->store, "SELECT (SELECT value FROM counters WHERE name = 'lost_samples'), "
				 "min(time_ns), max(time_ns) FROM samples");

	if (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
		b->result.profile.lost_samples = (uint64_t)sqlite3_column_int64(stmt, 0);
		b->result.profile.duration_ns =
			(uint64_t)(sqlite3_column_int64(stmt, 2) - sqlite3_column_int64(stmt, 1));
	}
	sqlite3_finalize(stmt);
}

int dacce_profile_builder_new(struct dacce_model *model, struct dacce_profile_builder **out)
{
	struct dacce_profile_builder *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->model = model;
	dacce_intern_init(&b->strings);
	dacce_intern_init(&b->frames);
	dacce_intern_init(&b->stacks);
	b->sym = dacce_symbolizer_new();
	if (!b->sym) {
		dacce_profile_builder_free(b);
		return -ENOMEM;
	}
	read_meta(b);
	*out = b;
	return 0;
}

/* One line on why a sample has no exact context, with what it held (for --unresolved). */
static void explain(FILE *out, const struct dacce_model_proc *proc, uint32_t tid,
		    const struct dacce_raw_context *ctx, const struct dacce_resolved *r)
{
	fprintf(out, "pid %u tid %u pc %#llx: %s%s%s; epoch %llu id %llu (maxID+1 %llu), ccStack %u",
		proc->pid, tid, (unsigned long long)r->pc, dacce_resolve_status_name(r->status),
		r->why ? ": " : "", r->why ? r->why : "", (unsigned long long)ctx->epoch,
		(unsigned long long)ctx->id, (unsigned long long)ctx->reset_id, ctx->depth);
	if (ctx->n_entries)
		fprintf(out, ", innermost entries:");
	for (uint32_t i = ctx->n_entries > 4 ? ctx->n_entries - 4 : 0; i < ctx->n_entries; i++)
		fprintf(out, " <%llu, edge %u, %u>", (unsigned long long)ctx->entries[i].id,
			ctx->entries[i].edge, ctx->entries[i].aux);
	fputc('\n', out);
}

int dacce_profile_build(struct dacce_model *model, const struct dacce_profile_filter *filter,
			struct dacce_profile_builder **out, char *why, size_t why_len)
{
	struct dacce_profile_builder *b;
	struct dacce_model_proc *proc = NULL;
	struct dacce_resolved r;
	uint64_t explained = 0;
	sqlite3_stmt *stmt;
	int err;

	err = dacce_profile_builder_new(model, &b);
	if (err) {
		snprintf(why, why_len, "out of memory");
		return err;
	}
	read_totals(b);
	dacce_resolved_init(&r);
	stmt = dacce_store_prepare(model->store,
				   "SELECT s.proc, s.tid, s.pc, s.epoch, s.id, s.reset_id, s.depth, "
				   "s.ctx_flags, s.entries FROM samples s JOIN procs p ON p.id = s.proc "
				   "WHERE (?1 = 0 OR p.pid = ?1) AND (?2 = 0 OR s.tid = ?2) "
				   "ORDER BY s.proc, s.rowid");
	if (!stmt) {
		err = -EIO;
		goto out;
	}
	sqlite3_bind_int64(stmt, 1, filter ? filter->pid : 0);
	sqlite3_bind_int64(stmt, 2, filter ? filter->tid : 0);
	while (!err && sqlite3_step(stmt) == SQLITE_ROW) {
		int64_t proc_id = sqlite3_column_int64(stmt, 0);
		int bytes = sqlite3_column_bytes(stmt, 8);
		struct dacce_raw_context ctx = {
			.epoch = (uint64_t)sqlite3_column_int64(stmt, 3),
			.id = (uint64_t)sqlite3_column_int64(stmt, 4),
			.reset_id = (uint64_t)sqlite3_column_int64(stmt, 5),
			.depth = (uint32_t)sqlite3_column_int64(stmt, 6),
			.flags = (uint32_t)sqlite3_column_int64(stmt, 7),
			.n_entries = (uint32_t)(bytes > 0 ? (size_t)bytes / sizeof(struct dacce_cc_entry) : 0),
			.entries = sqlite3_column_blob(stmt, 8),
		};
		uint32_t tid = (uint32_t)sqlite3_column_int64(stmt, 1);

		if (!proc || proc->id != proc_id)
			proc = dacce_model_proc(model, proc_id);
		if (!proc)
			continue;
		dacce_model_resolve(proc, tid, (uint64_t)sqlite3_column_int64(stmt, 2), &ctx,
				    b->runtime_path, &r);
		b->result.by_status[r.status]++;
		if (filter && filter->explain && r.status != DACCE_RESOLVED &&
		    explained < filter->explain_max) {
			explain(filter->explain, proc, tid, &ctx, &r);
			explained++;
		}
		b->result.profile.total_samples++;
		err = context_frames(b, proc, &r);
		if (!err)
			err = add_stack(b, tid);
	}
	sqlite3_finalize(stmt);
out:
	dacce_resolved_fini(&r);
	if (err) {
		snprintf(why, why_len, "cannot build the profile: %s", strerror(-err));
		dacce_profile_builder_free(b);
		return err;
	}
	*out = b;
	return 0;
}

const struct dacce_profile_result *dacce_profile_result(const struct dacce_profile_builder *b)
{
	return &b->result;
}

int dacce_profile_frames(struct dacce_profile_builder *b, struct dacce_model_proc *proc,
			 const struct dacce_resolved *r, const struct dacce_rframe ***frames)
{
	int err = context_frames(b, proc, r);
	const struct dacce_rframe **out;

	if (err)
		return err;
	out = realloc(b->decoded, (b->n_scratch ? b->n_scratch : 1) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	b->decoded = out;
	for (size_t i = 0; i < b->n_scratch; i++)
		out[i] = b->scratch[b->n_scratch - 1 - i];
	*frames = out;
	return (int)b->n_scratch;
}

void dacce_profile_builder_free(struct dacce_profile_builder *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->result.profile.n_stacks; i++)
		free(b->result.profile.stacks[i].frames);
	free(b->result.profile.stacks);
	dacce_intern_each(&b->strings, free);
	dacce_intern_each(&b->frames, free);
	dacce_intern_fini(&b->strings);
	dacce_intern_fini(&b->frames);
	dacce_intern_fini(&b->stacks);
	dacce_symbolizer_free(b->sym);
	free(b->scratch);
	free(b->decoded);
	free(b->runtime_path);
	free(b->meta_event);
	free(b->meta_unit);
	free(b);
}
