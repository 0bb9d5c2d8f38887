// SPDX-License-Identifier: MIT
#include "scan_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "env.h"
#include "funcs_store.h"
#include "rt.h"
#include "scan_store.h"

#define MAX_MODULES 256
#define DEFAULT_MAX_MB 512
#define MAX_FILES 4096	      /* looked at when pruning; more are left for a later pass */
#define DAY_SECONDS (24 * 3600) /* a file read is marked used at most this often */
#define DEFAULT_SAVE_S 30

struct dacce_scan_cache {
	char path[PATH_MAX];
	struct dacce_scan_store_key key;
	uintptr_t bias;
	struct dacce_scan_store store; /* as read at open */
	struct dacce_scan_record *added;
	size_t n_added, cap_added;
	size_t inherited; /* the first added came from the parent of a fork */
	bool failed; /* memory ran out: nothing more is kept */
};

static struct {
	bool on;
	char dir[PATH_MAX];
	uint64_t scanner;
	uint64_t max_bytes; /* the directory's files together, before the oldest go */
	time_t save_interval, next_save; /* seconds on CLOCK_MONOTONIC (save_if_due) */
	struct dacce_scan_cache *modules[MAX_MODULES];
	size_t n_modules;
	unsigned long found, scanned, tables;
} cache;

/* dir, made if missing, is a directory only the effective user may write to. */
static bool private_dir(const char *dir)
{
	char parent[PATH_MAX];
	struct stat st;
	char *slash;

	if (lstat(dir, &st) < 0 && errno == ENOENT) {
		/* One level of parents ($HOME/.cache): the cache directory itself is ours. */
		snprintf(parent, sizeof(parent), "%s", dir);
		slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = '\0';
			(void)mkdir(parent, 0700);
		}
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return false;
	}
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

static bool choose_dir(void)
{
	const char *dir = dacce_env("DACCE_CACHE_DIR"), *base;
	int n;

	if (dir && *dir)
		n = snprintf(cache.dir, sizeof(cache.dir), "%s", dir);
	else if ((base = dacce_env("XDG_CACHE_HOME")) && base[0] == '/')
		n = snprintf(cache.dir, sizeof(cache.dir), "%s/dacce", base);
	else if ((base = dacce_env("HOME")) && base[0] == '/')
		n = snprintf(cache.dir, sizeof(cache.dir), "%s/.cache/dacce", base);
	else
		return false;
	return n > 0 && (size_t)n < sizeof(cache.dir) && private_dir(cache.dir);
}

static time_t monotonic_s(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec;
}

void dacce_scan_cache_setup(const struct dacce_module_info *runtime)
{
	const char *off = dacce_env("DACCE_CACHE"), *max_mb, *save_s;

	cache.on = false;
	if ((off && strcmp(off, "0") == 0) || getauxval(AT_SECURE) || !runtime ||
	    runtime->build_id_len == 0)
		return;
	cache.scanner = dacce_scan_store_hash(runtime->build_id, runtime->build_id_len);
	max_mb = dacce_env("DACCE_CACHE_MAX_MB");
	cache.max_bytes = (uint64_t)(max_mb && atol(max_mb) > 0 ? atol(max_mb) : DEFAULT_MAX_MB) << 20;
	save_s = dacce_env("DACCE_CACHE_SAVE_S");
	cache.save_interval = save_s && atol(save_s) > 0 ? atol(save_s) : DEFAULT_SAVE_S;
	cache.next_save = monotonic_s() + cache.save_interval;
	cache.on = choose_dir();
	if (!cache.on)
		dacce_rt_log(false, "scans are not kept: no private cache directory (DACCE_CACHE_DIR)");
}

/* A file read now is among the last to be pruned: its time moves on, once a day at most. */
static void mark_used(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && st.st_mtime < time(NULL) - DAY_SECONDS)
		(void)utimensat(AT_FDCWD, path, NULL, 0);
}

/* DIR/BUILD-ID-RUNTIME.suffix (suffix with its dot). */
static int module_path(const struct dacce_module_info *m, const char *suffix, char *path,
		       size_t len)
{
	size_t n = (size_t)snprintf(path, len, "%s/", cache.dir);

	for (size_t i = 0; i < m->build_id_len && n + 3 < len; i++)
		n += (size_t)snprintf(path + n, len - n, "%02x", m->build_id[i]);
	/* And the runtime's: two runtimes used in turn keep a file each, not one rewritten. */
	if (n + 10 < len)
		n += (size_t)snprintf(path + n, len - n, "-%08x", (unsigned)(cache.scanner >> 32));
	if (n + strlen(suffix) + 1 > len)
		return -ENAMETOOLONG;
	memcpy(path + n, suffix, strlen(suffix) + 1);
	return 0;
}

int dacce_scan_cache_funcs(const struct dacce_module_info *m, struct dacce_funcs *out)
{
	char path[PATH_MAX];
	struct stat st;
	uint64_t parts[3], key;
	int err;

	/* The file's size too: a stripped copy has the build-id of its original, not its symbols. */
	if (!cache.on || !m || m->build_id_len == 0 || stat(dacce_funcs_file_of(m), &st) < 0 ||
	    module_path(m, ".funcs", path, sizeof(path)) < 0)
		return dacce_funcs_load(m, out);
	parts[0] = cache.scanner;
	parts[1] = dacce_scan_store_hash(m->build_id, m->build_id_len);
	parts[2] = (uint64_t)st.st_size;
	key = dacce_scan_store_hash(parts, sizeof(parts));
	if (dacce_funcs_store_read(path, key, m->bias, out) == 0) {
		cache.tables++;
		mark_used(path);
		return 0;
	}
	err = dacce_funcs_load(m, out);
	if (!err)
		(void)dacce_funcs_store_write(path, key, m->bias, out);
	return err;
}

struct dacce_scan_cache *dacce_scan_cache_for(const struct dacce_module_info *m,
					      const struct dacce_funcs *funcs)
{
	struct dacce_scan_store_key key;
	struct dacce_scan_cache *c;
	int err;

	if (!cache.on || !m || !funcs || m->build_id_len == 0)
		return NULL;
	key = (struct dacce_scan_store_key){
		.module = dacce_scan_store_module_key(m->build_id, m->build_id_len, m->bias,
						      funcs->plt, funcs->n_plt),
		.scanner = cache.scanner,
	};
	/* The same file loaded again (dlopen after dlclose): its cache goes on. */
	for (size_t i = 0; i < cache.n_modules; i++)
		if (cache.modules[i]->key.module == key.module) {
			cache.modules[i]->bias = m->bias;
			return cache.modules[i];
		}
	if (cache.n_modules == MAX_MODULES)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->key = key;
	c->bias = m->bias;
	if (module_path(m, ".scans", c->path, sizeof(c->path)) < 0) {
		free(c);
		return NULL;
	}
	err = dacce_scan_store_open(c->path, &key, &c->store);
	if (!err)
		mark_used(c->path);
	if (err && err != -ENOENT)
		dacce_rt_log(false, "scans of %s not read from %s: %s", m->path, c->path,
			     err == -EINVAL ? "not a file of this runtime's" : strerror(-err));
	cache.modules[cache.n_modules++] = c;
	return c;
}

static void keep(struct dacce_scan_cache *c, const struct dacce_scan *scan, const uint8_t *code,
		 uintptr_t start, uintptr_t end)
{
	struct dacce_scan_record record;

	if (c->failed)
		return;
	if (c->n_added == c->cap_added) {
		size_t cap = c->cap_added ? 2 * c->cap_added : 256;
		struct dacce_scan_record *grown = realloc(c->added, cap * sizeof(*grown));

		if (!grown) {
			c->failed = true;
			return;
		}
		c->added = grown;
		c->cap_added = cap;
	}
	if (dacce_scan_record_make(scan, code, start, end, start - c->bias, &record) != 0) {
		c->failed = true;
		return;
	}
	c->added[c->n_added++] = record;
}

int dacce_scan_cached(struct dacce_scan_cache *c, const uint8_t *code, uintptr_t start,
		      uintptr_t end, const struct dacce_range *plt, size_t n_plt,
		      struct dacce_scan *out)
{
	int err;

	if (c && dacce_scan_store_find(&c->store, start - c->bias, code, start, end, out) == 0) {
		cache.found++;
		return 0;
	}
	err = dacce_scan_function(code, start, start, end, plt, n_plt, out);
	if (c && !err) {
		cache.scanned++;
		keep(c, out, code, start, end);
	}
	return err;
}

static void save_module(struct dacce_scan_cache *c)
{
	struct dacce_scan_store now;
	int err;

	if (c->n_added == c->inherited)
		return;
	/* What other processes wrote since this one started is kept too. */
	err = dacce_scan_store_open(c->path, &c->key, &now);
	err = dacce_scan_store_write(c->path, &c->key, err ? NULL : &now, c->added, c->n_added);
	dacce_scan_store_close(&now);
	if (err)
		dacce_rt_log(false, "scans not kept in %s: %s", c->path, strerror(-err));
	for (size_t i = 0; i < c->n_added; i++)
		dacce_scan_record_fini(&c->added[i]);
	c->n_added = c->inherited = 0;
}

struct file_age {
	char name[NAME_MAX + 1];
	time_t mtime;
	uint64_t size;
};

static int older_first(const void *a, const void *b)
{
	const struct file_age *x = a, *y = b;

	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

static bool kept_file(const char *name, size_t len)
{
	return len > 6 && (strcmp(name + len - 6, ".scans") == 0 || strcmp(name + len - 6, ".funcs") == 0);
}

/* The files of the directory, or NULL (*n then 0). */
static struct file_age *list_files(size_t *n, uint64_t *total)
{
	struct file_age *files = malloc(MAX_FILES * sizeof(*files));
	DIR *dir = opendir(cache.dir);
	struct dirent *d;

	*n = 0;
	*total = 0;
	if (!files || !dir) {
		free(files);
		if (dir)
			closedir(dir);
		return NULL;
	}
	while (*n < MAX_FILES && (d = readdir(dir))) {
		size_t len = strlen(d->d_name);
		struct stat st;

		if (!kept_file(d->d_name, len) ||
		    fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		memcpy(files[*n].name, d->d_name, len + 1);
		files[*n].mtime = st.st_mtime;
		files[*n].size = (uint64_t)st.st_size;
		*total += files[*n].size;
		(*n)++;
	}
	closedir(dir);
	return files;
}

/* Over its bound, the directory loses its least recently used files, down to 3/4 of it. */
static void prune(void)
{
	uint64_t total;
	size_t n;
	struct file_age *files = list_files(&n, &total);
	char path[PATH_MAX];

	if (files && total > cache.max_bytes) {
		qsort(files, n, sizeof(*files), older_first);
		for (size_t i = 0; i < n && total > cache.max_bytes / 4 * 3; i++) {
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", cache.dir, files[i].name) >=
				    sizeof(path) ||
			    unlink(path) < 0)
				continue;
			total -= files[i].size;
		}
	}
	free(files);
}

/* Returns whether a file was written. */
static bool save_all(void)
{
	bool wrote = false;

	for (size_t i = 0; i < cache.n_modules; i++) {
		wrote = wrote || cache.modules[i]->n_added > cache.modules[i]->inherited;
		save_module(cache.modules[i]);
	}
	return wrote;
}

void dacce_scan_cache_save(void)
{
	if (save_all())
		prune();
}

void dacce_scan_cache_save_if_due(void)
{
	time_t now;

	if (!cache.on || (now = monotonic_s()) < cache.next_save)
		return;
	cache.next_save = now + cache.save_interval;
	/*
	 * Not pruned from here: opendir takes its buffer from malloc, maybe the
	 * program's, which the policy thread must not call beside a program
	 * thread that glibc believes alone (single_thread.h).  At exit it is.
	 */
	(void)save_all();
}

void dacce_scan_cache_after_fork_child(void)
{
	for (size_t i = 0; i < cache.n_modules; i++)
		cache.modules[i]->inherited = cache.modules[i]->n_added;
	cache.found = cache.scanned = cache.tables = 0;
}

void dacce_scan_cache_counts(unsigned long *found, unsigned long *scanned, unsigned long *tables)
{
	*found = cache.found;
	*scanned = cache.scanned;
	*tables = cache.tables;
}
