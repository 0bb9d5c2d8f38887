// SPDX-License-Identifier: MIT
/* The capture store's schema and plumbing (see store.h, docs/capture-store.md). */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A process image (proc) is one exec of one pid: its graph, epochs and
 * samples belong together.  A fork child starts as a copy of its parent's
 * image: it names its parent and how far the parent's graph had grown.
 */
static const char schema[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);\n"
	"CREATE TABLE procs (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, parent INTEGER,\n"
	"  fork_modules INTEGER, fork_nodes INTEGER, fork_edges INTEGER, fork_epoch INTEGER,\n"
	"  exe TEXT, tls_tpoff INTEGER, runtime INTEGER NOT NULL DEFAULT 0,\n"
	"  started_ns INTEGER, ended_ns INTEGER, exit_status INTEGER);\n"
	"CREATE TABLE modules (proc INTEGER NOT NULL, idx INTEGER, path TEXT NOT NULL,\n"
	"  build_id BLOB, bias INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,\n"
	"  time_ns INTEGER);\n"
	"CREATE TABLE nodes (proc INTEGER NOT NULL, idx INTEGER NOT NULL, module INTEGER NOT NULL,\n"
	"  offset INTEGER NOT NULL, size INTEGER NOT NULL, PRIMARY KEY (proc, idx));\n"
	"CREATE TABLE edges (proc INTEGER NOT NULL, idx INTEGER NOT NULL, caller INTEGER NOT NULL,\n"
	"  callee INTEGER NOT NULL, kind INTEGER NOT NULL, site_module INTEGER NOT NULL,\n"
	"  site_offset INTEGER NOT NULL, flags INTEGER NOT NULL, time_ns INTEGER,\n"
	"  PRIMARY KEY (proc, idx));\n"
	"CREATE TABLE code_regions (proc INTEGER NOT NULL, start INTEGER NOT NULL,\n"
	"  size INTEGER NOT NULL);\n"
	"CREATE TABLE fragments (proc INTEGER NOT NULL, node INTEGER NOT NULL,\n"
	"  module INTEGER NOT NULL, offset INTEGER NOT NULL, size INTEGER NOT NULL);\n"
	"CREATE TABLE code_entries (proc INTEGER NOT NULL, address INTEGER NOT NULL,\n"
	"  site_caller INTEGER NOT NULL, site_offset INTEGER);\n"
	"CREATE TABLE epochs (proc INTEGER NOT NULL, epoch INTEGER NOT NULL, max_id INTEGER,\n"
	"  n_nodes INTEGER, n_edges INTEGER, pause_ns INTEGER, time_ns INTEGER, driver TEXT,\n"
	"  dict BLOB, PRIMARY KEY (proc, epoch));\n"
	"CREATE TABLE threads (proc INTEGER NOT NULL, tid INTEGER NOT NULL, root_edge INTEGER,\n"
	"  creator_tid INTEGER, created_ns INTEGER, exited_ns INTEGER, comm TEXT,\n"
	"  ctx_epoch INTEGER, ctx_id INTEGER, ctx_reset_id INTEGER, ctx_depth INTEGER,\n"
	"  ctx_flags INTEGER, ctx_entries BLOB, PRIMARY KEY (proc, tid));\n"
	"CREATE TABLE samples (proc INTEGER NOT NULL, tid INTEGER NOT NULL, time_ns INTEGER,\n"
	"  cpu INTEGER, pc INTEGER, sp INTEGER, flags INTEGER, epoch INTEGER, id INTEGER,\n"
	"  reset_id INTEGER, depth INTEGER, ctx_flags INTEGER, entries BLOB, calls INTEGER,\n"
	"  pushes INTEGER);\n"
	"CREATE TABLE stacks (sample INTEGER PRIMARY KEY, regs BLOB NOT NULL,\n"
	"  stack_start INTEGER NOT NULL, stack BLOB, tail BLOB, flags INTEGER NOT NULL);\n"
	"CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER);\n";

static int sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_PERM:
	case SQLITE_READONLY:
		return -EACCES;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return -EBADMSG;
	case SQLITE_FULL:
		return -ENOSPC;
	default:
		return -EIO;
	}
}

int dacce_store_exec(struct dacce_store *store, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(store->db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		fprintf(stderr, "dacce: %s: %s\n", store->path, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return sqlite_errno(rc);
	}
	return 0;
}

sqlite3_stmt *dacce_store_prepare(struct dacce_store *store, const char *sql)
{
	sqlite3_stmt *stmt = NULL;

	if (sqlite3_prepare_v3(store->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL) !=
	    SQLITE_OK) {
		fprintf(stderr, "dacce: %s: %s\n", store->path, sqlite3_errmsg(store->db));
		return NULL;
	}
	return stmt;
}

int dacce_store_set_meta(struct dacce_store *store, const char *key, const char *value)
{
	sqlite3_stmt *stmt = dacce_store_prepare(
		store, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
	int rc;

	if (!stmt)
		return -EIO;
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, value, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

char *dacce_store_get_meta(struct dacce_store *store, const char *key)
{
	sqlite3_stmt *stmt = NULL;
	char *value = NULL;

	/* Quietly: asking a file that is not a capture is how dacce_store_open finds out. */
	if (sqlite3_prepare_v2(store->db, "SELECT value FROM meta WHERE key = ?1", -1, &stmt,
			       NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
		value = strdup((const char *)sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	return value;
}

static struct dacce_store *store_new(const char *path)
{
	struct dacce_store *store = calloc(1, sizeof(*store));

	if (!store)
		return NULL;
	store->path = strdup(path);
	if (!store->path) {
		free(store);
		return NULL;
	}
	return store;
}

/* Keeps a previous capture as path.old; its WAL and shared-memory files go with it. */
static int keep_previous(const char *path, char *why, size_t why_len)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char from[4096], to[4096];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(from, sizeof(from), "%s%s", path, suffixes[i]);
		snprintf(to, sizeof(to), "%s.old%s", path, suffixes[i]);
		if (rename(from, to) < 0 && errno != ENOENT) {
			snprintf(why, why_len, "cannot rename %s to %s: %s", from, to,
				 strerror(errno));
			return -errno;
		}
	}
	return 0;
}

int dacce_store_create(const char *path, struct dacce_store **out, char *why, size_t why_len)
{
	struct dacce_store *store = NULL;
	char version[16];
	int rc, err;

	*out = NULL;
	err = keep_previous(path, why, why_len);
	if (err)
		return err;
	store = store_new(path);
	if (!store) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	rc = sqlite3_open_v2(path, &store->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		snprintf(why, why_len, "cannot create %s: %s", path, sqlite3_errstr(rc));
		err = sqlite_errno(rc);
		goto fail;
	}
	sqlite3_busy_timeout(store->db, 5000);
	/* WAL: a crash of the controller loses at most the open transaction. */
	err = dacce_store_exec(store, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
	if (!err)
		err = dacce_store_exec(store, schema);
	snprintf(version, sizeof(version), "%d", DACCE_STORE_SCHEMA_VERSION);
	if (!err)
		err = dacce_store_set_meta(store, "schema_version", version);
	if (!err)
		err = dacce_store_set_meta(store, "format", "dacce-capture");
	if (err) {
		snprintf(why, why_len, "cannot write %s", path);
		goto fail;
	}
	*out = store;
	return 0;
fail:
	dacce_store_close(store);
	return err;
}

int dacce_store_open(const char *path, struct dacce_store **out, char *why, size_t why_len)
{
	struct dacce_store *store = NULL;
	char *format = NULL, *version = NULL;
	int rc, err = 0;

	*out = NULL;
	if (access(path, R_OK) < 0) {
		snprintf(why, why_len, "cannot read %s: %s", path, strerror(errno));
		return -errno;
	}
	store = store_new(path);
	if (!store) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	rc = sqlite3_open_v2(path, &store->db, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK)
		sqlite3_busy_timeout(store->db, 5000);
	/* Reading meta is the first access: a file that is no database fails here. */
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(store->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		snprintf(why, why_len, "%s is not a dacce capture: %s", path, sqlite3_errstr(rc));
		err = rc == SQLITE_NOTADB ? -EBADMSG : sqlite_errno(rc);
		goto fail;
	}
	format = dacce_store_get_meta(store, "format");
	version = dacce_store_get_meta(store, "schema_version");
	if (!format || strcmp(format, "dacce-capture") != 0) {
		snprintf(why, why_len, "%s is not a dacce capture", path);
		err = -EBADMSG;
		goto fail;
	}
	if (!version || atoi(version) != DACCE_STORE_SCHEMA_VERSION) {
		snprintf(why, why_len, "%s has capture schema version %s; this dacce reads %d", path,
			 version ? version : "(none)", DACCE_STORE_SCHEMA_VERSION);
		err = -EPROTONOSUPPORT;
		goto fail;
	}
	free(format);
	free(version);
	*out = store;
	return 0;
fail:
	free(format);
	free(version);
	dacce_store_close(store);
	return err;
}

void dacce_store_close(struct dacce_store *store)
{
	if (!store)
		return;
	if (store->db)
		sqlite3_close(store->db);
	free(store->path);
	free(store);
}
