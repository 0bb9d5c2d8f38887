/* SPDX-License-Identifier: MIT */
/*
 * The capture store: one SQLite file (WAL) holding everything a capture
 * saw, so reports can be made later and by other tools.  The schema is
 * versioned (docs/capture-store.md); a file of another version or not a
 * capture at all is refused with a one-line reason.
 */
#ifndef DACCE_USER_STORE_H
#define DACCE_USER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#define DACCE_STORE_SCHEMA_VERSION 3

struct dacce_store {
	sqlite3 *db;
	char *path;
};

/*
 * Creates a new capture at path.  An existing file is kept as path.old,
 * as perf keeps perf.data.old.  Returns 0 or a negative errno, with a
 * one-line reason in why.
 */
int dacce_store_create(const char *path, struct dacce_store **out, char *why, size_t why_len);

/* Opens an existing capture read-only, checking it is one and of this schema version. */
int dacce_store_open(const char *path, struct dacce_store **out, char *why, size_t why_len);

/* NULL-safe. */
void dacce_store_close(struct dacce_store *store);

int dacce_store_exec(struct dacce_store *store, const char *sql);
int dacce_store_set_meta(struct dacce_store *store, const char *key, const char *value);
/* The value of key, or NULL; owned by the caller. */
char *dacce_store_get_meta(struct dacce_store *store, const char *key);

/* Prepares sql or says why on stderr; NULL on failure. */
sqlite3_stmt *dacce_store_prepare(struct dacce_store *store, const char *sql);

#endif
