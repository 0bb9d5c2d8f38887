// SPDX-License-Identifier: MIT
/* Ring-buffer records to capture-store rows (see capture.h, docs/capture-store.md). */
#include "capture.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "dacce_events.h"
#include "hashmap.h"

/* What a pid's current image needs while its records arrive. */
struct proc_state {
	uint32_t pid;
	int64_t proc;	    /* row id in procs */
	uint32_t n_modules; /* graph modules announced so far (fork children start here) */
	uint32_t n_nodes, n_edges;
	uint64_t epoch;	    /* the last epoch installed */
	bool runtime;	    /* the runtime announced itself (or the parent's did, before the fork) */
	/* A dictionary being reassembled. */
	uint64_t dict_epoch;
	uint8_t *dict;
	uint64_t dict_len, dict_got;
	bool dict_broken;
};

enum statement {
	ST_PROC,
	ST_PROC_START,
	ST_PROC_END,
	ST_MODULE,
	ST_NODE,
	ST_EDGE,
	ST_CODE_REGION,
	ST_CODE_ENTRY,
	ST_FRAGMENT,
	ST_EPOCH,
	ST_EPOCH_DICT,
	ST_THREAD,
	ST_THREAD_ROOT,
	ST_THREAD_EXIT,
	ST_SAMPLE,
	ST_STACK,
	ST_COUNT,
};

static const char *const statement_sql[ST_COUNT] = {
	[ST_PROC] = "INSERT INTO procs (pid, parent, fork_modules, fork_nodes, fork_edges, "
		    "fork_epoch, exe, started_ns, runtime) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[ST_PROC_START] = "UPDATE procs SET exe = ?2, tls_tpoff = ?3, runtime = 1 WHERE id = ?1",
	[ST_PROC_END] = "UPDATE procs SET ended_ns = ?2, exit_status = coalesce(?3, exit_status) "
			"WHERE id = ?1",
	[ST_MODULE] = "INSERT INTO modules (proc, idx, path, build_id, bias, start, end, time_ns) "
		      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ST_NODE] = "INSERT OR REPLACE INTO nodes (proc, idx, module, offset, size) "
		    "VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_EDGE] = "INSERT OR REPLACE INTO edges (proc, idx, caller, callee, kind, site_module, "
		    "site_offset, flags, time_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[ST_CODE_REGION] = "INSERT INTO code_regions (proc, start, size) VALUES (?1, ?2, ?3)",
	[ST_FRAGMENT] = "INSERT INTO fragments (proc, node, module, offset, size) "
			"VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_CODE_ENTRY] = "INSERT INTO code_entries (proc, address, site_caller, site_offset) "
			  "VALUES (?1, ?2, ?3, ?4)",
	[ST_EPOCH] = "INSERT OR REPLACE INTO epochs (proc, epoch, max_id, n_nodes, n_edges, "
		     "pause_ns, time_ns, driver) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ST_EPOCH_DICT] = "UPDATE epochs SET dict = ?3 WHERE proc = ?1 AND epoch = ?2",
	[ST_THREAD] = "INSERT OR REPLACE INTO threads (proc, tid, creator_tid, created_ns, "
		      "ctx_epoch, ctx_id, ctx_reset_id, ctx_depth, ctx_flags, ctx_entries) "
		      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	[ST_THREAD_ROOT] = "UPDATE threads SET root_edge = ?3 WHERE proc = ?1 AND tid = ?2",
	[ST_THREAD_EXIT] = "UPDATE threads SET exited_ns = ?3 WHERE proc = ?1 AND tid = ?2",
	[ST_SAMPLE] = "INSERT INTO samples (proc, tid, time_ns, cpu, pc, sp, flags, epoch, id, "
		      "reset_id, depth, ctx_flags, entries, calls, pushes) "
		      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
	[ST_STACK] = "INSERT INTO stacks (sample, regs, stack_start, stack, tail, flags) "
		     "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
};

struct dacce_capture {
	struct dacce_store *store;
	sqlite3_stmt *st[ST_COUNT];
	struct proc_state *procs;
	size_t n_procs, cap_procs;
	struct dacce_hashmap by_pid; /* pid -> index in procs */
	bool in_transaction;
	struct dacce_capture_stats stats;
};

/* ------------------------------------------------------------------ statements */

/* Binds values (int64 each, or NULL for INT64_MIN) to parameters 1.. in order. */
#define BIND_NULL INT64_MIN

static void bind_ints(sqlite3_stmt *stmt, int first, const int64_t *values, int n)
{
	for (int i = 0; i < n; i++) {
		if (values[i] == BIND_NULL)
			sqlite3_bind_null(stmt, first + i);
		else
			sqlite3_bind_int64(stmt, first + i, values[i]);
	}
}

static int run(struct dacce_capture *cap, enum statement which)
{
	sqlite3_stmt *stmt = cap->st[which];
	int rc = sqlite3_step(stmt);

	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "dacce: %s: %s\n", cap->store->path,
			sqlite3_errmsg(cap->store->db));
		return rc == SQLITE_FULL ? -ENOSPC : -EIO;
	}
	return 0;
}

#define RUN_INTS(cap, which, ...)                                                       \
	({                                                                              \
		const int64_t values_[] = { __VA_ARGS__ };                              \
		bind_ints((cap)->st[which], 1, values_,                                 \
			  (int)(sizeof(values_) / sizeof(values_[0])));                 \
		run(cap, which);                                                        \
	})

static int begin(struct dacce_capture *cap)
{
	int err;

	if (cap->in_transaction)
		return 0;
	err = dacce_store_exec(cap->store, "BEGIN");
	if (!err)
		cap->in_transaction = true;
	return err;
}

int dacce_capture_flush(struct dacce_capture *cap)
{
	if (!cap->in_transaction)
		return 0;
	cap->in_transaction = false;
	return dacce_store_exec(cap->store, "COMMIT");
}

/* ------------------------------------------------------------------ processes */

static struct proc_state *state_of(struct dacce_capture *cap, uint32_t pid)
{
	uint32_t index;

	if (dacce_hashmap_get(&cap->by_pid, pid, &index) == 0)
		return &cap->procs[index];
	return NULL;
}

/* A new image for pid (first sight, fork child or exec): a procs row and fresh state. */
static int new_image(struct dacce_capture *cap, uint32_t pid, const struct proc_state *parent,
		     const char *exe, uint64_t time_ns, struct proc_state **out)
{
	struct proc_state *st = state_of(cap, pid);
	int64_t parent_row = parent ? parent->proc : BIND_NULL;
	int err;

	if (!st) {
		if (cap->n_procs == cap->cap_procs) {
			size_t grown_cap = cap->cap_procs ? cap->cap_procs * 2 : 16;
			struct proc_state *grown = realloc(cap->procs, grown_cap * sizeof(*grown));
			const struct proc_state *parent_before = parent;

			if (!grown)
				return -ENOMEM;
			/* parent points into the array that moved. */
			if (parent_before)
				parent = grown + (parent_before - cap->procs);
			cap->procs = grown;
			cap->cap_procs = grown_cap;
		}
		st = &cap->procs[cap->n_procs];
		memset(st, 0, sizeof(*st));
		err = dacce_hashmap_put(&cap->by_pid, pid, (uint32_t)cap->n_procs);
		if (err)
			return err;
		cap->n_procs++;
	} else {
		free(st->dict);
	}
	{
		struct proc_state fresh = { .pid = pid };

		if (parent) {
			fresh.n_modules = parent->n_modules;
			fresh.n_nodes = parent->n_nodes;
			fresh.n_edges = parent->n_edges;
			fresh.epoch = parent->epoch;
			fresh.runtime = parent->runtime;
		}
		sqlite3_bind_int64(cap->st[ST_PROC], 1, pid);
		bind_ints(cap->st[ST_PROC], 2,
			  (const int64_t[]){ parent_row, parent ? fresh.n_modules : BIND_NULL,
					     parent ? fresh.n_nodes : BIND_NULL,
					     parent ? fresh.n_edges : BIND_NULL,
					     parent ? (int64_t)fresh.epoch : BIND_NULL },
			  5);
		sqlite3_bind_text(cap->st[ST_PROC], 7, exe ? exe : "", -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(cap->st[ST_PROC], 8, (int64_t)time_ns);
		sqlite3_bind_int64(cap->st[ST_PROC], 9, fresh.runtime);
		err = run(cap, ST_PROC);
		if (err)
			return err;
		fresh.proc = sqlite3_last_insert_rowid(cap->store->db);
		*st = fresh;
	}
	cap->stats.processes++;
	*out = st;
	return 0;
}

/* The state of the process a record came from, created on first sight. */
static int state_for(struct dacce_capture *cap, const struct dacce_ev_header *h,
		     struct proc_state **out)
{
	*out = state_of(cap, h->tgid);
	if (*out)
		return 0;
	return new_image(cap, h->tgid, NULL, NULL, h->time_ns, out);
}

int dacce_capture_root_ended(struct dacce_capture *cap, uint32_t pid, int wait_status,
			     uint64_t now_ns)
{
	struct proc_state *st = state_of(cap, pid);
	int64_t status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status)
						: 128 + WTERMSIG(wait_status);
	int err;

	if (!st)
		return 0;
	err = begin(cap);
	if (!err)
		err = RUN_INTS(cap, ST_PROC_END, st->proc, (int64_t)now_ns, status);
	return err;
}

/* ------------------------------------------------------------------ records */

static void bind_context(sqlite3_stmt *stmt, int first, const struct dacce_ev_context *ctx)
{
	uint32_t n = ctx->n_entries <= DACCE_BPF_CC_ENTRIES ? ctx->n_entries : 0;

	bind_ints(stmt, first,
		  (const int64_t[]){ (int64_t)ctx->epoch, (int64_t)ctx->id, (int64_t)ctx->reset_id,
				     ctx->depth },
		  4);
	sqlite3_bind_int64(stmt, first + 4, ctx->flags);
	sqlite3_bind_blob(stmt, first + 5, ctx->entries, (int)(n * sizeof(ctx->entries[0])),
			  SQLITE_TRANSIENT);
}

static int on_start(struct dacce_capture *cap, const struct dacce_ev_start *ev)
{
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	if (err)
		return err;
	st->runtime = true;
	sqlite3_bind_int64(cap->st[ST_PROC_START], 1, st->proc);
	sqlite3_bind_text(cap->st[ST_PROC_START], 2, ev->exe, (int)strnlen(ev->exe, sizeof(ev->exe)),
			  SQLITE_TRANSIENT);
	sqlite3_bind_int64(cap->st[ST_PROC_START], 3, ev->tls_tpoff);
	return run(cap, ST_PROC_START);
}

static int on_module(struct dacce_capture *cap, const struct dacce_ev_module *ev)
{
	sqlite3_stmt *stmt = cap->st[ST_MODULE];
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	if (err)
		return err;
	sqlite3_bind_int64(stmt, 1, st->proc);
	if (ev->graph_module >= 0) {
		sqlite3_bind_int64(stmt, 2, ev->graph_module);
		if ((uint64_t)ev->graph_module + 1 > st->n_modules)
			st->n_modules = (uint32_t)ev->graph_module + 1;
	}
	sqlite3_bind_text(stmt, 3, ev->path, (int)strnlen(ev->path, sizeof(ev->path)),
			  SQLITE_TRANSIENT);
	if (ev->build_id_len && ev->build_id_len <= DACCE_BPF_BUILD_ID_MAX)
		sqlite3_bind_blob(stmt, 4, ev->build_id, (int)ev->build_id_len, SQLITE_TRANSIENT);
	bind_ints(stmt, 5, (const int64_t[]){ (int64_t)ev->bias, (int64_t)ev->start,
					      (int64_t)ev->end, (int64_t)ev->h.time_ns },
		  4);
	return run(cap, ST_MODULE);
}

static int on_node(struct dacce_capture *cap, const struct dacce_ev_node *ev)
{
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	if (err)
		return err;
	if (ev->node + 1 > st->n_nodes)
		st->n_nodes = ev->node + 1;
	return RUN_INTS(cap, ST_NODE, st->proc, ev->node, ev->module, (int64_t)ev->offset,
			(int64_t)ev->size);
}

static int on_edge(struct dacce_capture *cap, const struct dacce_ev_edge *ev)
{
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	if (err)
		return err;
	if (ev->edge + 1 > st->n_edges)
		st->n_edges = ev->edge + 1;
	cap->stats.edges++;
	return RUN_INTS(cap, ST_EDGE, st->proc, ev->edge, ev->caller, ev->callee, ev->kind,
			ev->site_module, (int64_t)ev->site_offset, ev->flags,
			(int64_t)ev->h.time_ns);
}

static int on_code_region(struct dacce_capture *cap, const struct dacce_ev_code_region *ev)
{
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	return err ? err : RUN_INTS(cap, ST_CODE_REGION, st->proc, (int64_t)ev->start,
				    (int64_t)ev->size);
}

static int on_fragment(struct dacce_capture *cap, const struct dacce_ev_node *ev)
{
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	return err ? err : RUN_INTS(cap, ST_FRAGMENT, st->proc, ev->node, ev->module,
				    (int64_t)ev->offset, (int64_t)ev->size);
}

static int on_code_entry(struct dacce_capture *cap, const struct dacce_ev_code_entry *ev)
{
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	return err ? err : RUN_INTS(cap, ST_CODE_ENTRY, st->proc, (int64_t)ev->address,
				    ev->site_caller, (int64_t)ev->site_offset);
}

static int on_epoch(struct dacce_capture *cap, const struct dacce_ev_epoch *ev)
{
	sqlite3_stmt *stmt = cap->st[ST_EPOCH];
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	if (err)
		return err;
	st->epoch = ev->epoch;
	free(st->dict);
	st->dict = NULL;
	st->dict_epoch = ev->epoch;
	st->dict_len = ev->flags & DACCE_EPOCH_DICT_MISSING ? 0 : ev->dict_len;
	st->dict_got = 0;
	st->dict_broken = st->dict_len == 0;
	if (st->dict_len) {
		st->dict = malloc(st->dict_len);
		st->dict_broken = !st->dict;
	}
	if (st->dict_broken)
		cap->stats.dicts_missing++;
	cap->stats.epochs++;
	bind_ints(stmt, 1,
		  (const int64_t[]){ st->proc, (int64_t)ev->epoch, (int64_t)ev->max_id, ev->n_nodes,
				     ev->n_edges, ev->pause_ns, (int64_t)ev->h.time_ns },
		  7);
	sqlite3_bind_text(stmt, 8,
			  ev->driver == 0 ? "start" : ev->driver == 2 ? "controller" : "runtime", -1,
			  SQLITE_STATIC);
	return run(cap, ST_EPOCH);
}

static int on_dict_chunk(struct dacce_capture *cap, const struct dacce_ev_dict_chunk *ev)
{
	sqlite3_stmt *stmt = cap->st[ST_EPOCH_DICT];
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	if (err)
		return err;
	if (st->dict_broken || ev->epoch != st->dict_epoch || !st->dict)
		return 0;
	/* Chunks come in order; a gap (a lost record) spoils the dictionary. */
	if (ev->offset != st->dict_got || ev->len == 0 || ev->len > DACCE_BPF_CHUNK ||
	    ev->len > st->dict_len - st->dict_got) {
		st->dict_broken = true;
		cap->stats.dicts_missing++;
		return 0;
	}
	memcpy(st->dict + st->dict_got, ev->data, ev->len);
	st->dict_got += ev->len;
	if (st->dict_got < st->dict_len)
		return 0;
	sqlite3_bind_int64(stmt, 1, st->proc);
	sqlite3_bind_int64(stmt, 2, (int64_t)ev->epoch);
	sqlite3_bind_blob64(stmt, 3, st->dict, st->dict_len, SQLITE_TRANSIENT);
	err = run(cap, ST_EPOCH_DICT);
	free(st->dict);
	st->dict = NULL;
	return err;
}

static int on_thread(struct dacce_capture *cap, const struct dacce_ev_thread *ev)
{
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	return err ? err : RUN_INTS(cap, ST_THREAD_ROOT, st->proc, ev->h.tid, ev->root_edge);
}

static int on_fork(struct dacce_capture *cap, const struct dacce_ev_fork *ev)
{
	sqlite3_stmt *stmt = cap->st[ST_THREAD];
	struct proc_state *parent, *child;
	int err = state_for(cap, &ev->h, &parent);

	if (err)
		return err;
	if (ev->child_tgid != ev->h.tgid) {
		/* A new process continues its parent's context: no creation prefix. */
		err = new_image(cap, ev->child_tgid, parent, NULL, ev->h.time_ns, &child);
		if (err)
			return err;
		cap->stats.threads++;
		return RUN_INTS(cap, ST_THREAD, child->proc, ev->child_tid, ev->h.tid,
				(int64_t)ev->h.time_ns, BIND_NULL, BIND_NULL, BIND_NULL, BIND_NULL,
				BIND_NULL, BIND_NULL);
	}
	cap->stats.threads++;
	bind_ints(stmt, 1,
		  (const int64_t[]){ parent->proc, ev->child_tid, ev->h.tid,
				     (int64_t)ev->h.time_ns },
		  4);
	bind_context(stmt, 5, &ev->ctx);
	return run(cap, ST_THREAD);
}

static int on_thread_exit(struct dacce_capture *cap, const struct dacce_ev_exit *ev)
{
	struct proc_state *st = state_of(cap, ev->h.tgid);
	int err;

	if (!st)
		return 0;
	err = RUN_INTS(cap, ST_THREAD_EXIT, st->proc, ev->h.tid, (int64_t)ev->h.time_ns);
	if (!err && ev->group_dead)
		err = RUN_INTS(cap, ST_PROC_END, st->proc, (int64_t)ev->h.time_ns, BIND_NULL);
	return err;
}

static int on_exec(struct dacce_capture *cap, const struct dacce_ev_exec *ev)
{
	struct proc_state *st;
	char name[DACCE_BPF_PATH_MAX + 1];
	int err;

	memcpy(name, ev->filename, DACCE_BPF_PATH_MAX);
	name[DACCE_BPF_PATH_MAX] = 0;
	st = state_of(cap, ev->h.tgid);
	if (st) {
		err = RUN_INTS(cap, ST_PROC_END, st->proc, (int64_t)ev->h.time_ns, BIND_NULL);
		if (err)
			return err;
	}
	err = new_image(cap, ev->h.tgid, NULL, name, ev->h.time_ns, &st);
	if (!err)
		cap->stats.threads++;
	if (!err)
		err = RUN_INTS(cap, ST_THREAD, st->proc, ev->h.tid, BIND_NULL,
			       (int64_t)ev->h.time_ns, BIND_NULL, BIND_NULL, BIND_NULL, BIND_NULL,
			       BIND_NULL, BIND_NULL);
	return err;
}

static int on_sample(struct dacce_capture *cap, const struct dacce_ev_sample *ev)
{
	sqlite3_stmt *stmt = cap->st[ST_SAMPLE];
	struct proc_state *st;
	int err = state_for(cap, &ev->h, &st);

	if (err)
		return err;
	cap->stats.samples++;
	if (!(ev->ctx.flags & DACCE_CTX_VALID))
		cap->stats.samples_without_context++;
	bind_ints(stmt, 1,
		  (const int64_t[]){ st->proc, ev->h.tid, (int64_t)ev->h.time_ns, ev->h.cpu,
				     (int64_t)ev->pc, (int64_t)ev->sp, ev->flags },
		  7);
	bind_context(stmt, 8, &ev->ctx);
	sqlite3_bind_int64(stmt, 14, (int64_t)ev->ctx.calls);
	sqlite3_bind_int64(stmt, 15, (int64_t)ev->ctx.pushes);
	return run(cap, ST_SAMPLE);
}

/*
 * The registers and stack copy of the sample just written, keyed by its row.
 * Only the bytes from sp up are kept: below sp is no frame's.
 */
static int on_stack(struct dacce_capture *cap, const struct dacce_ev_sample_stack *ev,
		    size_t size)
{
	sqlite3_stmt *stmt = cap->st[ST_STACK];
	size_t have = size - offsetof(struct dacce_ev_sample_stack, stack);
	uint64_t skip = ev->sample.sp - ev->stack_start;
	size_t len = ev->stack_len < have ? ev->stack_len : have;

	if (ev->sample.sp < ev->stack_start || skip > len || ev->n_tail > DACCE_BPF_TAIL_RECORDS) {
		cap->stats.bad_records++;
		return 0;
	}
	sqlite3_bind_int64(stmt, 1, sqlite3_last_insert_rowid(cap->store->db));
	sqlite3_bind_blob(stmt, 2, ev->regs, sizeof(ev->regs), SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 3, (int64_t)ev->sample.sp);
	sqlite3_bind_blob(stmt, 4, ev->stack + skip, (int)(len - skip), SQLITE_STATIC);
	sqlite3_bind_blob(stmt, 5, ev->tail, (int)(ev->n_tail * sizeof(ev->tail[0])), SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 6, ev->stack_flags);
	cap->stats.stacks++;
	return run(cap, ST_STACK);
}

static int on_any_sample(struct dacce_capture *cap, const struct dacce_ev_sample *ev,
			 size_t size)
{
	int err = on_sample(cap, ev);

	if (err || !(ev->flags & DACCE_SAMPLE_STACK))
		return err;
	if (size < offsetof(struct dacce_ev_sample_stack, stack)) {
		cap->stats.bad_records++;
		return 0;
	}
	return on_stack(cap, (const struct dacce_ev_sample_stack *)ev, size);
}

/* The record's declared type and its minimum size. */
static size_t record_size(uint32_t type)
{
	switch (type) {
	case DACCE_EV_START: return sizeof(struct dacce_ev_start);
	case DACCE_EV_MODULE: return sizeof(struct dacce_ev_module);
	case DACCE_EV_NODE: return sizeof(struct dacce_ev_node);
	case DACCE_EV_EDGE: return sizeof(struct dacce_ev_edge);
	case DACCE_EV_CODE_REGION: return sizeof(struct dacce_ev_code_region);
	case DACCE_EV_CODE_ENTRY: return sizeof(struct dacce_ev_code_entry);
	case DACCE_EV_FRAGMENT: return sizeof(struct dacce_ev_node);
	case DACCE_EV_EPOCH: return sizeof(struct dacce_ev_epoch);
	case DACCE_EV_DICT_CHUNK: return sizeof(struct dacce_ev_dict_chunk);
	case DACCE_EV_THREAD: return sizeof(struct dacce_ev_thread);
	case DACCE_EV_FORK: return sizeof(struct dacce_ev_fork);
	case DACCE_EV_EXIT: return sizeof(struct dacce_ev_exit);
	case DACCE_EV_EXEC: return sizeof(struct dacce_ev_exec);
	case DACCE_EV_SAMPLE: return sizeof(struct dacce_ev_sample);
	default: return 0;
	}
}

int dacce_capture_record(struct dacce_capture *cap, const void *data, size_t size)
{
	const struct dacce_ev_header *h = data;
	size_t need;
	int err;

	cap->stats.records++;
	need = size >= sizeof(*h) ? record_size(h->type) : 0;
	if (!need || size < need) {
		cap->stats.bad_records++;
		return 0;
	}
	err = begin(cap);
	if (err)
		return err;
	switch (h->type) {
	case DACCE_EV_START: return on_start(cap, data);
	case DACCE_EV_MODULE: return on_module(cap, data);
	case DACCE_EV_NODE: return on_node(cap, data);
	case DACCE_EV_EDGE: return on_edge(cap, data);
	case DACCE_EV_CODE_REGION: return on_code_region(cap, data);
	case DACCE_EV_CODE_ENTRY: return on_code_entry(cap, data);
	case DACCE_EV_FRAGMENT: return on_fragment(cap, data);
	case DACCE_EV_EPOCH: return on_epoch(cap, data);
	case DACCE_EV_DICT_CHUNK: return on_dict_chunk(cap, data);
	case DACCE_EV_THREAD: return on_thread(cap, data);
	case DACCE_EV_FORK: return on_fork(cap, data);
	case DACCE_EV_EXIT: return on_thread_exit(cap, data);
	case DACCE_EV_EXEC: return on_exec(cap, data);
	case DACCE_EV_SAMPLE: return on_any_sample(cap, data, size);
	default: return 0;
	}
}

/* ------------------------------------------------------------------ life */

int dacce_capture_new(struct dacce_store *store, struct dacce_capture **out)
{
	struct dacce_capture *cap = calloc(1, sizeof(*cap));

	*out = NULL;
	if (!cap)
		return -ENOMEM;
	cap->store = store;
	dacce_hashmap_init(&cap->by_pid);
	for (int i = 0; i < ST_COUNT; i++) {
		cap->st[i] = dacce_store_prepare(store, statement_sql[i]);
		if (!cap->st[i]) {
			dacce_capture_free(cap);
			return -EIO;
		}
	}
	*out = cap;
	return 0;
}

void dacce_capture_free(struct dacce_capture *cap)
{
	if (!cap)
		return;
	dacce_capture_flush(cap);
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(cap->st[i]);
	for (size_t i = 0; i < cap->n_procs; i++)
		free(cap->procs[i].dict);
	free(cap->procs);
	dacce_hashmap_fini(&cap->by_pid);
	free(cap);
}

const struct dacce_capture_stats *dacce_capture_stats(const struct dacce_capture *cap)
{
	return &cap->stats;
}

uint64_t dacce_capture_epoch_of(const struct dacce_capture *cap, uint32_t pid)
{
	struct proc_state *st = state_of((struct dacce_capture *)cap, pid);

	return st ? st->epoch : 0;
}
