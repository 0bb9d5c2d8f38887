// SPDX-License-Identifier: MIT
/*
 * Re-encoding a live state: decode it under the old epoch, then replay the
 * path under the new one.  The state of a thread is a function of its call
 * path alone (every "after" exactly undoes its "before", and a tail record
 * restores exactly what the tail calls changed), so the replayed state is
 * the one the thread would hold had it run under the new epoch all along,
 * which is what the new epoch's code in every live frame expects.
 */
#include "translate.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

static int replay_edge(struct dacce_state *st, const struct dacce_dict *dict,
		       const struct dacce_graph *later, const struct dacce_path *path, size_t i,
		       const uint64_t *frame_ids, uint32_t n_frame_ids, uint32_t *n_records,
		       bool *frame_has_record)
{
	const struct dacce_frame *f = &path->frames[i];
	const struct dacce_frame *outer = &path->frames[i + 1];
	struct dacce_edge_view v;
	uint64_t frame;
	int err;

	err = dacce_dict_edge(dict, later, f->edge, &v);
	if (err)
		return -EILSEQ;
	if (v.callee != f->node)
		return -EILSEQ;
	if (dacce_site_kind_is_nested_root(v.kind)) {
		*frame_has_record = false;
		return dacce_op_nested_enter(st, dict, f->edge, outer->node);
	}
	if (v.caller != outer->node || dacce_site_kind_is_root(v.kind))
		return -EILSEQ;
	if (!dacce_site_kind_is_tail(v.kind)) {
		*frame_has_record = false;
		return dacce_op_call(st, dict, later, f->edge);
	}
	if (*frame_has_record) {
		frame = st->tc[st->tc_depth - 1].frame;
	} else {
		if (frame_ids && *n_records >= n_frame_ids)
			return -EILSEQ;
		frame = frame_ids ? frame_ids[*n_records] : *n_records;
		/* Distinct from the record below, or op_tail would share it. */
		if (st->tc_depth && st->tc[st->tc_depth - 1].frame == frame)
			return -EILSEQ;
		(*n_records)++;
		*frame_has_record = true;
	}
	return dacce_op_tail(st, dict, later, f->edge, frame);
}

int dacce_replay(const struct dacce_dict *dict, const struct dacce_graph *later,
		 const struct dacce_path *path, const uint64_t *frame_ids, uint32_t n_frame_ids,
		 struct dacce_state *out)
{
	struct dacce_state st;
	struct dacce_edge_view root;
	bool frame_has_record = false;
	uint32_t n_records = 0;
	int err;

	if (!dict || !path || !out || path->len == 0)
		return -EINVAL;
	dacce_state_init(&st, dict->epoch);
	if (dacce_dict_edge(dict, later, path->frames[path->len - 1].edge, &root) ||
	    (root.kind != DACCE_SITE_ROOT_MAIN && root.kind != DACCE_SITE_ROOT_THREAD)) {
		err = -EILSEQ;
		goto cleanup;
	}
	err = dacce_op_thread_start(&st, dict, later, path->frames[path->len - 1].edge);
	for (size_t i = path->len - 1; !err && i-- > 0;)
		err = replay_edge(&st, dict, later, path, i, frame_ids, n_frame_ids, &n_records,
				  &frame_has_record);
	if (!err && frame_ids && n_records != n_frame_ids)
		err = -EILSEQ;
	if (err)
		goto cleanup;
	dacce_state_fini(out);
	*out = st;
	return 0;
cleanup:
	dacce_state_fini(&st);
	return err;
}

int dacce_translate(const struct dacce_dict *from, const struct dacce_dict *to,
		    const struct dacce_graph *later, struct dacce_state *st, uint32_t node,
		    struct dacce_decode_error *err)
{
	struct dacce_snapshot snap;
	struct dacce_path path;
	struct dacce_state next;
	uint64_t *frame_ids = NULL;
	int ret;

	if (!from || !to || !st || st->epoch != from->epoch)
		return -EINVAL;
	dacce_path_init(&path);
	dacce_state_init(&next, to->epoch);
	snap = dacce_snapshot_of(st, node);
	ret = dacce_decode_append(from, later, &snap, &path, err);
	if (ret)
		goto cleanup;
	frame_ids = malloc(sizeof(*frame_ids) * (st->tc_depth ? st->tc_depth : 1));
	if (!frame_ids) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (uint32_t i = 0; i < st->tc_depth; i++)
		frame_ids[i] = st->tc[i].frame;
	ret = dacce_replay(to, later, &path, frame_ids, st->tc_depth, &next);
	if (ret) {
		if (err && ret == -EILSEQ)
			err->message = "decoded path does not replay under the new epoch";
		goto cleanup;
	}
	dacce_state_fini(st);
	*st = next;
	dacce_state_init(&next, 0);
cleanup:
	free(frame_ids);
	dacce_state_fini(&next);
	dacce_path_fini(&path);
	return ret;
}
