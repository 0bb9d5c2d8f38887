/* SPDX-License-Identifier: MIT */
/*
 * A profile ready to print: decoded, symbolized contexts with their counts.
 * `dacce report` builds one from a capture; every output format (top
 * contexts, calling context tree, k-calling-context forest, folded stacks,
 * pprof, JSON) reads only this, so formats never see encodings or captures.
 *
 * Frames are interned: two stacks that share a frame point at the same
 * struct dacce_rframe, so a writer may use the pointer as the frame's identity.
 */
#ifndef DACCE_USER_RPROFILE_H
#define DACCE_USER_RPROFILE_H

#include <stddef.h>
#include <stdint.h>

/* How a frame was entered from the frame outside it. */
enum dacce_rframe_kind {
	DACCE_RFRAME_CALL = 0,	    /* an ordinary call (or the outermost frame: main) */
	DACCE_RFRAME_TAIL,	    /* entered by a tail jump: the caller's frame is gone */
	DACCE_RFRAME_THREAD_ROOT,   /* a thread's start routine, on top of its creation context */
	DACCE_RFRAME_SIGNAL_ROOT,   /* a signal handler, on top of the interrupted context */
	DACCE_RFRAME_CALLBACK_ROOT, /* code entered from uninstrumented code */
	DACCE_RFRAME_LEAF,	    /* where the sample's PC was, inside the innermost context frame
				       (uninstrumented code called from it, e.g. libc) */
	DACCE_RFRAME_TRUNCATED,	    /* frames are missing here (the context was partial) */
};

/* One symbolized frame.  Strings are owned by the profile; never NULL except file. */
struct dacce_rframe {
	const char *function;	/* demangled name, or "module+0xOFFSET" when unknown */
	const char *module;	/* path of the module (build-id's file), or "[unknown]" */
	const char *build_id;	/* lowercase hex, "" when none */
	uint64_t address;	/* link-time address in the module (ELF vaddr) */
	const char *file;	/* source file, NULL when no debug info */
	uint32_t line;		/* 0 when unknown */
	uint8_t inlined;	/* 1: inlined into the frame outside it (same address) */
	uint8_t kind;		/* enum dacce_rframe_kind */
};

/* One distinct context and how often it was seen. */
struct dacce_rstack {
	const struct dacce_rframe **frames; /* outermost (main / start routine) first */
	uint32_t n_frames;
	uint32_t tid;	   /* thread, 0 when stacks of all threads are merged */
	const char *comm;  /* thread name, "" when unknown */
	uint64_t count;	   /* samples */
};

struct dacce_rprofile {
	struct dacce_rstack *stacks;
	size_t n_stacks;
	const char *event;	/* e.g. "cpu-clock" */
	uint64_t period;	/* event units per sample (ns for cpu-clock) */
	const char *period_unit; /* "nanoseconds", "events" */
	uint64_t total_samples;	/* including ones with no usable context */
	uint64_t lost_samples;	/* dropped before they reached the capture */
	uint64_t duration_ns;	/* wall time of the capture */
};

#endif
