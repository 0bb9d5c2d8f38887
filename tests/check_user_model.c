// SPDX-License-Identifier: MIT
/*
 * From BPF records to resolved contexts: a made-up process is announced to
 * the capture writer record by record, exactly as bpf/dacce.bpf.c would
 * (modules, nodes, edges, an epoch with its dictionary in chunks, threads,
 * samples whose states come from the reference machine, decoder/machine.c);
 * the capture is read back and every sample must resolve to its true path,
 * or to exactly the partial answer the case calls for.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "check_main.h"
#include "dacce_events.h"
#include "dict.h"
#include "dict_io.h"
#include "graph.h"
#include "machine.h"
#include "model.h"
#include "store.h"

#define PID 4242
#define CHILD_TID 4243
#define EXE_BIAS 0x555500000000ull
#define LIBC_BIAS 0x7f0000000000ull
#define CODE_REGION 0x555600000000ull

/*
 * The made-up program: main -> f -> g; main -> libc (a call out); cb -> g,
 * called back; f -> memcpy, a leaf call (runtime/leaves.h).
 */
enum { N_MAIN = 1, N_F, N_G, N_LIBC, N_CB, N_MEMCPY };
static const struct {
	uint32_t module;
	uint64_t offset, size;
} node_def[] = {
	[N_MAIN] = { 0, 0x1000, 0x100 }, [N_F] = { 0, 0x1100, 0x100 }, [N_G] = { 0, 0x1200, 0x100 },
	[N_LIBC] = { 1, 0x5000, 0 },	 [N_CB] = { 0, 0x1300, 0x100 },
	[N_MEMCPY] = { 1, 0x6000, 0 },
};

enum { E_ROOT, E_MAIN_F, E_F_G, E_MAIN_LIBC, E_CB_G, E_THREAD_F, E_F_MEMCPY, N_EDGES };

struct fixture {
	char path[64];
	struct dacce_store *store;
	struct dacce_capture *cap;
	struct dacce_graph *graph;
	struct dacce_dict *dict;
	uint32_t edge[N_EDGES];
	uint64_t now;
	struct dacce_model model;
	struct dacce_model_proc *proc;
};

static struct fixture fx;

static void header(struct dacce_ev_header *h, uint32_t type, uint32_t tid)
{
	*h = (struct dacce_ev_header){ .type = type, .tgid = PID, .tid = tid, .time_ns = ++fx.now };
}

static void feed(const void *record, size_t size)
{
	ck_assert_int_eq(dacce_capture_record(fx.cap, record, size), 0);
}

static void announce_module(int64_t index, const char *path, uint64_t bias, const char *id)
{
	struct dacce_ev_module ev = { .graph_module = index, .bias = bias, .start = bias,
				      .end = bias + 0x100000, .build_id_len = (uint32_t)strlen(id) };

	header(&ev.h, DACCE_EV_MODULE, PID);
	memcpy(ev.build_id, id, strlen(id));
	snprintf(ev.path, sizeof(ev.path), "%s", path);
	feed(&ev, sizeof(ev));
}

/* Adds an edge to our graph and announces it as the runtime would. */
static uint32_t add_edge(uint32_t caller, uint32_t callee, enum dacce_site_kind kind,
			 uint64_t site_offset, uint8_t flags)
{
	struct dacce_ev_edge ev = { 0 };
	uint32_t site, edge;

	if (dacce_site_kind_is_root(kind)) {
		ck_assert_int_eq(dacce_graph_add_root_edge(fx.graph, kind - DACCE_SITE_ROOT_MAIN, callee,
							   &edge), 0);
	} else {
		ck_assert_int_eq(dacce_graph_add_site(fx.graph, caller, 0, site_offset, kind, &site), 0);
		ck_assert_int_eq(dacce_graph_add_edge(fx.graph, site, callee, &edge), 0);
	}
	if (flags & DACCE_EDGE_PINNED)
		ck_assert_int_eq(dacce_graph_pin_edge(fx.graph, edge), 0);
	if (flags & DACCE_EDGE_LEAF)
		ck_assert_int_eq(dacce_graph_leaf_edge(fx.graph, edge), 0);
	header(&ev.h, DACCE_EV_EDGE, PID);
	ev.edge = edge;
	ev.caller = fx.graph->edges[edge].caller;
	ev.callee = callee;
	ev.kind = (uint8_t)kind;
	ev.site_module = 0;
	ev.site_offset = site_offset;
	ev.flags = flags;
	feed(&ev, sizeof(ev));
	return edge;
}

/* The epoch record, then its dictionary in chunks as BPF sends it (small ones, to have several). */
static void announce_epoch(void)
{
	struct dacce_ev_epoch ev = { 0 };
	struct dacce_ev_dict_chunk *chunk = calloc(1, sizeof(*chunk));
	struct dacce_encode_opts opts;
	uint8_t *buf;
	size_t len;

	dacce_encode_opts_default(&opts);
	opts.epoch = 1;
	ck_assert_int_eq(dacce_encode(fx.graph, &opts, &fx.dict), 0);
	ck_assert_int_eq(dacce_dict_serialize(fx.dict, &buf, &len), 0);
	header(&ev.h, DACCE_EV_EPOCH, PID);
	ev.epoch = 1;
	ev.max_id = fx.dict->max_id;
	ev.n_nodes = fx.dict->n_nodes;
	ev.n_edges = fx.dict->n_edges;
	ev.dict_len = len;
	ev.driver = 2;
	feed(&ev, sizeof(ev));
	for (size_t off = 0; off < len; off += 100) {
		header(&chunk->h, DACCE_EV_DICT_CHUNK, PID);
		chunk->epoch = 1;
		chunk->offset = (uint32_t)off;
		chunk->len = (uint32_t)(len - off < 100 ? len - off : 100);
		memcpy(chunk->data, buf + off, chunk->len);
		feed(chunk, sizeof(*chunk));
	}
	free(buf);
	free(chunk);
}

static void copy_context(struct dacce_ev_context *out, const struct dacce_state *st, uint32_t flags)
{
	memset(out, 0, sizeof(*out));
	out->epoch = st->epoch;
	out->id = st->id;
	out->reset_id = fx.dict->max_id + 1;
	out->depth = st->cc_depth;
	out->n_entries = st->cc_depth;
	out->flags = DACCE_CTX_VALID | flags;
	if (st->cc_depth)
		memcpy(out->entries, st->cc, st->cc_depth * sizeof(st->cc[0]));
}

static void sample(uint32_t tid, uint64_t pc, const struct dacce_state *st, uint32_t flags)
{
	struct dacce_ev_sample *ev = calloc(1, sizeof(*ev));

	header(&ev->h, DACCE_EV_SAMPLE, tid);
	ev->pc = pc;
	ev->flags = DACCE_SAMPLE_USER;
	copy_context(&ev->ctx, st, flags);
	feed(ev, sizeof(*ev));
	free(ev);
}

static uint64_t pc_in(uint32_t node)
{
	return (node_def[node].module ? LIBC_BIAS : EXE_BIAS) + node_def[node].offset + 8;
}

static void state_at(struct dacce_state *st, const uint32_t *edges, size_t n)
{
	dacce_state_init(st, 1);
	ck_assert_int_eq(dacce_op_thread_start(st, fx.dict, fx.graph, edges[0]), 0);
	for (size_t i = 1; i < n; i++)
		ck_assert_int_eq(dacce_op_call(st, fx.dict, fx.graph, edges[i]), 0);
}

static void setup(void)
{
	struct dacce_ev_start start = { .tls_tpoff = -64, .layout_version = 2 };
	struct dacce_ev_code_region region = { .start = CODE_REGION, .size = 4096 };
	struct dacce_ev_code_entry entry = { .address = CODE_REGION + 64, .site_caller = N_F };
	char why[256];

	memset(&fx, 0, sizeof(fx));
	snprintf(fx.path, sizeof(fx.path), "/tmp/dacce-model-%d.db", getpid());
	ck_assert_int_eq(dacce_store_create(fx.path, &fx.store, why, sizeof(why)), 0);
	ck_assert_int_eq(dacce_capture_new(fx.store, &fx.cap), 0);
	fx.graph = dacce_graph_new();
	ck_assert_ptr_nonnull(fx.graph);

	header(&start.h, DACCE_EV_START, PID);
	strcpy(start.exe, "/usr/bin/made-up");
	feed(&start, sizeof(start));
	announce_module(0, "/usr/bin/made-up", EXE_BIAS, "exe");
	announce_module(1, "/usr/lib/libc-made-up.so", LIBC_BIAS, "libc");
	announce_module(-1, "/usr/bin/made-up", EXE_BIAS, "exe"); /* a later scan: same module */
	for (uint32_t n = N_MAIN; n <= N_MEMCPY; n++) {
		struct dacce_ev_node ev = { .node = n, .module = node_def[n].module,
					    .offset = node_def[n].offset, .size = node_def[n].size };
		uint32_t got;

		ck_assert_int_eq(dacce_graph_add_module(fx.graph, (const uint8_t *)(node_def[n].module ? "libc" : "exe"),
						       node_def[n].module ? 4 : 3, &got), 0);
		ck_assert_int_eq(dacce_graph_add_node(fx.graph, node_def[n].module, node_def[n].offset, &got), 0);
		ck_assert_uint_eq(got, n);
		header(&ev.h, DACCE_EV_NODE, PID);
		feed(&ev, sizeof(ev));
	}
	fx.edge[E_ROOT] = add_edge(DACCE_ROOT_NODE, N_MAIN, DACCE_SITE_ROOT_MAIN, 0, 0);
	fx.edge[E_MAIN_F] = add_edge(N_MAIN, N_F, DACCE_SITE_DIRECT, 0x1010, 0);
	fx.edge[E_F_G] = add_edge(N_F, N_G, DACCE_SITE_DIRECT, 0x1110, 0);
	fx.edge[E_MAIN_LIBC] = add_edge(N_MAIN, N_LIBC, DACCE_SITE_PLT, 0x1020, DACCE_EDGE_PINNED);
	fx.edge[E_CB_G] = add_edge(N_CB, N_G, DACCE_SITE_DIRECT, 0x1310, 0);
	fx.edge[E_THREAD_F] = add_edge(DACCE_ROOT_NODE, N_F, DACCE_SITE_ROOT_THREAD, 0, 0);
	fx.edge[E_F_MEMCPY] = add_edge(N_F, N_MEMCPY, DACCE_SITE_PLT, 0x1120, DACCE_EDGE_LEAF);
	header(&region.h, DACCE_EV_CODE_REGION, PID);
	feed(&region, sizeof(region));
	header(&entry.h, DACCE_EV_CODE_ENTRY, PID);
	feed(&entry, sizeof(entry));
	announce_epoch();
}

/* Reads the capture back (records may have been lost: see load). */
static void load_as_is(void)
{
	char why[256];

	ck_assert_int_eq(dacce_capture_flush(fx.cap), 0);
	ck_assert_int_eq(dacce_model_load(fx.store, &fx.model, why, sizeof(why)), 0);
	ck_assert_uint_eq(fx.model.n_procs, 1);
	fx.proc = &fx.model.procs[0];
}

static void load(void)
{
	load_as_is();
	ck_assert_ptr_null(fx.proc->graph_error);
	ck_assert_uint_eq(fx.proc->graph->n_edges, fx.graph->n_edges);
}

static void teardown(void)
{
	dacce_model_fini(&fx.model);
	dacce_capture_free(fx.cap);
	dacce_store_close(fx.store);
	dacce_graph_free(fx.graph);
	dacce_dict_free(fx.dict);
	unlink(fx.path);
	{
		char side[80];

		snprintf(side, sizeof(side), "%s-wal", fx.path);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", fx.path);
		unlink(side);
	}
}

/* Resolves the index-th sample of the capture (as dacce report would) into r. */
static void resolve_sample(int index, struct dacce_resolved *r)
{
	sqlite3_stmt *stmt = dacce_store_prepare(fx.store, "SELECT tid, pc, epoch, id, reset_id, depth, "
							   "ctx_flags, entries FROM samples ORDER BY rowid "
							   "LIMIT 1 OFFSET ?1");
	struct dacce_raw_context ctx;

	sqlite3_bind_int(stmt, 1, index);
	ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
	ctx = (struct dacce_raw_context){
		.epoch = (uint64_t)sqlite3_column_int64(stmt, 2),
		.id = (uint64_t)sqlite3_column_int64(stmt, 3),
		.reset_id = (uint64_t)sqlite3_column_int64(stmt, 4),
		.depth = (uint32_t)sqlite3_column_int64(stmt, 5),
		.flags = (uint32_t)sqlite3_column_int64(stmt, 6),
		.n_entries = (uint32_t)(sqlite3_column_bytes(stmt, 7) / 16),
		.entries = sqlite3_column_blob(stmt, 7),
	};
	dacce_model_resolve(fx.proc, (uint32_t)sqlite3_column_int64(stmt, 0),
			    (uint64_t)sqlite3_column_int64(stmt, 1), &ctx, "/usr/lib/libdacce.so", r);
	sqlite3_finalize(stmt);
}

/* The path's nodes, innermost first, as a string like "3 2 1" ("|" marks a gap after a frame). */
static const char *nodes_of(const struct dacce_resolved *r)
{
	static char buf[256];
	size_t used = 0;

	buf[0] = 0;
	for (size_t i = 0; i < r->path.len; i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%u%s", i ? " " : "",
					 r->path.frames[i].node,
					 r->path.frames[i].edge == DACCE_EDGE_GAP ? " |" : "");
	return buf;
}

static void expect(int index, enum dacce_resolve_status status, const char *nodes, bool outside)
{
	struct dacce_resolved r;

	dacce_resolved_init(&r);
	resolve_sample(index, &r);
	ck_assert_msg(r.status == status, "sample %d: %s (%s), want %s", index,
		      dacce_resolve_status_name(r.status), r.why ? r.why : "-",
		      dacce_resolve_status_name(status));
	ck_assert_str_eq(nodes_of(&r), nodes);
	ck_assert_int_eq(r.leaf_outside, outside);
	dacce_resolved_fini(&r);
}

START_TEST(test_contexts_resolve_to_their_paths)
{
	struct dacce_state st;
	uint32_t path[4];

	setup();
	/* 0: main -> f -> g, the pc in g. */
	path[0] = fx.edge[E_ROOT], path[1] = fx.edge[E_MAIN_F], path[2] = fx.edge[E_F_G];
	state_at(&st, path, 3);
	sample(PID, pc_in(N_G), &st, 0);
	/* 1: f's state, the pc at the entry of the generated code of a call site in f. */
	dacce_state_fini(&st);
	state_at(&st, path, 2);
	sample(PID, CODE_REGION + 64, &st, 0);
	/* 2: inside generated code elsewhere. */
	sample(PID, CODE_REGION + 200, &st, 0);
	/* 3: main called out into libc; the pc in libc. */
	dacce_state_fini(&st);
	path[1] = fx.edge[E_MAIN_LIBC];
	state_at(&st, path, 2);
	sample(PID, pc_in(N_LIBC), &st, 0);
	/* 4: libc called back cb (no edge), cb -> g: the part above the call out is known. */
	ck_assert_int_eq(dacce_op_call(&st, fx.dict, fx.graph, fx.edge[E_CB_G]), 0);
	sample(PID, pc_in(N_G), &st, 0);
	/* 5: the same, but runtime code was running on the thread. */
	sample(PID, pc_in(N_G), &st, DACCE_CTX_IN_RUNTIME);
	dacce_state_fini(&st);
	/*
	 * 6: main called out into libc, then a runtime signal handler returned:
	 * the pc in libc's restorer is in no call the context holds.
	 */
	path[1] = fx.edge[E_MAIN_LIBC];
	state_at(&st, path, 2);
	sample(PID, pc_in(N_LIBC), &st, DACCE_CTX_SIGRETURN);
	dacce_state_fini(&st);
	load();

	expect(0, DACCE_RESOLVED, "3 2 1", false);
	expect(1, DACCE_RESOLVED, "2 1", false);
	expect(2, DACCE_UNRESOLVED_TRAMPOLINE, "", false);
	expect(3, DACCE_RESOLVED, "4 1", true);
	expect(4, DACCE_RESOLVED_CALLBACK, "3 5 | 4 1", false);
	expect(5, DACCE_UNRESOLVED_RUNTIME, "", false);
	expect(6, DACCE_UNRESOLVED_SIGRETURN, "", false);
}
END_TEST

/* A function's copy (runtime/relocated.h) is the function, but inside an inline call's operation. */
START_TEST(test_a_sample_in_a_functions_copy_is_in_the_function)
{
	struct dacce_ev_code_entry copy = {
		.address = CODE_REGION + 1024, .site_caller = DACCE_CODE_COPY,
		.site_offset = (uint64_t)512 << 32 | N_F,
	};
	struct dacce_ev_code_entry inside = {
		.address = CODE_REGION + 1100, .site_caller = DACCE_CODE_INSIDE_OP,
	};
	struct dacce_state st;
	uint32_t path[2];

	setup();
	header(&copy.h, DACCE_EV_CODE_ENTRY, PID);
	feed(&copy, sizeof(copy));
	header(&inside.h, DACCE_EV_CODE_ENTRY, PID);
	feed(&inside, sizeof(inside));
	path[0] = fx.edge[E_ROOT], path[1] = fx.edge[E_MAIN_F];
	state_at(&st, path, 2);
	sample(PID, CODE_REGION + 1024, &st, 0);	/* its first instruction */
	sample(PID, CODE_REGION + 1535, &st, 0);	/* its last byte */
	sample(PID, CODE_REGION + 1100, &st, 0);	/* inside an operation */
	sample(PID, CODE_REGION + 1536, &st, 0);	/* past its end: other code */
	dacce_state_fini(&st);
	load();

	expect(0, DACCE_RESOLVED, "2 1", false);
	expect(1, DACCE_RESOLVED, "2 1", false);
	expect(2, DACCE_UNRESOLVED_TRAMPOLINE, "", false);
	expect(3, DACCE_UNRESOLVED_TRAMPOLINE, "", false);
}
END_TEST

/* A leaf call is encoded, not pushed: in library code, the id alone names it. */
START_TEST(test_a_leaf_call_resolves_from_its_id)
{
	struct dacce_state st;
	uint32_t path[3];

	setup();
	path[0] = fx.edge[E_ROOT], path[1] = fx.edge[E_MAIN_F], path[2] = fx.edge[E_F_MEMCPY];
	ck_assert_uint_eq(fx.dict->dummy[N_MEMCPY], DACCE_DUMMY_LEAF);
	ck_assert_uint_gt(fx.dict->en[fx.edge[E_F_MEMCPY]], 0);
	/* 0: main -> f -> memcpy, the pc in libc: nothing pushed. */
	state_at(&st, path, 3);
	ck_assert_uint_eq(st.cc_depth, 0);
	sample(PID, pc_in(N_MEMCPY) + 0x40, &st, 0);
	/* 1: f's own state with the pc in libc: no leaf call holds it, never a guess. */
	dacce_state_fini(&st);
	state_at(&st, path, 2);
	sample(PID, pc_in(N_MEMCPY), &st, 0);
	dacce_state_fini(&st);
	load();
	expect(0, DACCE_RESOLVED, "6 2 1", true);
	expect(1, DACCE_UNRESOLVED_DECODE, "", true);
}
END_TEST

START_TEST(test_threads_continue_into_their_creation_context)
{
	struct dacce_ev_fork *fork_ev = calloc(1, sizeof(*fork_ev));
	struct dacce_ev_thread thread = { .root_edge = 0 };
	struct dacce_state creator, st;
	uint32_t path[3];

	setup();
	/* main calls out (pthread_create in libc); the clone sees that context. */
	path[0] = fx.edge[E_ROOT], path[1] = fx.edge[E_MAIN_LIBC];
	state_at(&creator, path, 2);
	header(&fork_ev->h, DACCE_EV_FORK, PID);
	fork_ev->child_tid = CHILD_TID;
	fork_ev->child_tgid = PID;
	copy_context(&fork_ev->ctx, &creator, 0);
	feed(fork_ev, sizeof(*fork_ev));
	header(&thread.h, DACCE_EV_THREAD, CHILD_TID);
	thread.root_edge = fx.edge[E_THREAD_F];
	feed(&thread, sizeof(thread));
	/* The thread: f -> g. */
	path[0] = fx.edge[E_THREAD_F], path[1] = fx.edge[E_F_G];
	state_at(&st, path, 2);
	sample(CHILD_TID, pc_in(N_G), &st, 0);
	dacce_state_fini(&st);
	dacce_state_fini(&creator);
	free(fork_ev);
	load();

	expect(0, DACCE_RESOLVED, "3 2 4 1", false);
}
END_TEST

START_TEST(test_a_missing_dictionary_is_said_not_guessed)
{
	struct dacce_state st;
	uint32_t path[2];

	setup();
	path[0] = fx.edge[E_ROOT], path[1] = fx.edge[E_MAIN_F];
	state_at(&st, path, 2);
	st.epoch = 7; /* an epoch whose records were lost */
	sample(PID, pc_in(N_F), &st, 0);
	dacce_state_fini(&st);
	load();
	expect(0, DACCE_UNRESOLVED_NO_DICT, "", false);
}
END_TEST

START_TEST(test_lost_edge_records_never_shift_later_edges)
{
	struct dacce_state st;
	uint32_t path[2], y;

	setup();
	/* An edge whose record the ring buffer lost, then two announced: both call g. */
	add_edge(N_F, N_CB, DACCE_SITE_INDIRECT, 0x1130, 0);
	ck_assert_int_eq(sqlite3_exec(fx.store->db, "DELETE FROM edges WHERE idx = (SELECT max(idx) "
					"FROM edges)", NULL, NULL, NULL), SQLITE_OK);
	y = add_edge(N_MAIN, N_G, DACCE_SITE_DIRECT, 0x1030, 0);
	add_edge(N_F, N_G, DACCE_SITE_INDIRECT, 0x1140, 0);
	/* main -> g through the edge after the gap, the pc in g. */
	path[0] = fx.edge[E_ROOT], path[1] = y;
	state_at(&st, path, 2);
	sample(PID, pc_in(N_G), &st, 0);
	dacce_state_fini(&st);
	load_as_is();
	ck_assert_str_eq(fx.proc->graph_error, "edge records are missing");
	ck_assert_uint_eq(fx.proc->graph->n_edges, fx.graph->n_edges - 3);
	/* Replayed one place early, f -> g would stand in for main -> g: "3 2 1". */
	expect(0, DACCE_UNRESOLVED_DECODE, "", false);
}
END_TEST

static Suite *model_suite(void)
{
	Suite *s = suite_create("user_model");
	TCase *tc = tcase_create("resolve");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_contexts_resolve_to_their_paths);
	tcase_add_test(tc, test_a_sample_in_a_functions_copy_is_in_the_function);
	tcase_add_test(tc, test_a_leaf_call_resolves_from_its_id);
	tcase_add_test(tc, test_threads_continue_into_their_creation_context);
	tcase_add_test(tc, test_a_missing_dictionary_is_said_not_guessed);
	tcase_add_test(tc, test_lost_edge_records_never_shift_later_edges);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(model_suite());
}
