/* SPDX-License-Identifier: MIT */
/*
 * From a capture to a struct dacce_rprofile: every sample resolved
 * (user/model.h), its frames symbolized (user/symbolize.h), equal frames
 * interned and equal stacks counted once.  Also counts why samples did not
 * resolve, for the report's header and for `dacce report --stats`.
 */
#ifndef DACCE_USER_PROFILE_BUILD_H
#define DACCE_USER_PROFILE_BUILD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "rprofile.h"
#include "symbolize.h"

struct dacce_profile_builder;

struct dacce_profile_filter {
	uint32_t pid; /* 0: every process */
	uint32_t tid; /* 0: every thread */
	FILE *explain;	       /* when set: one line per sample without an exact context, saying why */
	uint64_t explain_max;  /* at most this many lines */
};

struct dacce_profile_result {
	struct dacce_rprofile profile;
	uint64_t by_status[DACCE_RESOLVE_STATUS_COUNT];
};

/* Builds the profile of the capture in model; 0 or -errno with a reason in why. */
int dacce_profile_build(struct dacce_model *model, const struct dacce_profile_filter *filter,
			struct dacce_profile_builder **out, char *why, size_t why_len);

const struct dacce_profile_result *dacce_profile_result(const struct dacce_profile_builder *b);

/*
 * Symbolized frames of one resolved context, outermost first, for
 * `dacce decode`; valid until the builder is freed.  Returns the count or -errno.
 */
int dacce_profile_frames(struct dacce_profile_builder *b, struct dacce_model_proc *proc,
			 const struct dacce_resolved *r, const struct dacce_rframe ***frames);

/* A builder with no samples, for decoding single contexts. */
int dacce_profile_builder_new(struct dacce_model *model, struct dacce_profile_builder **out);

/* NULL-safe. */
void dacce_profile_builder_free(struct dacce_profile_builder *b);

#endif
