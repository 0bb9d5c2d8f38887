/* SPDX-License-Identifier: MIT */
/*
 * Turns the records of bpf/dacce.bpf.c into rows of the capture store,
 * keeping per process what the rows need: which image a pid runs now, how
 * far its graph has grown (for fork children), dictionaries being
 * reassembled from chunks.
 */
#ifndef DACCE_USER_CAPTURE_H
#define DACCE_USER_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct dacce_capture;

struct dacce_capture_stats {
	uint64_t samples, samples_without_context, stacks, records, bad_records;
	uint64_t processes, threads, edges, epochs, dicts_missing;
};

int dacce_capture_new(struct dacce_store *store, struct dacce_capture **out);
/* NULL-safe; commits what is pending. */
void dacce_capture_free(struct dacce_capture *cap);

/* One ring-buffer record.  Returns 0, or a negative errno on a store failure. */
int dacce_capture_record(struct dacce_capture *cap, const void *data, size_t size);

/* The root process ended with status (a wait status). */
int dacce_capture_root_ended(struct dacce_capture *cap, uint32_t pid, int wait_status,
			     uint64_t now_ns);

/* Commits rows written so far (called periodically, and at the end). */
int dacce_capture_flush(struct dacce_capture *cap);

const struct dacce_capture_stats *dacce_capture_stats(const struct dacce_capture *cap);

/* Epochs the runtime of pid installed so far (the controller's policy reads it). */
uint64_t dacce_capture_epoch_of(const struct dacce_capture *cap, uint32_t pid);

#endif
