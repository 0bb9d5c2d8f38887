/* SPDX-License-Identifier: MIT */
/*
 * The output formats of `dacce report`.  Each reads one struct dacce_rprofile
 * (user/rprofile.h) and writes to a FILE*; none keeps state between calls.
 *
 * Common rules:
 * - Percentages are of all samples of the capture: total_samples, or the sum
 *   of the stacks' counts when that is larger (hand-made profiles), printed
 *   with two decimals.  Stacks with a count of 0 are ignored.
 * - Every writer checks its arguments first and returns 0, -EINVAL (bad
 *   options, a NULL frame or string the profile promises, an unknown kind),
 *   -ENOMEM, -EIO when the stream reports a write error, or (pprof only)
 *   -E2BIG for a profile of 4 GiB or more.  Output may be partial on error.
 * - Text is deterministic: ties are broken by frame contents, never by
 *   pointers, so outputs can be compared with golden files.
 * - Frame markers in text formats: [inlined], [tail call], [thread root],
 *   [signal handler], [callback], [leaf] (the sampled PC, in code outside the
 *   context, e.g. libc); a DACCE_RFRAME_TRUNCATED frame prints as [truncated]
 *   whatever its strings hold: it stands for frames that are missing.
 */
#ifndef DACCE_USER_REPORT_H
#define DACCE_USER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rprofile.h"

enum dacce_report_format {
	DACCE_REPORT_TOP = 0, /* "top": hottest contexts as full call paths */
	DACCE_REPORT_CCT,     /* "cct": calling context tree */
	DACCE_REPORT_KCCF,    /* "kccf": k-calling context forest */
	DACCE_REPORT_FOLDED,  /* "folded": flamegraph.pl / speedscope input */
	DACCE_REPORT_PPROF,   /* "pprof": gzip'd profile.proto (binary) */
	DACCE_REPORT_JSON,    /* "json": the top report, machine-readable */
	DACCE_REPORT_FORMAT_COUNT,
};

#define DACCE_REPORT_DEFAULT_K 3

struct dacce_report_options {
	size_t limit;	    /* top, json: contexts shown (per thread with by_thread); 0: all */
	bool by_thread;	    /* top, json: one section per thread, hottest thread first */
	double min_percent; /* cct, kccf: hide nodes whose total is a smaller share (0: none) */
	unsigned int k;	    /* kccf: calls kept above each routine, >= 1 */
	bool thread_prefix; /* folded: each stack starts with a "comm-tid" frame */
};

/* Defaults: no limit, threads merged, nothing hidden, k = DACCE_REPORT_DEFAULT_K. */
void dacce_report_options_init(struct dacce_report_options *opts);

/* "top", "cct", ... -> format; -EINVAL for an unknown name. */
int dacce_report_format_parse(const char *name, enum dacce_report_format *format);
/* The name dacce_report_format_parse() accepts; "unknown" when out of range. */
const char *dacce_report_format_name(enum dacce_report_format format);

/* Writes profile in format; opts NULL means defaults. */
int dacce_report_write(FILE *out, enum dacce_report_format format,
		       const struct dacce_rprofile *profile, const struct dacce_report_options *opts);

/*
 * Top contexts, most samples first, each as its call path innermost frame
 * first (like gdb's bt): "#N  ADDRESS function (module) at file:line [markers]".
 * Uses limit and by_thread.  Without by_thread, stacks of different threads
 * with the same frames are one context (its thread is shown when they agree).
 */
int dacce_report_top(FILE *out, const struct dacce_rprofile *profile,
		     const struct dacce_report_options *opts);

/*
 * The calling context tree as an indented tree: total (inclusive) and self
 * samples with their percentages, then the frame; children by total, highest
 * first.  Nodes are merged by function, module, inlined flag and how they were
 * entered.  Uses min_percent.
 */
int dacce_report_cct(FILE *out, const struct dacce_rprofile *profile,
		     const struct dacce_report_options *opts);

/*
 * The k-calling context forest (D'Elia et al., OOPSLA 2012): one tree per
 * routine, its children the routines that called it, up to k calls out; it is
 * inv_k of the calling context tree.  A node's self count is the paper's
 * counter with samples for activations: samples whose innermost k-context is
 * the node's path.  Its total counts samples whose stack holds that path
 * anywhere (once per sample, even through recursion).  Trees and children are
 * ordered by self, then total, highest first.  A path stops after a
 * [truncated] frame: callers beyond it are unknown.  Uses k and min_percent.
 */
int dacce_report_kccf(FILE *out, const struct dacce_rprofile *profile,
		      const struct dacce_report_options *opts);

/*
 * Folded stacks: "frame;frame;... count", outermost frame first, one line per
 * distinct stack, lines sorted.  Frames are function names, inlined ones with
 * flamegraph.pl's "_[i]" suffix.  ';' becomes ':' and control characters '?',
 * so a name can neither split a frame nor a line.  Uses thread_prefix.
 */
int dacce_report_folded(FILE *out, const struct dacce_rprofile *profile,
			const struct dacce_report_options *opts);

/*
 * pprof's profile.proto, gzip-compressed.  Sample types samples/count and,
 * when the profile has a period, EVENT/UNIT (cpu/nanoseconds for cpu-clock)
 * worth count * period; period_type and period say the same.  One Location per
 * distinct module and address, its Lines the inline chain innermost first;
 * one Mapping per module (with build id; none for "[unknown]"), starting at 0
 * as addresses are link-time addresses; functions deduplicated by name and
 * file.  Labels: "tid" (number) and "comm" (string) when known.  Strings are
 * made valid UTF-8 (proto3 requires it).  Ignores every option.
 */
int dacce_report_pprof(FILE *out, const struct dacce_rprofile *profile,
		       const struct dacce_report_options *opts);

/*
 * The top report as one JSON object (UTF-8; invalid bytes become U+FFFD):
 *   format "dacce-top", version 1, event, period, period_unit,
 *   total_samples, context_samples (sum of the stacks' counts), lost_samples,
 *   duration_ns, then either
 *     contexts: [context...], contexts_not_shown            (threads merged)
 *   or, with by_thread,
 *     threads: [{tid, comm, samples, percent, contexts, contexts_not_shown}]
 *   context: {rank, samples, percent, tid, comm, frames: [frame...]}, frames
 *   innermost first; frame: {function, module, build_id, address ("0x..."),
 *   file (null when unknown), line (null when unknown), inlined (bool),
 *   kind ("call", "tail", "thread_root", "signal_root", "callback_root",
 *   "leaf", "truncated")}.  percent is a number with two decimals; tid 0
 *   means the context mixes threads.  Keys only get added, never renamed.
 */
int dacce_report_json(FILE *out, const struct dacce_rprofile *profile,
		      const struct dacce_report_options *opts);

#endif
