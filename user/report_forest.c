// SPDX-License-Identifier: MIT
/*
 * Labeled forests (the kccf paper's section 3): trees whose children carry
 * distinct labels, grown by joining paths one step at a time.  The calling
 * context tree and the k-calling context forest are both one, and print the
 * same way.
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

struct child_key {
	uint32_t parent;
	const struct dacce_rframe *frame;
};

static uint64_t child_hash(uint32_t parent, const struct dacce_rframe *frame)
{
	return rpt_hash_u64(rpt_label_hash(frame), parent);
}

static bool child_matches(const void *ctx, uint32_t item, const void *key)
{
	const struct rpt_forest *forest = ctx;
	const struct child_key *want = key;
	const struct rpt_forest_node *node = &forest->nodes[item];

	return node->parent == want->parent && rpt_label_compare(node->frame, want->frame) == 0;
}

/* Room for one more node, so appending cannot fail after the index took it. */
static int reserve_node(struct rpt_forest *forest)
{
	size_t capacity;
	struct rpt_forest_node *nodes;

	if (forest->n_nodes >= RPT_NONE - 1)
		return -ENOMEM;
	if (forest->n_nodes < forest->capacity)
		return 0;
	capacity = forest->capacity ? forest->capacity * 2 : 256;
	nodes = realloc(forest->nodes, capacity * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	forest->nodes = nodes;
	forest->capacity = capacity;
	return 0;
}

static uint32_t append_node(struct rpt_forest *forest, uint32_t parent,
			    const struct dacce_rframe *frame)
{
	uint32_t id = (uint32_t)forest->n_nodes++;

	forest->nodes[id] = (struct rpt_forest_node){
		.frame = frame,
		.parent = parent,
		.first_child = RPT_NONE,
		.next_sibling = RPT_NONE,
	};
	if (parent != RPT_NONE) {
		forest->nodes[id].next_sibling = forest->nodes[parent].first_child;
		forest->nodes[parent].first_child = id;
	}
	return id;
}

int rpt_forest_init(struct rpt_forest *forest)
{
	int err;

	*forest = (struct rpt_forest){ 0 };
	err = reserve_node(forest);
	if (err)
		return err;
	append_node(forest, RPT_NONE, NULL);
	return 0;
}

void rpt_forest_free(struct rpt_forest *forest)
{
	if (!forest)
		return;
	free(forest->nodes);
	rpt_index_free(&forest->children);
	*forest = (struct rpt_forest){ 0 };
}

uint32_t rpt_forest_find_child(const struct rpt_forest *forest, uint32_t parent,
			       const struct dacce_rframe *frame)
{
	struct child_key key = { .parent = parent, .frame = frame };

	return rpt_index_find(&forest->children, child_hash(parent, frame), &key, child_matches,
			      forest);
}

int rpt_forest_child(struct rpt_forest *forest, uint32_t parent,
		     const struct dacce_rframe *frame, uint32_t *child)
{
	uint32_t found = rpt_forest_find_child(forest, parent, frame);
	int err;

	if (found != RPT_NONE) {
		*child = found;
		return 0;
	}
	err = reserve_node(forest);
	if (!err)
		err = rpt_index_add(&forest->children, child_hash(parent, frame),
				    (uint32_t)forest->n_nodes);
	if (err)
		return err;
	*child = append_node(forest, parent, frame);
	return 0;
}

/* ---------------------------------------------------------------- printing */

/* A line to print: a node, or (hidden > 0) the note for hidden siblings. */
struct print_item {
	uint32_t node;
	uint32_t depth;
	uint32_t hidden;
};

struct printer {
	FILE *out;
	const struct rpt_forest *forest;
	const struct rpt_forest_style *style;
	struct print_item *stack;
	size_t n_stack;
	uint32_t *children; /* scratch: one node's children */
};

/* Deeper lines keep this indentation and say their depth: recursion can be 100,000 deep. */
#define MAX_INDENTED_DEPTH 64

static int compare_counts(uint64_t a, uint64_t b)
{
	return (a < b) - (a > b);
}

/* Highest first; labels break ties (siblings never share one). */
static int compare_siblings(const void *pa, const void *pb, void *ctx)
{
	const struct printer *p = ctx;
	const struct rpt_forest_node *a = &p->forest->nodes[*(const uint32_t *)pa];
	const struct rpt_forest_node *b = &p->forest->nodes[*(const uint32_t *)pb];
	int diff;

	if (p->style->by_self) {
		diff = compare_counts(a->self, b->self);
		if (!diff)
			diff = compare_counts(a->total, b->total);
	} else {
		diff = compare_counts(a->total, b->total);
		if (!diff)
			diff = compare_counts(a->self, b->self);
	}
	return diff ? diff : rpt_label_compare(a->frame, b->frame);
}

static bool is_hidden(const struct printer *p, const struct rpt_forest_node *node)
{
	const struct rpt_forest_style *style = p->style;

	if (style->min_percent <= 0)
		return false;
	return (double)node->total * 100.0 < style->min_percent * (double)style->percent_base;
}

/* Pushes a note for hidden children of node, then the others, the first to print on top. */
static void push_children(struct printer *p, uint32_t node, uint32_t depth)
{
	const struct rpt_forest_node *nodes = p->forest->nodes;
	uint32_t n = 0, hidden = 0;

	for (uint32_t c = nodes[node].first_child; c != RPT_NONE; c = nodes[c].next_sibling) {
		if (is_hidden(p, &nodes[c]))
			hidden++;
		else
			p->children[n++] = c;
	}
	qsort_r(p->children, n, sizeof(*p->children), compare_siblings, p);
	if (hidden)
		p->stack[p->n_stack++] = (struct print_item){ .depth = depth, .hidden = hidden };
	while (n)
		p->stack[p->n_stack++] = (struct print_item){ .node = p->children[--n],
							      .depth = depth };
}

static void print_indent(const struct printer *p, uint32_t depth)
{
	uint32_t indent = depth < MAX_INDENTED_DEPTH ? depth : MAX_INDENTED_DEPTH;

	fprintf(p->out, "%*s", (int)(2 * indent), "");
	if (depth > MAX_INDENTED_DEPTH)
		fprintf(p->out, "[depth %" PRIu32 "] ", depth);
	if (depth)
		fputs(p->style->child_prefix, p->out);
}

static void print_hidden(const struct printer *p, const struct print_item *item)
{
	fprintf(p->out, "%35s", ""); /* under the frame column */
	print_indent(p, item->depth);
	fprintf(p->out, "[%" PRIu32 " more below %.2f%%]\n", item->hidden, p->style->min_percent);
}

static void print_node(const struct printer *p, const struct print_item *item)
{
	const struct rpt_forest_node *node = &p->forest->nodes[item->node];
	uint64_t base = p->style->percent_base;
	char total[RPT_PERCENT_LEN], self[RPT_PERCENT_LEN];

	rpt_format_percent(total, node->total, base);
	rpt_format_percent(self, node->self, base);
	fprintf(p->out, "%6s%% %8" PRIu64 " %6s%% %8" PRIu64 "  ", total, node->total, self,
		node->self);
	print_indent(p, item->depth);
	rpt_print_label(p->out, node->frame);
	fputc('\n', p->out);
}

int rpt_forest_print(FILE *out, const struct rpt_forest *forest,
		     const struct rpt_forest_style *style)
{
	/* Every node is pushed once and each parent adds at most one note. */
	struct printer p = {
		.out = out,
		.forest = forest,
		.style = style,
		.stack = calloc(2 * forest->n_nodes, sizeof(*p.stack)),
		.children = calloc(forest->n_nodes, sizeof(*p.children)),
	};
	int err = -ENOMEM;

	if (!p.stack || !p.children)
		goto cleanup;
	fprintf(out, "%7s %8s %7s %8s  %s\n", "total%", "total", "self%", "self", "frame");
	push_children(&p, 0, 0);
	while (p.n_stack) {
		struct print_item item = p.stack[--p.n_stack];

		if (item.hidden) {
			print_hidden(&p, &item);
			continue;
		}
		print_node(&p, &item);
		push_children(&p, item.node, item.depth + 1);
	}
	err = 0;
cleanup:
	free(p.stack);
	free(p.children);
	return err;
}
