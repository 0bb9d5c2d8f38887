// SPDX-License-Identifier: MIT
/* `dacce report --format cct`: the calling context tree as an indented text tree. */
#include "report_internal.h"

#include <errno.h>

/* The CCT is the join of all root-to-leaf paths (kccf paper, section 3). */
int rpt_cct_build(const struct dacce_rprofile *profile, struct rpt_forest *cct)
{
	int err = rpt_forest_init(cct);

	for (size_t i = 0; !err && i < profile->n_stacks; i++) {
		const struct dacce_rstack *stack = &profile->stacks[i];
		uint32_t at = 0;

		if (!stack->count)
			continue;
		cct->nodes[0].total = rpt_add_sat(cct->nodes[0].total, stack->count);
		for (uint32_t j = 0; !err && j < stack->n_frames; j++) {
			err = rpt_forest_child(cct, at, stack->frames[j], &at);
			if (!err)
				cct->nodes[at].total = rpt_add_sat(cct->nodes[at].total,
								   stack->count);
		}
		if (!err)
			cct->nodes[at].self = rpt_add_sat(cct->nodes[at].self, stack->count);
	}
	if (err)
		rpt_forest_free(cct);
	return err;
}

int dacce_report_cct(FILE *out, const struct dacce_rprofile *profile,
		     const struct dacce_report_options *opts)
{
	struct dacce_report_options defaults;
	struct rpt_forest cct = { 0 };
	int err = rpt_check_args(out, profile);

	if (err)
		return err;
	opts = rpt_options(opts, &defaults);
	if (!(opts->min_percent >= 0)) /* also refuses NaN */
		return -EINVAL;
	err = rpt_cct_build(profile, &cct);
	if (err)
		goto cleanup;

	fputs("# calling context tree: total and self samples, children by total\n", out);
	rpt_print_summary(out, profile);
	if (opts->min_percent > 0)
		fprintf(out, "# nodes below %.2f%% of all samples hidden\n", opts->min_percent);
	err = rpt_forest_print(out, &cct,
			       &(struct rpt_forest_style){
				       .percent_base = rpt_percent_base(profile),
				       .min_percent = opts->min_percent,
				       .child_prefix = "",
			       });
	if (!err)
		err = rpt_flush(out);
cleanup:
	rpt_forest_free(&cct);
	return err;
}
