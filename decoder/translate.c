// SPDX-License-Identifier: MIT
/*
 * Re-encoding a live state: decode it under the old epoch, then replay the
 * path under the new one.  Every "after" exactly undoes its "before", so the
 * id and ccStack of the replayed state are the ones the thread would hold
 * had it run under the new epoch all along, which is what the new epoch's
 * code in every live frame expects.
 *
 * Tail records are the exception: a frame gets one at its first tail call
 * that costs something, so whether a frame holds one depends on the epochs
 * it ran in, not on the path alone.  Translation therefore finds which frame
 * of the path each old record belongs to (a record saves the state at its
 * frame's first tail call, which the old replay computes), keeps it (that
 * frame's return goes through the record), and gives records the new epoch
 * needs their frames' identities.  A frame that needs a record under the new
 * epoch and has none cannot be given one (its return-address slot is not
 * known): -EAGAIN, the re-encoding waits until the frame is gone.
 */
#include "translate.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/* A frame's run of tail calls in a decoded path. */
struct tail_run {
	size_t first;		     /* path index of its outermost tail edge */
	struct dacce_tc_entry saved; /* the state its record holds, under the old epoch */
	bool costs_old, costs_new;   /* a tail call of it costs something in that epoch */
	uint32_t dear_new;	     /* its outermost tail edge that costs something in the new one */
	int64_t record;		     /* the old record it holds, or -1 */
};

static bool is_tail_edge(const struct dacce_dict *dict, const struct dacce_graph *later,
			 uint32_t edge, bool *costs)
{
	struct dacce_edge_view v;

	if (dacce_dict_edge(dict, later, edge, &v) || !dacce_site_kind_is_tail(v.kind))
		return false;
	*costs = !dacce_edge_costs_nothing(&v);
	return true;
}

/* Path indices run from len - 2 (outermost, after the root) down to 0. */
static int find_runs(const struct dacce_dict *from, const struct dacce_dict *to,
		     const struct dacce_graph *later, const struct dacce_path *path,
		     struct tail_run **runs, size_t *n_runs)
{
	size_t n = 0;
	bool in_run = false;

	*runs = calloc(path->len ? path->len : 1, sizeof(**runs));
	if (!*runs)
		return -ENOMEM;
	for (size_t i = path->len - 1; i-- > 0;) {
		bool costs_old, costs_new;

		if (!is_tail_edge(from, later, path->frames[i].edge, &costs_old)) {
			in_run = false;
			continue;
		}
		if (!is_tail_edge(to, later, path->frames[i].edge, &costs_new))
			return -EILSEQ;
		if (!in_run)
			(*runs)[n++] = (struct tail_run){ .first = i, .record = -1,
							  .dear_new = DACCE_NONE };
		in_run = true;
		(*runs)[n - 1].costs_old |= costs_old;
		(*runs)[n - 1].costs_new |= costs_new;
		if (costs_new && (*runs)[n - 1].dear_new == DACCE_NONE)
			(*runs)[n - 1].dear_new = path->frames[i].edge;
	}
	*n_runs = n;
	return 0;
}

/*
 * The interrupted node a nested root records over frame outer, as the
 * runtime tells it: a leaf call whose edge is encoded is DACCE_IN_LEAF (the
 * pc in a library says no more); a pushed one is its callee (the ccStack says).
 */
static uint32_t interrupted_node(const struct dacce_dict *dict, const struct dacce_graph *later,
				 const struct dacce_frame *outer)
{
	struct dacce_edge_view v;

	if (outer->node < dict->n_nodes && dict->dummy[outer->node] == DACCE_DUMMY_LEAF &&
	    dacce_dict_edge(dict, later, outer->edge, &v) == 0 && v.class == DACCE_EDGE_ENCODED)
		return DACCE_IN_LEAF;
	return outer->node;
}

static int apply_edge(struct dacce_state *st, const struct dacce_dict *dict,
		      const struct dacce_graph *later, const struct dacce_path *path, size_t i,
		      uint64_t frame)
{
	const struct dacce_frame *f = &path->frames[i];
	const struct dacce_frame *outer = &path->frames[i + 1];
	struct dacce_edge_view v;

	if (dacce_dict_edge(dict, later, f->edge, &v) || v.callee != f->node)
		return -EILSEQ;
	if (dacce_site_kind_is_nested_root(v.kind))
		return dacce_op_nested_enter(st, dict, f->edge, interrupted_node(dict, later, outer));
	if (v.caller != outer->node || dacce_site_kind_is_root(v.kind))
		return -EILSEQ;
	if (dacce_site_kind_is_tail(v.kind))
		return dacce_op_tail(st, dict, later, f->edge, frame);
	return dacce_op_call(st, dict, later, f->edge);
}

static int start_replay(const struct dacce_dict *dict, const struct dacce_graph *later,
			const struct dacce_path *path, struct dacce_state *st)
{
	struct dacce_edge_view root;

	dacce_state_init(st, dict->epoch);
	if (dacce_dict_edge(dict, later, path->frames[path->len - 1].edge, &root) ||
	    (root.kind != DACCE_SITE_ROOT_MAIN && root.kind != DACCE_SITE_ROOT_THREAD))
		return -EILSEQ;
	return dacce_op_thread_start(st, dict, later, path->frames[path->len - 1].edge);
}

/*
 * Replays path under dict into *out (NULL: only walked).  With frame_of, a
 * run that holds an old record keeps it at its first tail call, with the
 * frame identity frame_of[run], and runs that cost something get one.
 * Without (the old epoch's replay): runs are numbered, and each run's saved
 * state at its first tail call is filled in.
 */
static int replay(const struct dacce_dict *dict, const struct dacce_graph *later,
		  const struct dacce_path *path, struct tail_run *runs, size_t n_runs,
		  const uint64_t *frame_of, struct dacce_state *out)
{
	struct dacce_state st;
	size_t run = 0;
	uint64_t frame = 0;
	int err;

	err = start_replay(dict, later, path, &st);
	for (size_t i = path->len - 1; !err && i-- > 0;) {
		if (run < n_runs && runs[run].first == i) {
			frame = frame_of ? frame_of[run] : run;
			if (!frame_of)
				runs[run].saved = (struct dacce_tc_entry){
					.id = st.id,
					.cc_depth = st.cc_depth,
					.top_aux = st.cc_depth ? st.cc[st.cc_depth - 1].aux : 0,
				};
			if (frame_of && runs[run].record >= 0) {
				/* Distinct from the record below, or they would be one. */
				if (st.tc_depth && st.tc[st.tc_depth - 1].frame == frame)
					err = -EILSEQ;
				else
					err = dacce_op_keep_record(&st, frame);
			}
			run++;
		}
		if (!err)
			err = apply_edge(&st, dict, later, path, i, frame);
	}
	if (err || !out) {
		dacce_state_fini(&st);
		return err;
	}
	dacce_state_fini(out);
	*out = st;
	return 0;
}

static bool record_fits(const struct dacce_tc_entry *rec, const struct tail_run *run)
{
	return rec->id == run->saved.id && rec->cc_depth == run->saved.cc_depth &&
	       rec->top_aux == run->saved.top_aux;
}

/*
 * Old records, in order, onto runs with the state they saved; a run that
 * costs something under the old epoch holds one.  Earliest and latest
 * placement must agree, or two runs could hold the same record.
 */
static int place_records(const struct dacce_state *old, struct tail_run *runs, size_t n_runs)
{
	size_t m = old->tc_depth, j = 0;
	int64_t k = (int64_t)n_runs - 1;
	size_t *latest = calloc(m ? m : 1, sizeof(*latest));
	int err = 0;

	if (!latest)
		return -ENOMEM;
	for (int64_t r = (int64_t)m - 1; r >= 0 && !err; r--, k--) {
		while (k >= 0 && !record_fits(&old->tc[r], &runs[k]) && !runs[k].costs_old)
			k--;
		if (k < 0 || !record_fits(&old->tc[r], &runs[k]))
			err = -EILSEQ;
		else
			latest[r] = (size_t)k;
	}
	for (; k >= 0 && !err; k--)
		if (runs[k].costs_old)
			err = -EILSEQ;
	for (size_t r = 0; r < m && !err; r++, j++) {
		while (j < n_runs && !record_fits(&old->tc[r], &runs[j]) && !runs[j].costs_old)
			j++;
		if (j == n_runs || !record_fits(&old->tc[r], &runs[j]))
			err = -EILSEQ;
		else if (j != latest[r])
			err = -EAGAIN; /* alike states: which frame holds it is not known */
		else
			runs[j].record = (int64_t)r;
	}
	for (; j < n_runs && !err; j++)
		if (runs[j].costs_old)
			err = -EILSEQ;
	free(latest);
	return err;
}

/*
 * The new epoch's frame identities per run: old records' frames.  A run
 * that needs a record it does not hold: -EAGAIN, and *keep_free the tail
 * edge that makes it need one.
 */
static int frames_for_new_epoch(const struct dacce_state *old, const struct tail_run *runs,
				size_t n_runs, uint64_t **frame_of, uint32_t *keep_free)
{
	*frame_of = calloc(n_runs ? n_runs : 1, sizeof(**frame_of));
	if (!*frame_of)
		return -ENOMEM;
	for (size_t i = 0; i < n_runs; i++) {
		if (runs[i].record >= 0) {
			(*frame_of)[i] = old->tc[runs[i].record].frame;
		} else if (runs[i].costs_new) {
			*keep_free = runs[i].dear_new;
			return -EAGAIN; /* needs a record, and its frame's slot is not known */
		}
	}
	return 0;
}

int dacce_translate(const struct dacce_dict *from, const struct dacce_dict *to,
		    const struct dacce_graph *later, struct dacce_state *st, uint32_t node,
		    struct dacce_decode_error *err)
{
	struct dacce_snapshot snap;
	struct dacce_path path;
	struct dacce_state next;
	struct tail_run *runs = NULL;
	uint64_t *frame_of = NULL;
	uint32_t keep_free = DACCE_NONE;
	size_t n_runs = 0;
	int ret;

	if (err)
		err->keep_free = DACCE_NONE;
	if (!from || !to || !st || st->epoch != from->epoch)
		return -EINVAL;
	dacce_path_init(&path);
	dacce_state_init(&next, to->epoch);
	snap = dacce_snapshot_of(st, node);
	ret = dacce_decode_append(from, later, &snap, &path, err);
	if (!ret && path.len == 0)
		ret = -EILSEQ;
	if (!ret)
		ret = find_runs(from, to, later, &path, &runs, &n_runs);
	if (!ret)
		ret = replay(from, later, &path, runs, n_runs, NULL, NULL);
	if (!ret)
		ret = place_records(st, runs, n_runs);
	if (!ret)
		ret = frames_for_new_epoch(st, runs, n_runs, &frame_of, &keep_free);
	if (!ret)
		ret = replay(to, later, &path, runs, n_runs, frame_of, &next);
	if (ret) {
		if (err && ret == -EILSEQ && !err->message)
			err->message = "decoded path does not replay under the new epoch";
		if (err && ret == -EAGAIN) {
			err->message = "a frame entered by a free tail call needs a record now";
			err->keep_free = keep_free;
		}
		goto cleanup;
	}
	dacce_state_fini(st);
	*st = next;
	dacce_state_init(&next, 0);
cleanup:
	free(frame_of);
	free(runs);
	dacce_state_fini(&next);
	dacce_path_fini(&path);
	return ret;
}
