/* SPDX-License-Identifier: MIT */
/*
 * State translation across a re-encoding.  With the world stopped, a live
 * thread state of epoch `from` is rewritten as the state the same call path
 * would have produced under epoch `to`.  Every live frame then undoes its
 * call under the new epoch's operation and lands on exactly the state its
 * caller had (the runtime redirects live return addresses to the new
 * epoch's code).  Tail records keep their frame identities, in order; a
 * frame that holds one keeps it whatever the new epoch.
 */
#ifndef DACCE_TRANSLATE_H
#define DACCE_TRANSLATE_H

#include "decode.h"
#include "machine.h"

/*
 * node is the function the thread is in (its ifun).  `later` must hold every
 * edge the state names.  On success *st is in epoch to->epoch; on failure it
 * is unchanged and a negative errno is returned (err explains -EILSEQ).
 * -EAGAIN: not now (a frame entered by a tail call that cost nothing, and so
 * holds no record, would need one under the new epoch).
 */
int dacce_translate(const struct dacce_dict *from, const struct dacce_dict *to,
		    const struct dacce_graph *later, struct dacce_state *st, uint32_t node,
		    struct dacce_decode_error *err);

#endif
