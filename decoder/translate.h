/* SPDX-License-Identifier: MIT */
/*
 * State translation across a re-encoding.  With the world stopped, a live
 * thread state of epoch `from` is rewritten as the state the same call path
 * would have produced under epoch `to`.  Every live frame then undoes its
 * call under the new epoch's operation and lands on exactly the state its
 * caller had (the runtime redirects live return addresses to the new
 * epoch's code).  Tail records keep their frame identities, in order.
 */
#ifndef DACCE_TRANSLATE_H
#define DACCE_TRANSLATE_H

#include "decode.h"
#include "machine.h"

/*
 * node is the function the thread is in (its ifun).  `later` must hold every
 * edge the state names.  On success *st is in epoch to->epoch; on failure it
 * is unchanged and a negative errno is returned (err explains -EILSEQ).
 */
int dacce_translate(const struct dacce_dict *from, const struct dacce_dict *to,
		    const struct dacce_graph *later, struct dacce_state *st, uint32_t node,
		    struct dacce_decode_error *err);

/*
 * Replays a decoded path (outermost frame last, as decode returns it) under
 * dict, building a fresh state.  Tail records take their frame identities
 * from frame_ids[0..n_frame_ids) in creation order (NULL: 0, 1, ...).
 */
int dacce_replay(const struct dacce_dict *dict, const struct dacce_graph *later,
		 const struct dacce_path *path, const uint64_t *frame_ids, uint32_t n_frame_ids,
		 struct dacce_state *out);

#endif
