/* SPDX-License-Identifier: MIT */
/*
 * Cross-validation (`dacce launch --validate`, `dacce report --validate`):
 * every sample that carries a copy of the user stack is unwound with the
 * modules' CFI (user/stack_unwind.h) and its physical call stack compared, frame by
 * frame, with the context decoded from its encoding.
 *
 * Both sides are reduced to the same shape, a list of "validation frames",
 * innermost first:
 *   AT f          the thread was executing in program function f (the
 *                 sampled pc, or a pc a signal interrupted)
 *   CALL f s      f is suspended in the call at site s (link-time offset)
 *   RETURN_INTO f (physical only) a return address into f itself, not into
 *                 the code generated for one of its sites: it matches
 *                 CALL f with any site
 *   IN_SITE f s   (physical only) a signal interrupted f inside the code
 *                 generated for its site s, which stands for the call
 *                 instruction: the call is under way or finishing, and the
 *                 context may or may not have taken it yet, so it matches
 *                 AT f and CALL f s
 *   OUTSIDE       one or more frames of code outside the program (libraries,
 *                 the runtime, a signal frame)
 * Physically, a return address in the runtime's generated code stands for
 * the call site whose code it is in.  Logically, each frame entered by a
 * call gives CALL at its entering edge's site; a frame entered by a tail
 * call gives nothing (its caller's frame is gone); a signal root gives
 * OUTSIDE and then AT the interrupted function; the thread's or main's root
 * ends the list.  Trailing OUTSIDE frames (libc's start code, start_thread)
 * are dropped on both sides.
 */
#ifndef DACCE_USER_VALIDATE_H
#define DACCE_USER_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph.h"
#include "model.h"

enum dacce_vframe_kind {
	DACCE_VF_OUTSIDE = 0,
	DACCE_VF_AT,
	DACCE_VF_CALL,
	DACCE_VF_RETURN_INTO,
	DACCE_VF_IN_SITE,
};

struct dacce_vframe {
	uint8_t kind;	  /* enum dacce_vframe_kind */
	uint32_t node;	  /* AT, CALL, RETURN_INTO: the program function */
	uint64_t site;	  /* CALL, IN_SITE: the call site, link-time offset in node's module */
	uint64_t address; /* physical frames: the pc or return address (for printing) */
};

/* A list of validation frames being built (grows; innermost first). */
struct dacce_vframes {
	struct dacce_vframe *frames;
	uint32_t len, cap;
};

void dacce_vframes_fini(struct dacce_vframes *v);
/* Appends one frame (consecutive OUTSIDE frames merge); 0 or -ENOMEM. */
int dacce_vframes_push(struct dacce_vframes *v, struct dacce_vframe frame);
/* Drops OUTSIDE frames at the outer end. */
void dacce_vframes_trim(struct dacce_vframes *v);

/*
 * The validation frames of a decoded context (an exact one: status
 * DACCE_RESOLVED).  node_size[n] is 0 for boundary nodes (functions outside
 * the program).  Returns 0, -EINVAL for a path that names an unknown node or
 * edge, or -ENOMEM.
 */
int dacce_validate_logical(const struct dacce_graph *graph, const uint64_t *node_size,
			   const struct dacce_resolved *r, struct dacce_vframes *out);

/*
 * Whether physical and logical frames are the same path; when not,
 * *first_difference is the index of the first frame that differs (or the
 * shorter length).
 */
bool dacce_vframes_match(const struct dacce_vframes *physical,
			 const struct dacce_vframes *logical, uint32_t *first_difference);

struct dacce_validate_options {
	uint32_t pid, tid;	  /* only this process or thread; 0: all */
	uint32_t show_mismatches; /* print at most this many mismatches side by side */
};

#define DACCE_VALIDATE_MAX_REASONS 32

struct dacce_validate_result {
	uint64_t samples;      /* samples with a stack copy */
	uint64_t verified;     /* both sides complete: exact + mismatched */
	uint64_t exact;	       /* the decoded context is the physical path */
	uint64_t mismatched;   /* it is not */
	uint64_t unverifiable; /* one side is not complete; by reason below */
	struct {
		const char *reason; /* static text */
		uint64_t count;
	} reasons[DACCE_VALIDATE_MAX_REASONS];
	uint32_t n_reasons;
};

/*
 * Validates the samples of a loaded capture that carry stack copies; prints
 * up to opts->show_mismatches mismatches on out, both paths side by side.
 * Returns 0 (whatever the outcome; see *result), or a negative errno with a
 * one-line reason in why (no stack copies in the capture: -ENODATA).
 */
int dacce_validate(struct dacce_model *model, const struct dacce_validate_options *opts,
		   FILE *out, struct dacce_validate_result *result, char *why, size_t why_len);

/*
 * "validate: samples=N verified=V exact=E mismatched=M unverifiable=U" and,
 * when some are unverifiable, one line of counts by reason.
 */
void dacce_validate_print(FILE *out, const struct dacce_validate_result *result);

#endif
