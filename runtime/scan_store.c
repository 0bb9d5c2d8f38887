// SPDX-License-Identifier: MIT
#include "scan_store.h"

#include "scan_record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char store_magic[8] = { 'D', 'A', 'C', 'C', 'E', 'S', 'C', 2 };

struct store_header {
	char magic[8];
	uint32_t n;	    /* index entries */
	uint32_t reserved;
	uint64_t module;    /* struct dacce_scan_store_key */
	uint64_t scanner;
	uint64_t index_hash; /* of the index */
	uint64_t size;	     /* of the whole file */
};

struct dacce_scan_store_entry {
	uint64_t offset;
	uint64_t code_hash;
	uint64_t record_hash; /* of the record's bytes */
	uint32_t code_len;
	uint32_t at;  /* where the record starts in the file */
	uint32_t len; /* its length */
	uint32_t reserved;
};

uint64_t dacce_scan_store_hash(const void *bytes, size_t len)
{
	const uint8_t *p = bytes;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
	size_t i = 0;

	/* Eight bytes a step, each mixed in by a multiply and a shift. */
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, sizeof(w));
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 32);
}

uint64_t dacce_scan_store_module_key(const uint8_t *build_id, size_t build_id_len,
				     uintptr_t bias, const struct dacce_range *plt, size_t n_plt)
{
	uint64_t h = dacce_scan_store_hash(build_id, build_id_len);

	for (size_t i = 0; i < n_plt; i++) {
		uint64_t r[3] = { h, plt[i].start - bias, plt[i].end - bias };

		h = dacce_scan_store_hash(r, sizeof(r));
	}
	return h;
}

int dacce_scan_record_make(const struct dacce_scan *scan, const uint8_t *code, uintptr_t start,
			   uintptr_t end, uint64_t offset, struct dacce_scan_record *out)
{
	uint8_t *bytes;
	size_t len;
	int err;

	memset(out, 0, sizeof(*out));
	if (!scan || !code || end <= start || end - start > UINT32_MAX)
		return -EINVAL;
	err = dacce_scan_record_encode(scan, start, &bytes, &len);
	if (err)
		return err;
	if (len > UINT32_MAX) {
		free(bytes);
		return -EFBIG;
	}
	*out = (struct dacce_scan_record){ .offset = offset, .code_len = (uint32_t)(end - start),
					   .code_hash = dacce_scan_store_hash(code, end - start),
					   .len = (uint32_t)len, .bytes = bytes };
	return 0;
}

void dacce_scan_record_fini(struct dacce_scan_record *record)
{
	if (!record)
		return;
	free(record->bytes);
	memset(record, 0, sizeof(*record));
}

/* Whether the mapped file is a store for key whose index and records lie inside it. */
static bool store_valid(const uint8_t *map, size_t size, const struct dacce_scan_store_key *key)
{
	struct store_header h;
	const struct dacce_scan_store_entry *index;
	size_t index_len;

	if (size < sizeof(h))
		return false;
	memcpy(&h, map, sizeof(h));
	if (memcmp(h.magic, store_magic, sizeof(store_magic)) != 0 || h.size != size ||
	    h.module != key->module || h.scanner != key->scanner ||
	    h.n > (size - sizeof(h)) / sizeof(*index))
		return false;
	index = (const struct dacce_scan_store_entry *)(map + sizeof(h));
	index_len = h.n * sizeof(*index);
	if (dacce_scan_store_hash(index, index_len) != h.index_hash)
		return false;
	for (uint32_t i = 0; i < h.n; i++) {
		if (index[i].at < sizeof(h) + index_len || index[i].at > size ||
		    index[i].len > size - index[i].at)
			return false;
		if (i > 0 && index[i].offset <= index[i - 1].offset)
			return false;
	}
	return true;
}

int dacce_scan_store_open(const char *path, const struct dacce_scan_store_key *key,
			  struct dacce_scan_store *out)
{
	struct stat st;
	void *map;
	int fd, err = 0;

	memset(out, 0, sizeof(*out));
	if (!path || !key)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(struct store_header)) {
		err = -EINVAL;
		goto cleanup;
	}
	if ((uint64_t)st.st_size > DACCE_SCAN_STORE_MAX_BYTES) {
		err = -EFBIG;
		goto cleanup;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!store_valid(map, (size_t)st.st_size, key)) {
		munmap(map, (size_t)st.st_size);
		err = -EINVAL;
		goto cleanup;
	}
	out->map = map;
	out->size = (size_t)st.st_size;
	out->index = (const struct dacce_scan_store_entry *)(out->map + sizeof(struct store_header));
	memcpy(&out->n, out->map + offsetof(struct store_header, n), sizeof(out->n));
cleanup:
	close(fd);
	return err;
}

void dacce_scan_store_close(struct dacce_scan_store *store)
{
	if (!store)
		return;
	if (store->map)
		munmap((void *)store->map, store->size);
	memset(store, 0, sizeof(*store));
}

static const struct dacce_scan_store_entry *find_entry(const struct dacce_scan_store *store,
						       uint64_t offset)
{
	uint32_t lo = 0, hi = store->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (store->index[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < store->n && store->index[lo].offset == offset ? &store->index[lo] : NULL;
}

int dacce_scan_store_find(const struct dacce_scan_store *store, uint64_t offset,
			  const uint8_t *code, uintptr_t start, uintptr_t end,
			  struct dacce_scan *out)
{
	const struct dacce_scan_store_entry *e;
	int err;

	memset(out, 0, sizeof(*out));
	if (!store || !store->map || !code || end <= start)
		return -ENOENT;
	e = find_entry(store, offset);
	if (!e || e->code_len != end - start ||
	    e->code_hash != dacce_scan_store_hash(code, end - start) ||
	    e->record_hash != dacce_scan_store_hash(store->map + e->at, e->len))
		return -ENOENT;
	err = dacce_scan_record_decode(store->map + e->at, e->len, start, e->code_len, out);
	return err == -EINVAL ? -ENOENT : err; /* a record that does not decode is a miss */
}

/* One record to write: from the old file or added. */
struct pick {
	uint64_t offset, code_hash;
	uint32_t code_len, len;
	const uint8_t *bytes;
	size_t order; /* added records first: the first of one offset wins */
};

static int by_offset(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The records of old and added, sorted, one per offset: *n_out of them. */
static struct pick *gather(const struct dacce_scan_store *old, const struct dacce_scan_record *added,
			   size_t n, size_t *n_out)
{
	size_t n_old = old && old->map ? old->n : 0, k = 0, kept = 0;
	struct pick *all = malloc((n_old + n + 1) * sizeof(*all));

	if (!all)
		return NULL;
	for (size_t i = 0; i < n; i++, k++)
		all[k] = (struct pick){ added[i].offset, added[i].code_hash, added[i].code_len,
					added[i].len, added[i].bytes, k };
	for (size_t i = 0; i < n_old; i++, k++) {
		const struct dacce_scan_store_entry *e = &old->index[i];

		all[k] = (struct pick){ e->offset, e->code_hash, e->code_len, e->len,
					old->map + e->at, k };
	}
	qsort(all, k, sizeof(*all), by_offset);
	for (size_t i = 0; i < k; i++)
		if (kept == 0 || all[kept - 1].offset != all[i].offset)
			all[kept++] = all[i];
	*n_out = kept;
	return all;
}

/* The file's bytes in *out: header, index, records.  0, -EFBIG or -ENOMEM. */
static int layout(const struct dacce_scan_store_key *key, const struct pick *picks, size_t n,
		  uint8_t **out, size_t *size_out)
{
	struct store_header h = { .n = (uint32_t)n, .module = key->module, .scanner = key->scanner };
	struct dacce_scan_store_entry *index;
	size_t size = sizeof(h) + n * sizeof(*index), at;
	uint8_t *file;

	for (size_t i = 0; i < n; i++)
		size += picks[i].len;
	if (n > UINT32_MAX || size > DACCE_SCAN_STORE_MAX_BYTES)
		return -EFBIG;
	file = calloc(1, size);
	if (!file)
		return -ENOMEM;
	index = (struct dacce_scan_store_entry *)(file + sizeof(h));
	at = sizeof(h) + n * sizeof(*index);
	for (size_t i = 0; i < n; i++) {
		index[i] = (struct dacce_scan_store_entry){
			.offset = picks[i].offset, .code_hash = picks[i].code_hash,
			.record_hash = dacce_scan_store_hash(picks[i].bytes, picks[i].len),
			.code_len = picks[i].code_len, .at = (uint32_t)at, .len = picks[i].len,
		};
		memcpy(file + at, picks[i].bytes, picks[i].len);
		at += picks[i].len;
	}
	memcpy(h.magic, store_magic, sizeof(h.magic));
	h.index_hash = dacce_scan_store_hash(index, n * sizeof(*index));
	h.size = size;
	memcpy(file, &h, sizeof(h));
	*out = file;
	*size_out = size;
	return 0;
}

static int write_all(int fd, const uint8_t *bytes, size_t len)
{
	while (len > 0) {
		ssize_t done = write(fd, bytes, len);

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0)
			return done < 0 ? -errno : -EIO;
		bytes += done;
		len -= (size_t)done;
	}
	return 0;
}

int dacce_scan_store_replace_file(const char *path, const void *bytes, size_t len)
{
	char tmp[PATH_MAX];
	int fd, err;

	if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = write_all(fd, bytes, len);
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int dacce_scan_store_write(const char *path, const struct dacce_scan_store_key *key,
			   const struct dacce_scan_store *old, const struct dacce_scan_record *added,
			   size_t n)
{
	struct pick *picks = NULL;
	uint8_t *file = NULL;
	size_t n_picks = 0, size = 0;
	int err;

	if (!path || !key || (n && !added))
		return -EINVAL;
	picks = gather(old, added, n, &n_picks);
	err = picks ? layout(key, picks, n_picks, &file, &size) : -ENOMEM;
	if (!err)
		err = dacce_scan_store_replace_file(path, file, size);
	free(file);
	free(picks);
	return err;
}
