/* SPDX-License-Identifier: MIT */
/*
 * What the report formats (user/report_*.c) share: argument checks, frame
 * comparison and labels, contexts merged and sorted, percentages, a small
 * hash index, and the labeled forest that holds both the calling context tree
 * and the k-calling context forest.  Not part of the public API.
 */
#ifndef DACCE_USER_REPORT_INTERNAL_H
#define DACCE_USER_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"
#include "rprofile.h"

#define RPT_NONE UINT32_MAX

/* ---------------------------------------------------------------- profile */

/* -EINVAL unless out and profile are usable and every frame keeps rprofile.h's promises. */
int rpt_check_args(FILE *out, const struct dacce_rprofile *profile);
/* 0, or -EIO when out has seen a write error. */
int rpt_flush(FILE *out);
/* opts, or the defaults when opts is NULL. */
const struct dacce_report_options *rpt_options(const struct dacce_report_options *opts,
					       struct dacce_report_options *defaults);

const char *rpt_str(const char *s); /* "" for NULL */
const char *rpt_basename(const char *path);
/* Sum of the stacks' counts. */
uint64_t rpt_context_samples(const struct dacce_rprofile *profile);
/* What percentages are of: total_samples, or the stacks' sum when larger. */
uint64_t rpt_percent_base(const struct dacce_rprofile *profile);

static inline uint64_t rpt_add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* "# event E, period P UNIT: N samples, C with a context, L lost, duration S s" */
void rpt_print_summary(FILE *out, const struct dacce_rprofile *profile);

#define RPT_PERCENT_LEN 32
/* part/base as "12.34" (rounded, no locale); "0.00" when base is 0. */
void rpt_format_percent(char buf[RPT_PERCENT_LEN], uint64_t part, uint64_t base);

/* ---------------------------------------------------------------- text */

/* Length of the valid UTF-8 sequence at s (not at its end), or 0. */
size_t rpt_utf8_sequence(const unsigned char *s);
bool rpt_utf8_is_valid(const char *s);
/* A malloc'd copy of s with each byte that is not valid UTF-8 replaced by U+FFFD. */
char *rpt_utf8_sanitize(const char *s);

/* ---------------------------------------------------------------- frames */

bool rpt_frame_is_truncated(const struct dacce_rframe *frame);
/* The function, or "[truncated]" for a truncated frame. */
const char *rpt_frame_name(const struct dacce_rframe *frame);
/* "tail", "thread_root", ... (the JSON names). */
const char *rpt_kind_name(uint8_t kind);
/* "[tail call]", ... or "" for an ordinary call. */
const char *rpt_kind_marker(uint8_t kind);
/* All of a frame, for a deterministic order. */
int rpt_frame_compare(const struct dacce_rframe *a, const struct dacce_rframe *b);
int rpt_frames_compare(const struct dacce_rframe *const *a, uint32_t n_a,
		       const struct dacce_rframe *const *b, uint32_t n_b);

/*
 * A frame's label in the CCT and the k-CCF: function, module, inlined flag and
 * how it was entered (not the address or line: a routine is one node however
 * many call sites it has).  All truncated frames share one label.
 */
int rpt_label_compare(const struct dacce_rframe *a, const struct dacce_rframe *b);
uint64_t rpt_label_hash(const struct dacce_rframe *frame);
/* " [inlined] [tail call]": a space before each marker the frame has. */
void rpt_print_markers(FILE *out, const struct dacce_rframe *frame);
/* "function (module) [markers]", or "[truncated]". */
void rpt_print_label(FILE *out, const struct dacce_rframe *frame);

uint64_t rpt_hash_bytes(uint64_t hash, const void *data, size_t len);
uint64_t rpt_hash_str(uint64_t hash, const char *s);
uint64_t rpt_hash_u64(uint64_t hash, uint64_t value);
#define RPT_HASH_SEED 0xcbf29ce484222325ULL

/* ---------------------------------------------------------------- contexts */

/* Stacks with the same frames merged (within one thread with by_thread). */
struct rpt_context {
	const struct dacce_rframe *const *frames; /* outermost first */
	uint32_t n_frames;
	uint32_t tid;	  /* 0 when the merged stacks came from different threads */
	const char *comm; /* "" when unknown or mixed */
	uint64_t count;
};

struct rpt_thread {
	uint32_t tid;
	const char *comm;
	uint64_t count;
	size_t n_contexts;
};

/* Contexts with samples, most samples first; *contexts is freed by the caller. */
int rpt_contexts_collect(const struct dacce_rprofile *profile, bool by_thread,
			 struct rpt_context **contexts, size_t *n_contexts);
/* The threads of collected contexts, most samples first. */
int rpt_threads_collect(const struct rpt_context *contexts, size_t n_contexts,
			struct rpt_thread **threads, size_t *n_threads);

/* ---------------------------------------------------------------- index */

/*
 * Open-addressing hash index of items a caller keeps in its own array: maps a
 * key to the item's number.  match() says whether item is the key.
 */
typedef bool (*rpt_index_match)(const void *ctx, uint32_t item, const void *key);

struct rpt_index {
	struct rpt_index_slot *slots;
	size_t capacity; /* power of two, or 0 */
	size_t count;
};

/* The item for key, or RPT_NONE. */
uint32_t rpt_index_find(const struct rpt_index *index, uint64_t hash, const void *key,
			rpt_index_match match, const void *ctx);
/* Records item under hash (the caller made sure key is absent). */
int rpt_index_add(struct rpt_index *index, uint64_t hash, uint32_t item);
void rpt_index_free(struct rpt_index *index);

/* ---------------------------------------------------------------- labeled forest */

struct rpt_forest_node {
	const struct dacce_rframe *frame; /* the label; NULL for the root */
	uint32_t parent;		  /* RPT_NONE for the root */
	uint32_t first_child;
	uint32_t next_sibling;
	uint64_t total; /* samples in which this node's path occurs */
	uint64_t self;	/* samples that end exactly here */
};

/*
 * A forest of trees whose children have distinct labels (the kccf paper's
 * labeled forest).  Node 0 is a virtual root above all trees.
 */
struct rpt_forest {
	struct rpt_forest_node *nodes;
	size_t n_nodes;
	size_t capacity;
	struct rpt_index children; /* (parent, label) -> node */
};

int rpt_forest_init(struct rpt_forest *forest);
void rpt_forest_free(struct rpt_forest *forest);
/* The child of parent labeled like frame, added when missing (one step of a join). */
int rpt_forest_child(struct rpt_forest *forest, uint32_t parent,
		     const struct dacce_rframe *frame, uint32_t *child);
/* The child of parent labeled like frame, or RPT_NONE. */
uint32_t rpt_forest_find_child(const struct rpt_forest *forest, uint32_t parent,
			       const struct dacce_rframe *frame);

/* How rpt_forest_print() shows a forest. */
struct rpt_forest_style {
	uint64_t percent_base;
	double min_percent;	  /* hide nodes whose total is a smaller share */
	const char *child_prefix; /* before the label of every non-top node */
	bool by_self;		  /* order by self, then total (else total, then self) */
};

/* One line per node, trees and children highest first. */
int rpt_forest_print(FILE *out, const struct rpt_forest *forest,
		     const struct rpt_forest_style *style);

/* The calling context tree of profile (report_cct.c); self of node 0 counts empty stacks. */
int rpt_cct_build(const struct dacce_rprofile *profile, struct rpt_forest *cct);

#endif
