// SPDX-License-Identifier: MIT
/*
 * `dacce report --format folded`: "frame;frame;... count" lines, outermost
 * frame first, as flamegraph.pl, speedscope and inferno read them.  Readers
 * split frames at ';' and take the number after the last space as the count,
 * so names keep their spaces but never a ';' or a line break.
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A growing text buffer holding every line back to back. */
struct text {
	char *bytes;
	size_t len;
	size_t capacity;
};

/* One stack's line in the text (without its count). */
struct folded_line {
	size_t start;
	size_t len;
	uint64_t count;
};

static int reserve(struct text *text, size_t more)
{
	size_t capacity = text->capacity ? text->capacity : 4096;
	char *bytes;

	if (text->len + more <= text->capacity)
		return 0;
	while (capacity < text->len + more)
		capacity *= 2;
	bytes = realloc(text->bytes, capacity);
	if (!bytes)
		return -ENOMEM;
	text->bytes = bytes;
	text->capacity = capacity;
	return 0;
}

/* Appends s with ';' turned into ':' and control characters into '?'. */
static int append_clean(struct text *text, const char *s)
{
	size_t len = strlen(s);
	int err = reserve(text, len);

	if (err)
		return err;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == ';')
			c = ':';
		else if (c < 0x20 || c == 0x7f)
			c = '?';
		text->bytes[text->len++] = (char)c;
	}
	return 0;
}

static int append_separator(struct text *text)
{
	int err = reserve(text, 1);

	if (!err)
		text->bytes[text->len++] = ';';
	return err;
}

static int append_frame(struct text *text, const struct dacce_rframe *frame)
{
	const char *name = rpt_frame_name(frame);
	int err = append_clean(text, name[0] ? name : "[unknown]");

	/* flamegraph.pl's annotation for inlined frames (it colours them apart). */
	if (!err && frame->inlined && !rpt_frame_is_truncated(frame))
		err = append_clean(text, "_[i]");
	return err;
}

/* stackcollapse-perf's thread frame: "comm-tid". */
static int append_thread(struct text *text, const struct dacce_rstack *stack)
{
	const char *comm = rpt_str(stack->comm);
	char tid[16];
	int err = append_clean(text, comm[0] ? comm : "[unknown]");

	snprintf(tid, sizeof(tid), "-%" PRIu32, stack->tid);
	if (!err && stack->tid)
		err = append_clean(text, tid);
	return err;
}

static int append_stack(struct text *text, const struct dacce_rstack *stack, bool thread_prefix)
{
	int err = 0;

	if (thread_prefix)
		err = append_thread(text, stack);
	for (uint32_t i = 0; !err && i < stack->n_frames; i++) {
		if (i || thread_prefix)
			err = append_separator(text);
		if (!err)
			err = append_frame(text, stack->frames[i]);
	}
	return err;
}

static int compare_lines(const void *pa, const void *pb, void *ctx)
{
	const struct folded_line *a = pa, *b = pb;
	const char *bytes = ctx;
	size_t n = a->len < b->len ? a->len : b->len;
	int diff = memcmp(bytes + a->start, bytes + b->start, n);

	if (diff)
		return diff;
	return (a->len > b->len) - (a->len < b->len);
}

static bool same_line(const char *bytes, const struct folded_line *a, const struct folded_line *b)
{
	return a->len == b->len && memcmp(bytes + a->start, bytes + b->start, a->len) == 0;
}

/* Lines sorted, equal ones summed: different frames may print the same. */
static void print_lines(FILE *out, const struct text *text, struct folded_line *lines, size_t n)
{
	qsort_r(lines, n, sizeof(*lines), compare_lines, text->bytes);
	for (size_t i = 0; i < n;) {
		uint64_t count = lines[i].count;
		size_t j = i + 1;

		while (j < n && same_line(text->bytes, &lines[i], &lines[j]))
			count = rpt_add_sat(count, lines[j++].count);
		fwrite(text->bytes + lines[i].start, 1, lines[i].len, out);
		fprintf(out, " %" PRIu64 "\n", count);
		i = j;
	}
}

int dacce_report_folded(FILE *out, const struct dacce_rprofile *profile,
			const struct dacce_report_options *opts)
{
	struct dacce_report_options defaults;
	struct text text = { 0 };
	struct folded_line *lines = NULL;
	size_t n_lines = 0;
	int err = rpt_check_args(out, profile);

	if (err)
		return err;
	opts = rpt_options(opts, &defaults);
	lines = calloc(profile->n_stacks ? profile->n_stacks : 1, sizeof(*lines));
	err = lines ? 0 : -ENOMEM;
	for (size_t i = 0; !err && i < profile->n_stacks; i++) {
		const struct dacce_rstack *stack = &profile->stacks[i];
		size_t start = text.len;

		/* A line needs a frame; samples without one are in no flame graph. */
		if (!stack->count || (!stack->n_frames && !opts->thread_prefix))
			continue;
		err = append_stack(&text, stack, opts->thread_prefix);
		if (!err)
			lines[n_lines++] = (struct folded_line){ .start = start,
								 .len = text.len - start,
								 .count = stack->count };
	}
	if (err)
		goto cleanup;
	print_lines(out, &text, lines, n_lines);
	err = rpt_flush(out);
cleanup:
	free(lines);
	free(text.bytes);
	return err;
}
