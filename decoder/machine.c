// SPDX-License-Identifier: MIT
#include "machine.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void dacce_state_init(struct dacce_state *st, uint64_t epoch)
{
	memset(st, 0, sizeof(*st));
	st->epoch = epoch;
}

void dacce_state_fini(struct dacce_state *st)
{
	if (!st)
		return;
	free(st->cc);
	free(st->tc);
	memset(st, 0, sizeof(*st));
}

static int grow(void **array, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t new_cap = *cap ? *cap : 16;
	void *grown;

	if (need <= *cap)
		return 0;
	while (new_cap < need) {
		if (new_cap > UINT32_MAX / 2)
			return -ENOMEM;
		new_cap *= 2;
	}
	grown = realloc(*array, (size_t)new_cap * elem);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = new_cap;
	return 0;
}

int dacce_state_copy(struct dacce_state *dst, const struct dacce_state *src)
{
	struct dacce_state copy;

	dacce_state_init(&copy, src->epoch);
	copy.id = src->id;
	if (grow((void **)&copy.cc, &copy.cc_cap, src->cc_depth, sizeof(*copy.cc)) ||
	    grow((void **)&copy.tc, &copy.tc_cap, src->tc_depth, sizeof(*copy.tc))) {
		dacce_state_fini(&copy);
		return -ENOMEM;
	}
	if (src->cc_depth)
		memcpy(copy.cc, src->cc, sizeof(*copy.cc) * src->cc_depth);
	if (src->tc_depth)
		memcpy(copy.tc, src->tc, sizeof(*copy.tc) * src->tc_depth);
	copy.cc_depth = src->cc_depth;
	copy.tc_depth = src->tc_depth;
	dacce_state_fini(dst);
	*dst = copy;
	return 0;
}

static int push_entry(struct dacce_state *st, uint64_t id, uint32_t edge, uint32_t aux)
{
	int err = grow((void **)&st->cc, &st->cc_cap, st->cc_depth + 1, sizeof(*st->cc));

	if (err)
		return err;
	st->cc[st->cc_depth++] = (struct dacce_cc_entry){ .id = id, .edge = edge, .aux = aux };
	return 0;
}

/* The edge as the state's own epoch sees it. */
static int edge_in_epoch(const struct dacce_state *st, const struct dacce_dict *dict,
			 const struct dacce_graph *later, uint32_t edge, struct dacce_edge_view *v)
{
	if (!st || !dict || st->epoch != dict->epoch)
		return -EINVAL;
	return dacce_dict_edge(dict, later, edge, v);
}

/* The "before" half of a call through edge. */
static int enter_edge(struct dacce_state *st, const struct dacce_dict *dict,
		      const struct dacce_graph *later, uint32_t edge)
{
	struct dacce_edge_view v;
	struct dacce_cc_entry *top;
	int err;

	err = edge_in_epoch(st, dict, later, edge, &v);
	if (err)
		return err;
	if (dacce_site_kind_is_nested_root(v.kind))
		return -EINVAL;
	if (v.class == DACCE_EDGE_ENCODED) {
		st->id += v.en;
		return 0;
	}
	top = st->cc_depth ? &st->cc[st->cc_depth - 1] : NULL;
	if (v.compress && top && top->edge == edge && top->id == st->id &&
	    top->aux < DACCE_AUX_MAX) {
		top->aux++;
	} else {
		err = push_entry(st, st->id, edge, 0);
		if (err)
			return err;
	}
	st->id = dict->max_id + 1;
	return 0;
}

int dacce_op_call(struct dacce_state *st, const struct dacce_dict *dict,
		  const struct dacce_graph *later, uint32_t edge)
{
	return enter_edge(st, dict, later, edge);
}

int dacce_op_return(struct dacce_state *st, const struct dacce_dict *dict,
		    const struct dacce_graph *later, uint32_t edge)
{
	struct dacce_edge_view v;
	struct dacce_cc_entry *top;
	int err;

	err = edge_in_epoch(st, dict, later, edge, &v);
	if (err)
		return err;
	if (v.class == DACCE_EDGE_ENCODED) {
		if (st->id < v.en)
			return -EPROTO;
		st->id -= v.en;
		return 0;
	}
	if (st->cc_depth == 0)
		return -EPROTO;
	top = &st->cc[st->cc_depth - 1];
	if (top->edge != edge)
		return -EPROTO;
	st->id = top->id;
	if (top->aux > 0)
		top->aux--;
	else
		st->cc_depth--;
	return 0;
}

bool dacce_edge_costs_nothing(const struct dacce_edge_view *v)
{
	return v->class == DACCE_EDGE_ENCODED && v->en == 0;
}

int dacce_op_keep_record(struct dacce_state *st, uint64_t frame)
{
	int err;

	if (!st)
		return -EINVAL;
	if (st->tc_depth && st->tc[st->tc_depth - 1].frame == frame)
		return 0;
	err = grow((void **)&st->tc, &st->tc_cap, st->tc_depth + 1, sizeof(*st->tc));
	if (err)
		return err;
	st->tc[st->tc_depth++] = (struct dacce_tc_entry){
		.id = st->id,
		.cc_depth = st->cc_depth,
		.top_aux = st->cc_depth ? st->cc[st->cc_depth - 1].aux : 0,
		.frame = frame,
	};
	return 0;
}

int dacce_op_tail(struct dacce_state *st, const struct dacce_dict *dict,
		  const struct dacce_graph *later, uint32_t edge, uint64_t frame)
{
	struct dacce_edge_view v;
	uint32_t depth;
	int err;

	err = edge_in_epoch(st, dict, later, edge, &v);
	if (err)
		return err;
	if (dacce_site_kind_is_nested_root(v.kind))
		return -EINVAL;
	/* Nothing changes, so the frame's return has nothing to undo: no record. */
	if (dacce_edge_costs_nothing(&v))
		return 0;
	depth = st->tc_depth;
	err = dacce_op_keep_record(st, frame);
	if (!err)
		err = enter_edge(st, dict, later, edge);
	if (err)
		st->tc_depth = depth; /* no record for a tail call that did not happen */
	return err;
}

int dacce_op_frame_exit(struct dacce_state *st, uint64_t frame)
{
	const struct dacce_tc_entry *rec;

	if (!st)
		return -EINVAL;
	if (st->tc_depth == 0 || st->tc[st->tc_depth - 1].frame != frame)
		return 0;
	rec = &st->tc[st->tc_depth - 1];
	if (rec->cc_depth > st->cc_depth)
		return -EPROTO;
	st->id = rec->id;
	st->cc_depth = rec->cc_depth;
	if (st->cc_depth)
		st->cc[st->cc_depth - 1].aux = rec->top_aux;
	st->tc_depth--;
	return 0;
}

int dacce_op_thread_start(struct dacce_state *st, const struct dacce_dict *dict,
			  const struct dacce_graph *later, uint32_t root_edge)
{
	struct dacce_edge_view v;
	int err;

	if (!st || !dict)
		return -EINVAL;
	err = dacce_dict_edge(dict, later, root_edge, &v);
	if (err)
		return err;
	if (v.kind != DACCE_SITE_ROOT_MAIN && v.kind != DACCE_SITE_ROOT_THREAD)
		return -EINVAL;
	st->epoch = dict->epoch;
	st->id = 0;
	st->cc_depth = 0;
	st->tc_depth = 0;
	return enter_edge(st, dict, later, root_edge);
}

int dacce_op_nested_enter(struct dacce_state *st, const struct dacce_dict *dict,
			  uint32_t root_edge, uint32_t interrupted_node)
{
	int err;

	if (!st || !dict || st->epoch != dict->epoch)
		return -EINVAL;
	err = push_entry(st, st->id, root_edge, interrupted_node);
	if (err)
		return err;
	st->id = dict->max_id + 1;
	return 0;
}

int dacce_op_nested_leave(struct dacce_state *st, uint32_t root_edge)
{
	if (!st)
		return -EINVAL;
	if (st->cc_depth == 0 || st->cc[st->cc_depth - 1].edge != root_edge)
		return -EPROTO;
	st->cc_depth--;
	st->id = st->cc[st->cc_depth].id;
	return 0;
}

void dacce_state_mark(const struct dacce_state *st, struct dacce_mark *mark)
{
	mark->id = st->id;
	mark->cc_depth = st->cc_depth;
	mark->top_aux = st->cc_depth ? st->cc[st->cc_depth - 1].aux : 0;
	mark->tc_depth = st->tc_depth;
}

int dacce_state_rewind(struct dacce_state *st, const struct dacce_mark *mark)
{
	if (mark->cc_depth > st->cc_depth || mark->tc_depth > st->tc_depth)
		return -EPROTO;
	st->id = mark->id;
	st->cc_depth = mark->cc_depth;
	if (st->cc_depth)
		st->cc[st->cc_depth - 1].aux = mark->top_aux;
	st->tc_depth = mark->tc_depth;
	return 0;
}
