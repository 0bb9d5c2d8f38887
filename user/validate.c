// SPDX-License-Identifier: MIT
/* Validation frames of decoded contexts, and the comparison (see validate.h). */
#include "validate.h"

#include <errno.h>
#include <stdlib.h>

void dacce_vframes_fini(struct dacce_vframes *v)
{
	free(v->frames);
	*v = (struct dacce_vframes){ 0 };
}

int dacce_vframes_push(struct dacce_vframes *v, struct dacce_vframe frame)
{
	if (frame.kind == DACCE_VF_OUTSIDE && v->len && v->frames[v->len - 1].kind == DACCE_VF_OUTSIDE)
		return 0;
	if (v->len == v->cap) {
		uint32_t cap = v->cap ? 2 * v->cap : 32;
		struct dacce_vframe *frames = realloc(v->frames, cap * sizeof(*frames));

		if (!frames)
			return -ENOMEM;
		v->frames = frames;
		v->cap = cap;
	}
	v->frames[v->len++] = frame;
	return 0;
}

void dacce_vframes_trim(struct dacce_vframes *v)
{
	while (v->len && v->frames[v->len - 1].kind == DACCE_VF_OUTSIDE)
		v->len--;
}

/* AT node, or OUTSIDE when node is a boundary (the thread was in a library). */
static struct dacce_vframe at(const uint64_t *node_size, uint32_t node)
{
	if (node_size[node] == 0)
		return (struct dacce_vframe){ .kind = DACCE_VF_OUTSIDE };
	return (struct dacce_vframe){ .kind = DACCE_VF_AT, .node = node };
}

int dacce_validate_logical(const struct dacce_graph *graph, const uint64_t *node_size,
			   const struct dacce_resolved *r, struct dacce_vframes *out)
{
	const struct dacce_frame *f = r->path.frames;
	size_t n = r->path.len;
	int err;

	out->len = 0;
	if (n == 0 || f[0].node >= graph->n_nodes)
		return -EINVAL;
	err = dacce_vframes_push(out, r->leaf_outside ? (struct dacce_vframe){ .kind = DACCE_VF_OUTSIDE }
						      : at(node_size, f[0].node));
	for (size_t k = 0; !err && k < n; k++) {
		const struct dacce_edge *e;
		const struct dacce_site *site;

		if (f[k].edge >= graph->n_edges)
			return -EINVAL;
		e = &graph->edges[f[k].edge];
		site = &graph->sites[e->site];
		switch (e->kind) {
		case DACCE_SITE_ROOT_MAIN:
		case DACCE_SITE_ROOT_THREAD:
			dacce_vframes_trim(out);
			return 0; /* what follows a thread's root is its creator's context */
		case DACCE_SITE_ROOT_SIGNAL:
			/* The kernel's signal frame, then the function the signal interrupted. */
			if (k + 1 >= n || f[k + 1].node >= graph->n_nodes)
				return -EINVAL;
			err = dacce_vframes_push(out, (struct dacce_vframe){ .kind = DACCE_VF_OUTSIDE });
			if (!err)
				err = dacce_vframes_push(out, at(node_size, f[k + 1].node));
			break;
		case DACCE_SITE_ROOT_CALLBACK:
			/* Library frames between the callback and the call into the library. */
			err = dacce_vframes_push(out, (struct dacce_vframe){ .kind = DACCE_VF_OUTSIDE });
			break;
		case DACCE_SITE_TAIL_DIRECT:
		case DACCE_SITE_TAIL_INDIRECT:
			break; /* the caller's frame was replaced: no return address for it */
		default:
			err = dacce_vframes_push(out, (struct dacce_vframe){ .kind = DACCE_VF_CALL,
									    .node = e->caller,
									    .site = site->offset });
		}
	}
	/* A context always ends in a root; one that does not is not exact. */
	return err ? err : -EINVAL;
}

static bool same_frame(const struct dacce_vframe *p, const struct dacce_vframe *l)
{
	if (p->kind == DACCE_VF_RETURN_INTO)
		return l->kind == DACCE_VF_CALL && l->node == p->node;
	if (p->kind == DACCE_VF_IN_SITE)
		return l->node == p->node &&
		       (l->kind == DACCE_VF_AT || (l->kind == DACCE_VF_CALL && l->site == p->site));
	if (p->kind != l->kind)
		return false;
	switch (p->kind) {
	case DACCE_VF_AT: return p->node == l->node;
	case DACCE_VF_CALL: return p->node == l->node && p->site == l->site;
	default: return true;
	}
}

bool dacce_vframes_match(const struct dacce_vframes *physical,
			 const struct dacce_vframes *logical, uint32_t *first_difference)
{
	uint32_t n = physical->len < logical->len ? physical->len : logical->len;
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!same_frame(&physical->frames[i], &logical->frames[i]))
			break;
	*first_difference = i;
	return i == physical->len && i == logical->len;
}
