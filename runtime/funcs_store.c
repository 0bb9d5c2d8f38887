// SPDX-License-Identifier: MIT
#include "funcs_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan_store.h"

static const char funcs_magic[8] = { 'D', 'A', 'C', 'C', 'E', 'F', 'N', 1 };

#define NO_NAME UINT32_MAX

struct funcs_header {
	char magic[8];
	uint64_t key;
	uint64_t body_hash; /* of everything after the header */
	uint64_t size;	    /* of the whole file */
	uint32_t n, names_len, n_plt, n_got;
};

struct stored_range {
	uint64_t start, end; /* from the bias */
};

struct stored_func {
	uint64_t start, end;
	uint32_t name; /* offset in the names, or NO_NAME */
	uint32_t flags;
};

static size_t body_size(const struct funcs_header *h)
{
	return (size_t)(h->n_plt + h->n_got) * sizeof(struct stored_range) +
	       (size_t)h->n * sizeof(struct stored_func) + h->names_len;
}

/* Every count in bounds, every name inside the names and ended, functions sorted apart. */
static bool body_valid(const struct funcs_header *h, const struct stored_func *f,
		       const char *names)
{
	if (h->names_len && names[h->names_len - 1] != '\0')
		return false;
	for (uint32_t i = 0; i < h->n; i++) {
		if (f[i].start > f[i].end || (i > 0 && f[i].start < f[i - 1].end) ||
		    (f[i].name != NO_NAME && f[i].name >= h->names_len))
			return false;
	}
	return true;
}

static void load_ranges(const struct stored_range *in, uint32_t n, uintptr_t bias,
			struct dacce_range *out)
{
	for (uint32_t i = 0; i < n; i++)
		out[i] = (struct dacce_range){ bias + (uintptr_t)in[i].start,
					       bias + (uintptr_t)in[i].end };
}

/* The table of the checked file at map, moved to bias. */
static int load_table(const uint8_t *map, uintptr_t bias, struct dacce_funcs *out)
{
	const struct funcs_header *h = (const struct funcs_header *)map;
	const struct stored_range *ranges = (const struct stored_range *)(map + sizeof(*h));
	const struct stored_func *f = (const struct stored_func *)(ranges + h->n_plt + h->n_got);
	const char *names = (const char *)(f + h->n);

	out->funcs = calloc(h->n ? h->n : 1, sizeof(*out->funcs));
	out->names = malloc(h->names_len ? h->names_len : 1);
	if (!out->funcs || !out->names)
		return -ENOMEM;
	memcpy(out->names, names, h->names_len);
	for (uint32_t i = 0; i < h->n; i++)
		out->funcs[i] = (struct dacce_func){
			.start = bias + (uintptr_t)f[i].start, .end = bias + (uintptr_t)f[i].end,
			.name = f[i].name == NO_NAME ? NULL : out->names + f[i].name,
			.flags = f[i].flags,
		};
	out->n = h->n;
	load_ranges(ranges, h->n_plt, bias, out->plt);
	load_ranges(ranges + h->n_plt, h->n_got, bias, out->got);
	out->n_plt = h->n_plt;
	out->n_got = h->n_got;
	return 0;
}

int dacce_funcs_store_read(const char *path, uint64_t key, uintptr_t bias,
			   struct dacce_funcs *out)
{
	struct funcs_header h;
	const uint8_t *map = MAP_FAILED;
	struct stat st;
	int fd, err = -EINVAL;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(h) ||
	    (uint64_t)st.st_size > DACCE_SCAN_STORE_MAX_BYTES)
		goto cleanup;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(&h, map, sizeof(h));
	if (memcmp(h.magic, funcs_magic, sizeof(h.magic)) != 0 || h.key != key ||
	    h.size != (uint64_t)st.st_size || h.n_plt > DACCE_FUNCS_MAX_PLT ||
	    h.n_got > DACCE_FUNCS_MAX_GOT || h.n > (uint64_t)st.st_size / sizeof(struct stored_func) ||
	    h.names_len > (uint64_t)st.st_size || sizeof(h) + body_size(&h) != h.size ||
	    dacce_scan_store_hash(map + sizeof(h), body_size(&h)) != h.body_hash)
		goto cleanup;
	{
		const struct stored_func *f =
			(const struct stored_func *)(map + sizeof(h) +
						     (size_t)(h.n_plt + h.n_got) *
							     sizeof(struct stored_range));

		if (!body_valid(&h, f, (const char *)(f + h.n)))
			goto cleanup;
	}
	err = load_table(map, bias, out);
	if (err)
		dacce_funcs_fini(out);
cleanup:
	if (map != MAP_FAILED)
		munmap((void *)map, (size_t)st.st_size);
	close(fd);
	return err;
}

static void store_ranges(const struct dacce_range *in, size_t n, uintptr_t bias,
			 struct stored_range *out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (struct stored_range){ in[i].start - bias, in[i].end - bias };
}

int dacce_funcs_store_write(const char *path, uint64_t key, uintptr_t bias,
			    const struct dacce_funcs *funcs)
{
	struct funcs_header h = { .key = key, .n = (uint32_t)funcs->n,
				  .n_plt = (uint32_t)funcs->n_plt, .n_got = (uint32_t)funcs->n_got };
	struct stored_range *ranges;
	struct stored_func *f;
	size_t names_len = 0, size;
	uint8_t *file;
	char *names;
	int err;

	for (size_t i = 0; i < funcs->n; i++)
		if (funcs->funcs[i].name)
			names_len += strlen(funcs->funcs[i].name) + 1;
	if (funcs->n >= UINT32_MAX || names_len >= UINT32_MAX || funcs->n_plt > DACCE_FUNCS_MAX_PLT ||
	    funcs->n_got > DACCE_FUNCS_MAX_GOT)
		return -EFBIG;
	h.names_len = (uint32_t)names_len;
	size = sizeof(h) + body_size(&h);
	if (size > DACCE_SCAN_STORE_MAX_BYTES)
		return -EFBIG;
	file = calloc(1, size);
	if (!file)
		return -ENOMEM;
	ranges = (struct stored_range *)(file + sizeof(h));
	store_ranges(funcs->plt, funcs->n_plt, bias, ranges);
	store_ranges(funcs->got, funcs->n_got, bias, ranges + funcs->n_plt);
	f = (struct stored_func *)(ranges + funcs->n_plt + funcs->n_got);
	names = (char *)(f + funcs->n);
	names_len = 0;
	for (size_t i = 0; i < funcs->n; i++) {
		const struct dacce_func *fn = &funcs->funcs[i];

		f[i] = (struct stored_func){ fn->start - bias, fn->end - bias, NO_NAME, fn->flags };
		if (fn->name) {
			size_t len = strlen(fn->name) + 1;

			f[i].name = (uint32_t)names_len;
			memcpy(names + names_len, fn->name, len);
			names_len += len;
		}
	}
	memcpy(h.magic, funcs_magic, sizeof(h.magic));
	h.size = size;
	h.body_hash = dacce_scan_store_hash(file + sizeof(h), size - sizeof(h));
	memcpy(file, &h, sizeof(h));
	err = dacce_scan_store_replace_file(path, file, size);
	free(file);
	return err;
}
