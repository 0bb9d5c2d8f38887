/* SPDX-License-Identifier: MIT */
/*
 * Scans kept in a file between runs (scan_cache.h decides where and when).
 *
 * A scan (scan.h) depends only on the bytes scanned, the function's bounds
 * and the module's PLT sections.  One file holds the scans of one module
 * file (its build-id), each stored relative to its function's start and
 * filed under the function's offset from the module's bias, with a hash of
 * the bytes it was made from: a lookup that finds different bytes misses.
 * So the scans of a program are the same whether they came from the file or
 * from Zydis.
 *
 * The file is read through a private read-only mapping.  Every field is
 * checked before it is used: a corrupt, truncated or foreign file reads as
 * no file (or as a miss for the one record that does not check out), never
 * as a wrong scan.
 *
 * Layout (native byte order; the runtime only runs on x86-64): a header; an
 * index sorted by function offset; the records, each one scan.  The header
 * names the scanner that made the scans (scan_cache.h: the runtime's own
 * build-id), so a newer runtime does not trust an older one's scans.
 */
#ifndef DACCE_RT_SCAN_STORE_H
#define DACCE_RT_SCAN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "scan.h"

/* Files past this size are neither read nor written. */
#define DACCE_SCAN_STORE_MAX_BYTES (256u << 20)

/* What a file must say of itself to be used: the module and the scanner. */
struct dacce_scan_store_key {
	uint64_t module;  /* dacce_scan_store_module_key() */
	uint64_t scanner; /* the runtime that scanned */
};

/* A file opened for lookups. */
struct dacce_scan_store {
	const uint8_t *map;
	size_t size;
	const struct dacce_scan_store_entry *index;
	uint32_t n;
};

/* A scan serialised relative to its function, ready to be written. */
struct dacce_scan_record {
	uint64_t offset;    /* function start - module bias */
	uint64_t code_hash; /* dacce_scan_store_hash() of the bytes scanned */
	uint32_t code_len;  /* end - start */
	uint32_t len;
	uint8_t *bytes;
};

/* A hash of len bytes (not cryptographic: it tells stale records from good ones). */
uint64_t dacce_scan_store_hash(const void *bytes, size_t len);

/* The key of a module: its build-id, and its PLT sections relative to its bias. */
uint64_t dacce_scan_store_module_key(const uint8_t *build_id, size_t build_id_len,
				     uintptr_t bias, const struct dacce_range *plt, size_t n_plt);

/*
 * Serialises scan, made of the bytes code[0, end - start) of the function
 * [start, end) at offset from its module's bias, into *out (its bytes from
 * malloc).  0 or -ENOMEM, -EINVAL.
 */
int dacce_scan_record_make(const struct dacce_scan *scan, const uint8_t *code, uintptr_t start,
			   uintptr_t end, uint64_t offset, struct dacce_scan_record *out);
void dacce_scan_record_fini(struct dacce_scan_record *record);

/*
 * Opens path for lookups when it is a store for key.  0, or a negative
 * errno: -ENOENT (no file), -EINVAL (not a store, or for another key or
 * scanner), -EFBIG, -ENOMEM.  out is then empty and safe to close.
 */
int dacce_scan_store_open(const char *path, const struct dacce_scan_store_key *key,
			  struct dacce_scan_store *out);

/* Unmaps; NULL-safe and safe to call twice. */
void dacce_scan_store_close(struct dacce_scan_store *store);

/*
 * The stored scan of the function [start, end) at offset, when the file
 * holds one made of exactly the bytes at code: 0 and *out filled (free it
 * with dacce_scan_fini), -ENOENT when it does not, -ENOMEM.
 */
int dacce_scan_store_find(const struct dacce_scan_store *store, uint64_t offset,
			  const uint8_t *code, uintptr_t start, uintptr_t end,
			  struct dacce_scan *out);

/*
 * Writes to path (through a temporary file in its directory, renamed over
 * it) the records of old (may be NULL) and the n records added, which win
 * over old's for the same offset.  0 or a negative errno; path is then as
 * it was.
 */
int dacce_scan_store_write(const char *path, const struct dacce_scan_store_key *key,
			   const struct dacce_scan_store *old, const struct dacce_scan_record *added,
			   size_t n);

/* Makes len bytes the contents of path: a temporary file beside it, renamed over it. */
int dacce_scan_store_replace_file(const char *path, const void *bytes, size_t len);

#endif
