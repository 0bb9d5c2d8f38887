// SPDX-License-Identifier: MIT
/*
 * `dacce report` (default format): the hottest contexts, each as its full
 * call path innermost frame first, the way gdb's bt and perf report --stdio
 * show a call chain.
 */
#include "report_internal.h"

#include <inttypes.h>
#include <stdlib.h>

/* "#N  ADDRESS function (module) at file:line [markers]"; inlined frames share the
 * address of the frame they were inlined into, so like gdb they show none. */
static void print_frame(FILE *out, uint32_t number, const struct dacce_rframe *frame)
{
	fprintf(out, "  #%-3" PRIu32, number);
	if (rpt_frame_is_truncated(frame)) {
		fputs("[truncated]: frames are missing here\n", out);
		return;
	}
	if (frame->inlined)
		fprintf(out, "%18s ", "");
	else
		fprintf(out, "0x%016" PRIx64 " ", frame->address);
	fprintf(out, "%s (%s)", frame->function, rpt_basename(frame->module));
	if (frame->file) {
		fprintf(out, " at %s", frame->file);
		if (frame->line)
			fprintf(out, ":%" PRIu32, frame->line);
	}
	rpt_print_markers(out, frame);
	fputc('\n', out);
}

static void print_thread_name(FILE *out, uint32_t tid, const char *comm)
{
	fprintf(out, "thread %" PRIu32, tid);
	if (comm[0])
		fprintf(out, " (%s)", comm);
}

static void print_context(FILE *out, size_t rank, const struct rpt_context *context,
			  uint64_t base, bool show_thread)
{
	char percent[RPT_PERCENT_LEN];

	rpt_format_percent(percent, context->count, base);
	fprintf(out, "context %zu: %s%% (%" PRIu64 " sample%s)", rank, percent, context->count,
		context->count == 1 ? "" : "s");
	if (show_thread && context->tid) {
		fputs(", ", out);
		print_thread_name(out, context->tid, context->comm);
	}
	fputc('\n', out);
	if (!context->n_frames)
		fputs("  (no frames)\n", out);
	for (uint32_t i = context->n_frames; i-- > 0;)
		print_frame(out, context->n_frames - 1 - i, context->frames[i]);
	fputc('\n', out);
}

/* Prints the contexts of thread tid (all when !by_thread), at most limit. */
static void print_contexts(FILE *out, const struct rpt_context *contexts, size_t n_contexts,
			   uint64_t base, const struct dacce_report_options *opts, uint32_t tid)
{
	size_t shown = 0, not_shown = 0;
	uint64_t not_shown_samples = 0;

	for (size_t i = 0; i < n_contexts; i++) {
		if (opts->by_thread && contexts[i].tid != tid)
			continue;
		if (opts->limit && shown == opts->limit) {
			not_shown++;
			not_shown_samples = rpt_add_sat(not_shown_samples, contexts[i].count);
			continue;
		}
		print_context(out, ++shown, &contexts[i], base, !opts->by_thread);
	}
	if (not_shown) {
		char percent[RPT_PERCENT_LEN];

		rpt_format_percent(percent, not_shown_samples, base);
		fprintf(out, "# %zu more context%s not shown: %s%% (%" PRIu64 " sample%s)\n\n",
			not_shown, not_shown == 1 ? "" : "s", percent, not_shown_samples,
			not_shown_samples == 1 ? "" : "s");
	}
}

static int print_by_thread(FILE *out, const struct rpt_context *contexts, size_t n_contexts,
			   uint64_t base, const struct dacce_report_options *opts)
{
	struct rpt_thread *threads = NULL;
	size_t n_threads = 0;
	int err = rpt_threads_collect(contexts, n_contexts, &threads, &n_threads);

	if (err)
		return err;
	for (size_t i = 0; i < n_threads; i++) {
		char percent[RPT_PERCENT_LEN];

		rpt_format_percent(percent, threads[i].count, base);
		fputs("== ", out);
		print_thread_name(out, threads[i].tid, threads[i].comm);
		fprintf(out, ": %s%% (%" PRIu64 " sample%s), %zu context%s\n\n", percent,
			threads[i].count, threads[i].count == 1 ? "" : "s", threads[i].n_contexts,
			threads[i].n_contexts == 1 ? "" : "s");
		print_contexts(out, contexts, n_contexts, base, opts, threads[i].tid);
	}
	free(threads);
	return 0;
}

int dacce_report_top(FILE *out, const struct dacce_rprofile *profile,
		     const struct dacce_report_options *opts)
{
	struct dacce_report_options defaults;
	struct rpt_context *contexts = NULL;
	size_t n_contexts = 0;
	uint64_t base;
	int err = rpt_check_args(out, profile);

	if (err)
		return err;
	opts = rpt_options(opts, &defaults);
	err = rpt_contexts_collect(profile, opts->by_thread, &contexts, &n_contexts);
	if (err)
		goto cleanup;
	base = rpt_percent_base(profile);

	fprintf(out, "# top contexts: %zu distinct, most samples first, innermost frame first\n",
		n_contexts);
	rpt_print_summary(out, profile);
	fputc('\n', out);
	if (!n_contexts)
		fputs("(no samples with a context)\n", out);
	if (opts->by_thread)
		err = print_by_thread(out, contexts, n_contexts, base, opts);
	else
		print_contexts(out, contexts, n_contexts, base, opts, 0);
	if (!err)
		err = rpt_flush(out);
cleanup:
	free(contexts);
	return err;
}
