// SPDX-License-Identifier: MIT
/*
 * `dacce report --format json`: the top report as one JSON object, its keys
 * documented with dacce_report_json() in report.h.  Strings are escaped per
 * RFC 8259 and made valid UTF-8, so any JSON parser reads the output.
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

/* JSON's two-character escape for c, or NULL. */
static const char *short_escape(unsigned char c)
{
	switch (c) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\n': return "\\n";
	case '\r': return "\\r";
	case '\t': return "\\t";
	default: return NULL;
	}
}

static void print_string(FILE *out, const char *s)
{
	const unsigned char *at = (const unsigned char *)s;

	fputc('"', out);
	while (*at) {
		size_t len = rpt_utf8_sequence(at);
		const char *escape = short_escape(*at);

		if (!len) {
			fputs("\\ufffd", out); /* not UTF-8: the replacement character */
			len = 1;
		} else if (escape) {
			fputs(escape, out);
		} else if (*at < 0x20 || *at == 0x7f) {
			fprintf(out, "\\u%04x", *at);
		} else {
			fwrite(at, 1, len, out);
		}
		at += len;
	}
	fputc('"', out);
}

static void print_key(FILE *out, int indent, const char *key)
{
	fprintf(out, "%*s\"%s\": ", indent, "", key);
}

static void print_frame(FILE *out, int indent, const struct dacce_rframe *frame, bool last)
{
	fprintf(out, "%*s{\"function\": ", indent, "");
	print_string(out, frame->function);
	fputs(", \"module\": ", out);
	print_string(out, frame->module);
	fputs(", \"build_id\": ", out);
	print_string(out, frame->build_id);
	fprintf(out, ", \"address\": \"0x%" PRIx64 "\", \"file\": ", frame->address);
	if (frame->file)
		print_string(out, frame->file);
	else
		fputs("null", out);
	if (frame->line)
		fprintf(out, ", \"line\": %" PRIu32, frame->line);
	else
		fputs(", \"line\": null", out);
	fprintf(out, ", \"inlined\": %s, \"kind\": \"%s\"}%s\n", frame->inlined ? "true" : "false",
		rpt_kind_name(frame->kind), last ? "" : ",");
}

static void print_context(FILE *out, int indent, size_t rank, const struct rpt_context *context,
			  uint64_t base, bool last)
{
	char percent[RPT_PERCENT_LEN];

	rpt_format_percent(percent, context->count, base);
	fprintf(out,
		"%*s{\"rank\": %zu, \"samples\": %" PRIu64 ", \"percent\": %s, \"tid\": %" PRIu32
		", \"comm\": ",
		indent, "", rank, context->count, percent, context->tid);
	print_string(out, context->comm);
	fputs(",\n", out);
	print_key(out, indent + 2, "frames");
	if (!context->n_frames) {
		fprintf(out, "[]}%s\n", last ? "" : ",");
		return;
	}
	fputs("[\n", out);
	for (uint32_t i = context->n_frames; i-- > 0;)
		print_frame(out, indent + 4, context->frames[i], i == 0);
	fprintf(out, "%*s]}%s\n", indent + 2, "", last ? "" : ",");
}

/* "contexts": [...] of thread tid (all when !by_thread), then "contexts_not_shown". */
static int print_contexts(FILE *out, int indent, const struct rpt_context *contexts,
			  size_t n_contexts, uint64_t base, const struct dacce_report_options *opts,
			  uint32_t tid)
{
	size_t *chosen = calloc(n_contexts ? n_contexts : 1, sizeof(*chosen));
	size_t n_chosen = 0, not_shown = 0;

	if (!chosen)
		return -ENOMEM;
	for (size_t i = 0; i < n_contexts; i++) {
		if (opts->by_thread && contexts[i].tid != tid)
			continue;
		if (opts->limit && n_chosen == opts->limit)
			not_shown++;
		else
			chosen[n_chosen++] = i;
	}
	print_key(out, indent, "contexts");
	if (n_chosen) {
		fputs("[\n", out);
		for (size_t i = 0; i < n_chosen; i++)
			print_context(out, indent + 2, i + 1, &contexts[chosen[i]], base,
				      i + 1 == n_chosen);
		fprintf(out, "%*s],\n", indent, "");
	} else {
		fputs("[],\n", out);
	}
	print_key(out, indent, "contexts_not_shown");
	fprintf(out, "%zu\n", not_shown);
	free(chosen);
	return 0;
}

static int print_threads(FILE *out, const struct rpt_context *contexts, size_t n_contexts,
			 uint64_t base, const struct dacce_report_options *opts)
{
	struct rpt_thread *threads = NULL;
	size_t n_threads = 0;
	int err = rpt_threads_collect(contexts, n_contexts, &threads, &n_threads);

	if (err)
		return err;
	print_key(out, 2, "threads");
	fputs(n_threads ? "[\n" : "[]\n", out);
	for (size_t i = 0; !err && i < n_threads; i++) {
		char percent[RPT_PERCENT_LEN];

		rpt_format_percent(percent, threads[i].count, base);
		fprintf(out, "    {\"tid\": %" PRIu32 ", \"comm\": ", threads[i].tid);
		print_string(out, threads[i].comm);
		fprintf(out, ", \"samples\": %" PRIu64 ", \"percent\": %s,\n", threads[i].count,
			percent);
		err = print_contexts(out, 6, contexts, n_contexts, base, opts, threads[i].tid);
		fprintf(out, "    }%s\n", i + 1 == n_threads ? "" : ",");
	}
	if (n_threads)
		fputs("  ]\n", out);
	free(threads);
	return err;
}

static void print_header(FILE *out, const struct dacce_rprofile *profile)
{
	fputs("{\n  \"format\": \"dacce-top\",\n  \"version\": 1,\n", out);
	print_key(out, 2, "event");
	print_string(out, rpt_str(profile->event));
	fprintf(out, ",\n  \"period\": %" PRIu64 ",\n", profile->period);
	print_key(out, 2, "period_unit");
	print_string(out, rpt_str(profile->period_unit));
	fprintf(out,
		",\n  \"total_samples\": %" PRIu64 ",\n  \"context_samples\": %" PRIu64
		",\n  \"lost_samples\": %" PRIu64 ",\n  \"duration_ns\": %" PRIu64 ",\n",
		profile->total_samples, rpt_context_samples(profile), profile->lost_samples,
		profile->duration_ns);
}

int dacce_report_json(FILE *out, const struct dacce_rprofile *profile,
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

	print_header(out, profile);
	if (opts->by_thread)
		err = print_threads(out, contexts, n_contexts, base, opts);
	else
		err = print_contexts(out, 2, contexts, n_contexts, base, opts, 0);
	fputs("}\n", out);
	if (!err)
		err = rpt_flush(out);
cleanup:
	free(contexts);
	return err;
}
