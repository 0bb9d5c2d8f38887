/* SPDX-License-Identifier: MIT */
/*
 * Dictionary serialisation: a versioned, checksummed, little-endian binary
 * format (docs/dictionary-format.md).  Reading validates everything so a
 * truncated or corrupt file gives an error, never a crash or a dictionary
 * that decodes out of bounds.
 */
#ifndef DACCE_DICT_IO_H
#define DACCE_DICT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "dict.h"

#define DACCE_DICT_MAGIC "DACCEDIC"
#define DACCE_DICT_VERSION 1u

/* Serialises dict into a malloc'd buffer.  Returns 0 or a negative errno. */
int dacce_dict_serialize(const struct dacce_dict *dict, uint8_t **buf, size_t *len);

/*
 * Parses buf.  Returns 0 and a new dictionary, or a negative errno with a
 * one-line reason in *why (static text): -EBADMSG (corrupt, bad checksum,
 * inconsistent), -ENODATA (truncated), -EPROTONOSUPPORT (other version).
 */
int dacce_dict_deserialize(const uint8_t *buf, size_t len, struct dacce_dict **out,
			   const char **why);

#endif
