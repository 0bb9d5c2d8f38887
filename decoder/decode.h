/* SPDX-License-Identifier: MIT */
/*
 * Decoding a context (the paper's Algorithm 1, generalised to every edge
 * class, recursion counts, nested roots and thread-creation prefixes).
 */
#ifndef DACCE_DECODE_H
#define DACCE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "dict.h"
#include "machine.h"

/* A logical frame: node, entered through edge (a root edge for the outermost). */
struct dacce_frame {
	uint32_t node;
	uint32_t edge;
};

/* A context as recorded: enough to decode later against its epoch. */
struct dacce_snapshot {
	uint64_t epoch;
	uint64_t id;
	uint32_t node; /* the function the context ends in (ifun), or DACCE_IN_LEAF */
	uint32_t cc_depth;
	const struct dacce_cc_entry *cc;
};

/* Why a context did not decode; message is static text. */
struct dacce_decode_error {
	const char *message;
	uint32_t frames_done; /* frames decoded before the failure */
	/*
	 * dacce_translate's -EAGAIN for a frame entered by a tail call that is
	 * free now and would need a record in the new epoch: a tail edge of
	 * that frame which, left free by the new encoding, would need none
	 * (DACCE_NONE otherwise).  Set by dacce_translate only.
	 */
	uint32_t keep_free;
};

/*
 * Decodes snap (innermost frame first) into frames[0..capacity).
 * Returns the number of frames stored; when the context has more frames
 * than capacity, decoding stops and returns -E2BIG after filling frames.
 * Other errors: -EINVAL (arguments, epoch mismatch), -EILSEQ (the context is
 * not valid for this dictionary; err says why).  Never reads out of bounds.
 */
int dacce_decode(const struct dacce_dict *dict, const struct dacce_graph *later,
		 const struct dacce_snapshot *snap, struct dacce_frame *frames,
		 size_t capacity, struct dacce_decode_error *err);

/* Growable frame list for whole contexts. */
struct dacce_path {
	struct dacce_frame *frames;
	size_t len, cap;
};

void dacce_path_init(struct dacce_path *path);
/* Appends one frame; 0 or -ENOMEM. */
int dacce_path_push(struct dacce_path *path, struct dacce_frame frame);
void dacce_path_fini(struct dacce_path *path);

/* Like dacce_decode, appending every frame to path (no capacity limit). */
int dacce_decode_append(const struct dacce_dict *dict, const struct dacce_graph *later,
			const struct dacce_snapshot *snap, struct dacce_path *path,
			struct dacce_decode_error *err);

/* Dictionaries by epoch, for contexts of several epochs. */
typedef const struct dacce_dict *(*dacce_dict_lookup_fn)(void *ctx, uint64_t epoch);

/*
 * A thread's full context: chain[0] is its own snapshot, chain[1] the
 * snapshot its creator took at thread creation, chain[2] the creator's own
 * creation snapshot, and so on.  Each is decoded against its own epoch and
 * appended; the outermost frame of each but the last is a thread root.
 */
int dacce_decode_chain(dacce_dict_lookup_fn lookup, void *lookup_ctx,
		       const struct dacce_graph *later, const struct dacce_snapshot *chain,
		       size_t n_chain, struct dacce_path *path, struct dacce_decode_error *err);

/* Snapshot of a live state, ending in node. */
static inline struct dacce_snapshot dacce_snapshot_of(const struct dacce_state *st, uint32_t node)
{
	return (struct dacce_snapshot){
		.epoch = st->epoch, .id = st->id, .node = node,
		.cc_depth = st->cc_depth, .cc = st->cc,
	};
}

#endif
