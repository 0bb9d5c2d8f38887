/* SPDX-License-Identifier: MIT */
/*
 * A capture read back into memory, one process image at a time: the call
 * graph replayed in the runtime's order (so indices match the ccStacks),
 * the dictionaries of its epochs, its modules and the runtime's code, and
 * the creation contexts of its threads.  Resolving a sample turns its raw
 * (pc, epoch, id, ccStack) into logical frames, or says exactly why not.
 */
#ifndef DACCE_USER_MODEL_H
#define DACCE_USER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "dict.h"
#include "graph.h"
#include "store.h"

struct dacce_model_module {
	int64_t graph_index; /* -1: known from a scan only */
	char *path;
	uint8_t build_id[DACCE_BUILD_ID_MAX];
	size_t build_id_len;
	uint64_t bias, start, end;
};

struct dacce_model_epoch {
	uint64_t epoch, max_id, pause_ns, time_ns;
	uint32_t n_nodes, n_edges;
	const uint8_t *blob; /* serialised dictionary (owned), NULL when it did not arrive */
	size_t blob_len;
	struct dacce_dict *dict; /* parsed on first use */
	bool dict_failed;
	char *driver;
};

struct dacce_model_thread {
	uint32_t tid, creator_tid;
	int64_t root_edge;	 /* -1 when the runtime did not start a context in it */
	bool has_creation_ctx;
	uint64_t ctx_epoch, ctx_id, ctx_reset_id;
	uint32_t ctx_depth, ctx_flags, ctx_n;
	struct dacce_cc_entry *ctx_entries;
};

struct dacce_model_proc {
	int64_t id, parent; /* rows of procs; parent 0 when none */
	uint32_t pid;
	char *exe;
	bool runtime;
	uint64_t fork_epoch;
	struct dacce_graph *graph;
	char *graph_error; /* set when the replay found records missing */
	uint64_t *node_size;	     /* per node: bytes of the function, 0 for boundaries */
	int64_t *module_of_graph;    /* graph module index -> index in modules, -1 unknown */
	struct dacce_model_module *modules;
	size_t n_modules;
	struct dacce_model_epoch *epochs; /* own and inherited, by epoch */
	size_t n_epochs;
	uint64_t *region_start, *region_size;
	size_t n_regions;
	struct dacce_hashmap entries; /* code-cache address -> site caller node */
	struct dacce_model_fragment *fragments; /* code split off functions (foo.cold) */
	size_t n_fragments;
	struct dacce_model_copy *copies; /* functions' copies in the code cache, by start */
	size_t n_copies;
	uint32_t *functions;	      /* nodes with a size, by (module, offset): pc -> function */
	uint32_t n_functions;
	struct dacce_model_thread *threads;
	size_t n_threads;
};

/* A function's copy the runtime runs instead of it (runtime/relocated.h, DACCE_CODE_COPY). */
struct dacce_model_copy {
	uint64_t start, size;
	uint32_t node;
};

/* Code the runtime instrumented as part of node's function without starting it (foo.cold). */
struct dacce_model_fragment {
	uint32_t node, module; /* module: the graph's index */
	uint64_t offset, size;
};

struct dacce_model {
	struct dacce_store *store;
	struct dacce_model_proc *procs;
	size_t n_procs;
};

/* Loads every process image of the capture; -errno with a reason in why. */
int dacce_model_load(struct dacce_store *store, struct dacce_model *model, char *why,
		     size_t why_len);
void dacce_model_fini(struct dacce_model *model);

struct dacce_model_proc *dacce_model_proc(struct dacce_model *model, int64_t id);

/* The module (any scan) holding a run-time address, or NULL. */
const struct dacce_model_module *dacce_model_module_at(const struct dacce_model_proc *proc,
						       uint64_t address);
/* The module of a graph node, or NULL. */
const struct dacce_model_module *dacce_model_node_module(const struct dacce_model_proc *proc,
							 uint32_t node);
/* The decoded function of the program (a node with a size) holding pc, or DACCE_NONE. */
uint32_t dacce_model_function_at(const struct dacce_model_proc *proc, uint64_t pc);
/* The dictionary of an epoch of proc, or NULL. */
const struct dacce_dict *dacce_model_dict(struct dacce_model_proc *proc, uint64_t epoch);

/* Why a sample has no exact context. */
enum dacce_resolve_status {
	DACCE_RESOLVED = 0,	 /* frames are the exact context */
	DACCE_RESOLVED_PARTIAL,	 /* exact inner frames; outer ones missing (truncated copy) */
	DACCE_RESOLVED_CALLBACK, /* exact innermost and outer frames; the ones between missing:
				    program code called back from code not instrumented (a library) */
	DACCE_UNRESOLVED_NO_CONTEXT,  /* no runtime or no context in the thread yet */
	DACCE_UNRESOLVED_READ_FAILED, /* the sampler could not read the thread's state */
	DACCE_UNRESOLVED_TRAMPOLINE,  /* the PC was inside the runtime's generated code */
	DACCE_UNRESOLVED_RUNTIME,     /* the PC was in the runtime itself */
	DACCE_UNRESOLVED_UNKNOWN_PC,  /* the PC is in no function the context can end in */
	DACCE_UNRESOLVED_NO_DICT,     /* the dictionary of the sample's epoch is missing */
	DACCE_UNRESOLVED_DECODE,      /* the context did not decode (a bug or lost records) */
	DACCE_UNRESOLVED_SIGRETURN,   /* in libc's signal restorer after a runtime handler: the pc
					 is in libc, in no call the context holds */
	DACCE_RESOLVE_STATUS_COUNT,
};

const char *dacce_resolve_status_name(enum dacce_resolve_status status);

/* In a path: the frames between this frame and the next outer one are not known. */
#define DACCE_EDGE_GAP (UINT32_MAX - 1)

/* A raw context as captured. */
struct dacce_raw_context {
	uint64_t epoch, id, reset_id;
	uint32_t depth, flags; /* flags: DACCE_CTX_* */
	uint32_t n_entries;    /* innermost entries, outermost of them first */
	const struct dacce_cc_entry *entries;
};

struct dacce_resolved {
	enum dacce_resolve_status status;
	const char *why;	 /* detail for unresolved ones (static text) */
	struct dacce_path path;	 /* innermost frame first (dacce_frame: node, entering edge) */
	bool leaf_outside;	 /* the PC is in code called from the innermost frame (a library) */
	uint64_t pc;
};

void dacce_resolved_init(struct dacce_resolved *r);
void dacce_resolved_fini(struct dacce_resolved *r);

/*
 * Resolves the context of thread tid in proc at pc: the innermost function
 * from the pc, then the encoding decoded, with the thread's creation context
 * appended when it has one.  Fills r (path reset first).
 */
void dacce_model_resolve(struct dacce_model_proc *proc, uint32_t tid, uint64_t pc,
			 const struct dacce_raw_context *ctx, const char *runtime_path,
			 struct dacce_resolved *r);

#endif
