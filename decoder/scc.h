/* SPDX-License-Identifier: MIT */
/*
 * Strongly connected components of a graph given as out-edge lists (CSR):
 * the encoder asks only whether an edge can lie on a cycle at all.
 */
#ifndef DACCE_SCC_H
#define DACCE_SCC_H

#include <stdint.h>

/*
 * Node n's out-edges are edge_ids[start[n] .. start[n + 1]), each leading to
 * callee_of[edge].  Fills component[n] (0 ..) so that two nodes share a
 * number exactly when each reaches the other.  Returns 0 or -ENOMEM.
 */
int dacce_scc(uint32_t n_nodes, const uint32_t *start, const uint32_t *edge_ids,
	      const uint32_t *callee_of, uint32_t *component);

#endif
