/* SPDX-License-Identifier: MIT */
/*
 * One scan (scan.h) as a string of bytes, every address relative to its
 * function's start, in variable-length integers: a call site takes about
 * 13 bytes instead of the 100 of struct dacce_scan_site.  scan_store.h keeps
 * these records in files.
 *
 * Decoding checks every length and bound and reads nothing past the record:
 * bytes that do not make exactly one scan of sites inside the function are
 * refused, whatever they are.
 */
#ifndef DACCE_RT_SCAN_RECORD_H
#define DACCE_RT_SCAN_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "scan.h"

/* The record of scan, made of the function starting at start, in *bytes (malloc'd). */
int dacce_scan_record_encode(const struct dacce_scan *scan, uintptr_t start, uint8_t **bytes,
			     size_t *len);

/*
 * The scan of record bytes[0, len) for the function [start, start +
 * code_len): 0 and *out filled (free it with dacce_scan_fini), -EINVAL when
 * the bytes are not such a record, -ENOMEM.
 */
int dacce_scan_record_decode(const uint8_t *bytes, size_t len, uintptr_t start, uint64_t code_len,
			     struct dacce_scan *out);

#endif
