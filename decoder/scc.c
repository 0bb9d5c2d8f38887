// SPDX-License-Identifier: MIT
/* Tarjan's algorithm, iterative: call graphs are deep enough to overflow a recursive one. */
#include "scc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#define UNSEEN UINT32_MAX

struct tarjan {
	const uint32_t *start, *edge_ids, *callee_of;
	uint32_t *component;
	uint32_t *index, *low;
	bool *on_stack;
	uint32_t *stack, depth;	    /* nodes of components not finished yet */
	uint32_t *frame_node, *frame_pos, frames; /* the search's own stack */
	uint32_t next_index, next_component;
};

static void enter(struct tarjan *t, uint32_t n)
{
	t->index[n] = t->low[n] = t->next_index++;
	t->stack[t->depth++] = n;
	t->on_stack[n] = true;
	t->frame_node[t->frames] = n;
	t->frame_pos[t->frames++] = t->start[n];
}

/* n is done: a root of a component takes its members off the stack. */
static void leave(struct tarjan *t, uint32_t n)
{
	if (t->low[n] == t->index[n]) {
		uint32_t m;

		do {
			m = t->stack[--t->depth];
			t->on_stack[m] = false;
			t->component[m] = t->next_component;
		} while (m != n);
		t->next_component++;
	}
	if (t->frames) {
		uint32_t parent = t->frame_node[t->frames - 1];

		if (t->low[n] < t->low[parent])
			t->low[parent] = t->low[n];
	}
}

static void search_from(struct tarjan *t, uint32_t root)
{
	enter(t, root);
	while (t->frames) {
		uint32_t n = t->frame_node[t->frames - 1];

		if (t->frame_pos[t->frames - 1] < t->start[n + 1]) {
			uint32_t m = t->callee_of[t->edge_ids[t->frame_pos[t->frames - 1]++]];

			if (t->index[m] == UNSEEN)
				enter(t, m);
			else if (t->on_stack[m] && t->index[m] < t->low[n])
				t->low[n] = t->index[m];
			continue;
		}
		t->frames--;
		leave(t, n);
	}
}

int dacce_scc(uint32_t n_nodes, const uint32_t *start, const uint32_t *edge_ids,
	      const uint32_t *callee_of, uint32_t *component)
{
	size_t n = n_nodes ? n_nodes : 1;
	struct tarjan t = { .start = start, .edge_ids = edge_ids, .callee_of = callee_of,
			    .component = component };
	int err = -ENOMEM;

	t.index = malloc(sizeof(*t.index) * n);
	t.low = malloc(sizeof(*t.low) * n);
	t.on_stack = calloc(n, sizeof(*t.on_stack));
	t.stack = malloc(sizeof(*t.stack) * n);
	t.frame_node = malloc(sizeof(*t.frame_node) * n);
	t.frame_pos = malloc(sizeof(*t.frame_pos) * n);
	if (!t.index || !t.low || !t.on_stack || !t.stack || !t.frame_node || !t.frame_pos)
		goto cleanup;
	for (uint32_t i = 0; i < n_nodes; i++)
		t.index[i] = UNSEEN;
	for (uint32_t i = 0; i < n_nodes; i++)
		if (t.index[i] == UNSEEN)
			search_from(&t, i);
	err = 0;
cleanup:
	free(t.index);
	free(t.low);
	free(t.on_stack);
	free(t.stack);
	free(t.frame_node);
	free(t.frame_pos);
	return err;
}
