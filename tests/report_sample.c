// SPDX-License-Identifier: MIT
/*
 * Writes the fixed profile of tests/report_profiles.h in one report format to
 * stdout, for tests that feed it to other tools (tests/check-pprof.sh runs
 * `go tool pprof` on it).
 *
 * Usage: report_sample FORMAT [--by-thread] [--thread-prefix] [--limit N]
 *        [--k N] [--min-percent X]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_profiles.h"

static int usage(void)
{
	fprintf(stderr, "usage: report_sample top|cct|kccf|folded|pprof|json [--by-thread] "
			"[--thread-prefix] [--limit N] [--k N] [--min-percent X]\n");
	return 2;
}

static int parse_options(int argc, char **argv, struct dacce_report_options *opts)
{
	for (int i = 2; i < argc; i++) {
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--by-thread"))
			opts->by_thread = true;
		else if (!strcmp(argv[i], "--thread-prefix"))
			opts->thread_prefix = true;
		else if (!strcmp(argv[i], "--limit") && value)
			opts->limit = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--k") && value)
			opts->k = (unsigned int)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--min-percent") && value)
			opts->min_percent = strtod(argv[++i], NULL);
		else
			return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct dacce_rprofile profile = mixed_profile();
	struct dacce_report_options opts;
	enum dacce_report_format format;
	int err;

	dacce_report_options_init(&opts);
	if (argc < 2 || dacce_report_format_parse(argv[1], &format) ||
	    parse_options(argc, argv, &opts))
		return usage();
	err = dacce_report_write(stdout, format, &profile, &opts);
	if (err) {
		fprintf(stderr, "report_sample: cannot write the %s report: %s\n", argv[1],
			strerror(-err));
		return 1;
	}
	return 0;
}
