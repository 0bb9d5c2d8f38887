// SPDX-License-Identifier: MIT
/*
 * `dacce report` and `dacce decode`: read a capture, resolve its samples
 * into exact contexts, and print them in the format asked for.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "dacce_events.h"
#include "launch_util.h"
#include "model.h"
#include "profile_build.h"
#include "report.h"
#include "store.h"
#include "validate.h"

struct report_opts {
	const char *input, *output;
	enum dacce_report_format format;
	struct dacce_report_options report;
	struct dacce_profile_filter filter;
	bool header_only, no_header;
	bool validate;
	uint32_t show_mismatches;
};

static void report_usage(FILE *out)
{
	fprintf(out,
		"usage: dacce report [options]\n"
		"  -i, --input FILE      capture to read (default dacce.db)\n"
		"  -f, --format FORMAT   top (default), cct, kccf, folded, pprof, json\n"
		"  -o, --output FILE     write there instead of stdout (pprof: default dacce.pb.gz)\n"
		"  -n, --limit N         top/json: contexts shown (default 20; 0: all)\n"
		"  -T, --threads         top/json: one section per thread\n"
		"  -k K                  kccf: calls kept above each function (default %d)\n"
		"      --min-percent P   cct/kccf: hide nodes below P%% of the samples\n"
		"      --thread-prefix   folded: each stack starts with its thread\n"
		"  -p, --pid PID         only this process\n"
		"  -t, --tid TID         only this thread\n"
		"      --stats           only the capture's summary: samples, epochs\n"
		"      --unresolved[=N]  first list (up to N, default 100) samples without an exact\n"
		"                        context, with why and the raw context\n"
		"      --no-header       top: no summary before the contexts\n"
		"      --validate[=N]    instead of a report, compare each sample's decoded context\n"
		"                        with its stack copy unwound (a capture made with dacce\n"
		"                        launch --validate); show up to N mismatches (default 10);\n"
		"                        exit status 1 when any context is wrong\n",
		DACCE_REPORT_DEFAULT_K);
}

static int parse_report(int argc, char **argv, struct report_opts *o)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "limit", required_argument, NULL, 'n' },
		{ "threads", no_argument, NULL, 'T' },
		{ "min-percent", required_argument, NULL, 'M' },
		{ "thread-prefix", no_argument, NULL, 'P' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "stats", no_argument, NULL, 'S' },
		{ "no-header", no_argument, NULL, 'H' },
		{ "unresolved", optional_argument, NULL, 'U' },
		{ "validate", optional_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->input = "dacce.db";
	o->format = DACCE_REPORT_TOP;
	dacce_report_options_init(&o->report);
	o->report.limit = 20;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:f:o:n:Tk:p:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o->input = optarg; break;
		case 'o': o->output = optarg; break;
		case 'f':
			if (dacce_report_format_parse(optarg, &o->format)) {
				dacce_err("unknown format '%s': want top, cct, kccf, folded, pprof or json",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'n':
			if (dacce_parse_u64(optarg, 0, SIZE_MAX, &v)) {
				dacce_err("bad limit '%s'", optarg);
				return -EINVAL;
			}
			o->report.limit = (size_t)v;
			break;
		case 'T': o->report.by_thread = true; break;
		case 'k':
			if (dacce_parse_u64(optarg, 1, 1000, &v)) {
				dacce_err("bad k '%s': want 1..1000", optarg);
				return -EINVAL;
			}
			o->report.k = (unsigned)v;
			break;
		case 'M': {
			char *end;

			o->report.min_percent = strtod(optarg, &end);
			if (*end || o->report.min_percent < 0 || o->report.min_percent > 100) {
				dacce_err("bad percentage '%s'", optarg);
				return -EINVAL;
			}
			break;
		}
		case 'P': o->report.thread_prefix = true; break;
		case 'p':
		case 't':
			if (dacce_parse_u64(optarg, 1, UINT32_MAX, &v)) {
				dacce_err("bad %s '%s'", c == 'p' ? "pid" : "tid", optarg);
				return -EINVAL;
			}
			if (c == 'p')
				o->filter.pid = (uint32_t)v;
			else
				o->filter.tid = (uint32_t)v;
			break;
		case 'S': o->header_only = true; break;
		case 'H': o->no_header = true; break;
		case 'U':
			o->filter.explain = stdout;
			o->filter.explain_max = 100;
			if (optarg && dacce_parse_u64(optarg, 1, UINT64_MAX, &o->filter.explain_max)) {
				dacce_err("bad count '%s'", optarg);
				return -EINVAL;
			}
			break;
		case 'V':
			o->validate = true;
			o->show_mismatches = 10;
			if (optarg && dacce_parse_u64(optarg, 0, UINT32_MAX, &v)) {
				dacce_err("bad count '%s'", optarg);
				return -EINVAL;
			}
			if (optarg)
				o->show_mismatches = (uint32_t)v;
			break;
		case 'h': report_usage(stdout); return 1;
		default: report_usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc) {
		dacce_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (o->format == DACCE_REPORT_PPROF && !o->output)
		o->output = "dacce.pb.gz";
	return 0;
}

/* ------------------------------------------------------------------ the summary */

static void print_epochs(FILE *out, const struct dacce_model_proc *p)
{
	uint64_t pause = 0;

	fprintf(out, "# process %u (%s): %u nodes, %u edges, %zu epochs\n", p->pid,
		p->exe[0] ? p->exe : "?", p->graph->n_nodes, p->graph->n_edges, p->n_epochs);
	if (p->graph_error)
		fprintf(out, "#   warning: %s: contexts using them will not decode\n", p->graph_error);
	if (!p->n_epochs)
		return;
	fprintf(out, "#   %6s %20s %8s %8s %10s  %s\n", "epoch", "maxID", "nodes", "edges",
		"pause(us)", "by");
	for (size_t i = 0; i < p->n_epochs; i++) {
		const struct dacce_model_epoch *e = &p->epochs[i];

		fprintf(out, "#   %6" PRIu64 " %20" PRIu64 " %8u %8u %10.1f  %s%s\n", e->epoch,
			e->max_id, e->n_nodes, e->n_edges, (double)e->pause_ns / 1e3, e->driver,
			e->blob ? "" : " (dictionary missing)");
		pause += e->pause_ns;
	}
	fprintf(out, "#   re-encoding paused threads %.1f us in all\n", (double)pause / 1e3);
}

/*
 * The paper's rates for a process image: calls/s and ccStack pushes/s from the
 * counts its samples carry (dacce launch --count-calls; each thread's count between
 * its first and last sample, over the image's sampled time), and the mean
 * ccStack depth at the samples.
 */
static void print_rates(FILE *out, struct dacce_store *store, const struct dacce_model_proc *p)
{
	sqlite3_stmt *stmt = dacce_store_prepare(
		store, "WITH t AS (SELECT max(calls) - min(calls) AS calls, "
		       "max(pushes) - min(pushes) AS pushes FROM samples "
		       "WHERE proc = ?1 AND calls > 0 GROUP BY tid) "
		       "SELECT (SELECT sum(calls) FROM t), (SELECT sum(pushes) FROM t), "
		       "(SELECT max(time_ns) - min(time_ns) FROM samples WHERE proc = ?1 AND calls > 0), "
		       "(SELECT avg(depth) FROM samples WHERE proc = ?1 AND ctx_flags & 1)");
	double span;

	if (!stmt)
		return;
	sqlite3_bind_int64(stmt, 1, p->id);
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		span = (double)sqlite3_column_int64(stmt, 2) / 1e9;
		fprintf(out, "#   mean ccStack depth at samples %.2f", sqlite3_column_double(stmt, 3));
		if (span > 0)
			fprintf(out, "; calls/s %.0f, ccStack pushes/s %.0f (counted over %.2f s)",
				(double)sqlite3_column_int64(stmt, 0) / span,
				(double)sqlite3_column_int64(stmt, 1) / span, span);
		else
			fprintf(out, "; calls/s and ccStack pushes/s not counted (dacce launch --count-calls)");
		fputc('\n', out);
	}
	sqlite3_finalize(stmt);
}

static void print_header(FILE *out, struct dacce_store *store, const struct dacce_model *model,
			 const struct dacce_profile_result *res)
{
	const struct dacce_rprofile *p = &res->profile;
	char *command = dacce_store_get_meta(store, "command");
	uint64_t total = p->total_samples;

	fprintf(out, "# dacce capture of: %s\n", command ? command : "?");
	fprintf(out, "# event %s", p->event[0] ? p->event : "?");
	if (p->period)
		fprintf(out, ", period %" PRIu64 " %s", p->period, p->period_unit);
	fprintf(out, "; %" PRIu64 " samples, %" PRIu64 " lost; %.3f s\n", total, p->lost_samples,
		(double)p->duration_ns / 1e9);
	fprintf(out, "# contexts:");
	for (int s = 0; s < DACCE_RESOLVE_STATUS_COUNT; s++)
		if (res->by_status[s] || s == DACCE_RESOLVED)
			fprintf(out, "%s %s %" PRIu64 " (%.2f%%)", s ? "," : "",
				dacce_resolve_status_name(s), res->by_status[s],
				total ? 100.0 * (double)res->by_status[s] / (double)total : 0.0);
	fputc('\n', out);
	for (size_t i = 0; i < model->n_procs; i++)
		if (model->procs[i].runtime) {
			print_epochs(out, &model->procs[i]);
			print_rates(out, store, &model->procs[i]);
		}
	fputc('\n', out);
	free(command);
}

/* `dacce report --validate`: 0 when no context was wrong, 1 otherwise. */
static int validate(const struct report_opts *o, struct dacce_model *model)
{
	struct dacce_validate_options opts = { .pid = o->filter.pid, .tid = o->filter.tid,
					       .show_mismatches = o->show_mismatches };
	struct dacce_validate_result result;
	char why[512];

	if (dacce_validate(model, &opts, stdout, &result, why, sizeof(why))) {
		dacce_err("%s", why);
		return 1;
	}
	dacce_validate_print(stdout, &result);
	return result.mismatched ? 1 : 0;
}

int dacce_cmd_report(int argc, char **argv)
{
	struct dacce_profile_builder *builder = NULL;
	struct dacce_model model = { 0 };
	struct dacce_store *store = NULL;
	struct report_opts o;
	FILE *out = stdout;
	char why[512];
	int err, status = 1;

	err = parse_report(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	if (dacce_store_open(o.input, &store, why, sizeof(why))) {
		dacce_err("%s", why);
		return 1;
	}
	if (o.validate) {
		if (dacce_model_load(store, &model, why, sizeof(why)))
			dacce_err("%s", why);
		else
			status = validate(&o, &model);
		goto out;
	}
	if (dacce_model_load(store, &model, why, sizeof(why)) ||
	    dacce_profile_build(&model, &o.filter, &builder, why, sizeof(why))) {
		dacce_err("%s", why);
		goto out;
	}
	if (o.output && !(out = fopen(o.output, o.format == DACCE_REPORT_PPROF ? "wb" : "w"))) {
		dacce_err("cannot write %s: %s", o.output, strerror(errno));
		out = stdout;
		goto out;
	}
	if (o.header_only || (o.format == DACCE_REPORT_TOP && !o.no_header))
		print_header(out, store, &model, dacce_profile_result(builder));
	if (!o.header_only) {
		err = dacce_report_write(out, o.format, &dacce_profile_result(builder)->profile,
					 &o.report);
		if (err) {
			dacce_err("cannot write the %s report: %s", dacce_report_format_name(o.format),
				  strerror(-err));
			goto out;
		}
	}
	if (fflush(out) != 0) {
		dacce_err("cannot write %s: %s", o.output ? o.output : "stdout", strerror(errno));
		goto out;
	}
	status = 0;
out:
	if (out != stdout && fclose(out) != 0 && status == 0) {
		dacce_err("cannot write %s: %s", o.output, strerror(errno));
		status = 1;
	}
	dacce_profile_builder_free(builder);
	dacce_model_fini(&model);
	dacce_store_close(store);
	return status;
}
