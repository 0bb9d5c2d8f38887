// SPDX-License-Identifier: MIT
#include "returns.h"

#include <errno.h>
#include <stdbool.h>

#include "ops.h"
#include "rt_state.h"

/* The tail record of the frame whose return-address slot is slot, or NULL. */
static struct dacce_rt_tail_record *tail_record(const struct dacce_tls *tls, uintptr_t slot)
{
	for (struct dacce_rt_tail_record *r = tls->tc_top; r > tls->tc_base; r--)
		if (r[-1].frame == slot)
			return &r[-1];
	return NULL;
}

/* Whether a return through value goes through a frame's tail record: the stub, or a leaf tail jump's return point. */
static bool is_tail_return(uintptr_t value)
{
	uint32_t edge;

	return value == rt.tail_stub || dacce_hashmap_get(&rt.tail_returns, value, &edge) == 0;
}

/* The call site whose return point value is: 0 and the site's own return address. */
static int site_return(uintptr_t value, uint32_t *edge, uintptr_t *native)
{
	const struct rt_site *site;
	uint32_t e;

	if (dacce_hashmap_get(&rt.return_edge, value, &e) != 0 || e >= rt.graph->n_edges)
		return -ENOENT;
	site = &rt.sites[rt.graph->edges[e].site];
	*edge = e;
	*native = site->scan.addr + site->scan.len;
	return 0;
}

int rt_return_native(const struct dacce_tls *tls, uintptr_t value, uintptr_t slot,
		     uintptr_t *native)
{
	const struct dacce_rt_tail_record *r;
	uint32_t edge;

	if (!dacce_codecache_contains(&rt.cache, value))
		return 0;
	if (is_tail_return(value)) {
		r = tail_record(tls, slot);
		if (!r)
			return -ENOENT;
		value = r->return_to; /* the frame's caller: itself reached through a trampoline, or not */
		if (!dacce_codecache_contains(&rt.cache, value)) {
			*native = value;
			return 1;
		}
	}
	if (site_return(value, &edge, native) != 0)
		return -ENOENT;
	return 1;
}

uint32_t rt_return_caller(const struct dacce_tls *tls, uintptr_t value, uintptr_t slot)
{
	const struct dacce_rt_tail_record *r;
	uintptr_t native;
	uint32_t edge;

	if (is_tail_return(value)) {
		r = tail_record(tls, slot);
		value = r ? r->return_to : 0;
	}
	if (site_return(value, &edge, &native) != 0)
		return DACCE_NONE;
	return rt.graph->edges[edge].caller;
}

/* The "after" half of the current epoch's operation for edge (ops.h). */
static int apply_after(struct dacce_tls *tls, uint32_t edge)
{
	struct dacce_rt_op op;
	struct dacce_cc_entry *top;
	int err = dacce_rt_op_for_edge(rt.dict, rt.graph, edge, &op);

	if (err)
		return err;
	switch (op.kind) {
	case DACCE_RT_OP_NONE:
		return 0;
	case DACCE_RT_OP_ADD:
		tls->id -= op.en;
		return 0;
	case DACCE_RT_OP_PUSH:
		/*
		 * The entry must be this edge's: another one on top (a signal
		 * handler's nested root, left by a throw out of the handler) means
		 * the context no longer matches the frames.
		 */
		if (tls->cc_top <= tls->cc_base || tls->cc_top[-1].edge != edge)
			return -EPROTO;
		top = tls->cc_top - 1;
		tls->id = top->id;
		if (top->aux > 0)
			top->aux--;
		else
			tls->cc_top = top;
		return 0;
	}
	return -EPROTO;
}

int rt_return_apply(struct dacce_tls *tls, uintptr_t value, uintptr_t slot)
{
	struct dacce_rt_tail_record *r;
	uintptr_t native;
	uint32_t edge;

	if (is_tail_return(value)) {
		/* As the stub does: records above the frame's belong to frames already gone. */
		r = tail_record(tls, slot);
		if (!r)
			return -EPROTO;
		tls->tc_top = r;
		tls->id = r->id;
		tls->cc_top = r->cc_top;
		if (tls->cc_top > tls->cc_base)
			tls->cc_top[-1].aux = r->top_aux;
		value = r->return_to;
	}
	if (!dacce_codecache_contains(&rt.cache, value))
		return 0;
	if (site_return(value, &edge, &native) != 0)
		return -EPROTO;
	return apply_after(tls, edge);
}
