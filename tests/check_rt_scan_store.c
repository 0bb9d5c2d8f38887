// SPDX-License-Identifier: MIT
/*
 * Scans kept in files (runtime/scan_store.h): what comes back from a file is
 * the scan made of the same bytes, moved to where the function is now; other
 * bytes, another module or another scanner miss; a damaged file never gives
 * a scan that differs from the one written.  And the cache directory must be
 * the user's own (runtime/scan_cache.h).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "funcs.h"
#include "funcs_store.h"
#include "modules.h"
#include "private_alloc.h"
#include "scan.h"
#include "scan_cache.h"
#include "scan_record.h"
#include "scan_store.h"

#define BASE ((uintptr_t)0x400000)
#define MOVED ((uintptr_t)0x7f0000123000)

static const struct dacce_scan_store_key key = { .module = 0x1234, .scanner = 0x5678 };

/* A function with a call, a call through a RIP-relative slot, a tail jump and padding. */
static const uint8_t code[] = {
	0x55,					/* 0: push %rbp */
	0xe8, 0x10, 0x00, 0x00, 0x00,		/* 1: call 0x16 (BASE + 0x16) */
	0xff, 0x15, 0x00, 0x10, 0x00, 0x00,	/* 6: call *0x1000(%rip) */
	0x5d,					/* 12: pop %rbp */
	0xff, 0xe0,				/* 13: jmp *%rax */
	0x0f, 0x1f, 0x44, 0x00, 0x00,		/* 15: nopl 0(%rax,%rax) */
	0x90,					/* 20: nop */
	0xc3,					/* 21: ret (unreached) */
};

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/check_scan_store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void path_in_dir(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", dir, name);
}

static void assert_same_scan(const struct dacce_scan *a, const struct dacce_scan *b)
{
	ck_assert_uint_eq(a->n, b->n);
	ck_assert_uint_eq(a->n_pads, b->n_pads);
	ck_assert_uint_eq(a->n_insns, b->n_insns);
	ck_assert_int_eq(a->stopped_early, b->stopped_early);
	ck_assert_uint_eq(a->stop_addr, b->stop_addr);
	for (size_t i = 0; i < a->n; i++) {
		const struct dacce_scan_site *x = &a->sites[i], *y = &b->sites[i];

		ck_assert_uint_eq(x->addr, y->addr);
		ck_assert_uint_eq(x->len, y->len);
		ck_assert_uint_eq(x->kind, y->kind);
		ck_assert_uint_eq(x->flags, y->flags);
		ck_assert_uint_eq(x->target, y->target);
		ck_assert_uint_eq(x->slot, y->slot);
		ck_assert_uint_eq(x->prev, y->prev);
		ck_assert_uint_eq(x->prev_len, y->prev_len);
		ck_assert_int_eq(x->prev_rip_disp, y->prev_rip_disp);
		ck_assert_uint_eq(x->prev2, y->prev2);
		ck_assert_uint_eq(x->prev2_len, y->prev2_len);
		ck_assert_int_eq(x->prev2_rip_disp, y->prev2_rip_disp);
		ck_assert_uint_eq(x->pad, y->pad);
		ck_assert_uint_eq(x->jump_table.table, y->jump_table.table);
		ck_assert_uint_eq(x->jump_table.entries, y->jump_table.entries);
		ck_assert_uint_eq(x->jump_table.entry_size, y->jump_table.entry_size);
		ck_assert_uint_eq(x->jump_table.guard, y->jump_table.guard);
	}
	for (size_t i = 0; i < a->n_pads; i++) {
		ck_assert_uint_eq(a->pads[i].start, b->pads[i].start);
		ck_assert_uint_eq(a->pads[i].len, b->pads[i].len);
	}
}

/* Writes path with the scan of code at BASE, filed at offset. */
static void write_one(const char *path, const uint8_t *bytes, size_t len, uint64_t offset,
		      struct dacce_scan *scan)
{
	struct dacce_scan_record rec;

	ck_assert_int_eq(dacce_scan_function(bytes, BASE, BASE, BASE + len, NULL, 0, scan), 0);
	ck_assert_int_eq(dacce_scan_record_make(scan, bytes, BASE, BASE + len, offset, &rec), 0);
	ck_assert_int_eq(dacce_scan_store_write(path, &key, NULL, &rec, 1), 0);
	dacce_scan_record_fini(&rec);
}

START_TEST(test_moved_function_reads_back_moved)
{
	struct dacce_scan scan, back, at_moved;
	struct dacce_scan_store store;
	char path[128];

	make_dir();
	path_in_dir(path, sizeof(path), "a.scans");
	write_one(path, code, sizeof(code), 0x10, &scan);
	ck_assert_uint_ge(scan.n, 3);
	ck_assert_int_eq(dacce_scan_store_open(path, &key, &store), 0);
	ck_assert_int_eq(dacce_scan_store_find(&store, 0x10, code, BASE, BASE + sizeof(code), &back),
			 0);
	assert_same_scan(&scan, &back);
	/* The same bytes elsewhere: every address moves with the function. */
	ck_assert_int_eq(dacce_scan_store_find(&store, 0x10, code, MOVED, MOVED + sizeof(code),
					       &at_moved), 0);
	ck_assert_int_eq(dacce_scan_function(code, MOVED, MOVED, MOVED + sizeof(code), NULL, 0,
					     &back), 0);
	assert_same_scan(&back, &at_moved);
	ck_assert_uint_eq(at_moved.sites[0].target, MOVED + 0x16);
	ck_assert_uint_eq(at_moved.sites[1].slot, MOVED + 12 + 0x1000);
	dacce_scan_fini(&scan);
	dacce_scan_fini(&back);
	dacce_scan_fini(&at_moved);
	dacce_scan_store_close(&store);
	remove_dir();
}
END_TEST

START_TEST(test_other_bytes_offset_or_length_miss)
{
	uint8_t changed[sizeof(code)];
	struct dacce_scan scan, back;
	struct dacce_scan_store store;
	char path[128];

	make_dir();
	path_in_dir(path, sizeof(path), "a.scans");
	write_one(path, code, sizeof(code), 0x10, &scan);
	ck_assert_int_eq(dacce_scan_store_open(path, &key, &store), 0);
	memcpy(changed, code, sizeof(code));
	changed[2] ^= 1; /* the call's target */
	ck_assert_int_eq(dacce_scan_store_find(&store, 0x10, changed, BASE, BASE + sizeof(code),
					       &back), -ENOENT);
	ck_assert_int_eq(dacce_scan_store_find(&store, 0x20, code, BASE, BASE + sizeof(code), &back),
			 -ENOENT);
	ck_assert_int_eq(dacce_scan_store_find(&store, 0x10, code, BASE, BASE + sizeof(code) - 1,
					       &back), -ENOENT);
	ck_assert_ptr_null(back.sites);
	dacce_scan_fini(&scan);
	dacce_scan_store_close(&store);
	remove_dir();
}
END_TEST

START_TEST(test_another_module_or_scanner_is_refused)
{
	struct dacce_scan_store_key other = key;
	struct dacce_scan_store store;
	struct dacce_scan scan;
	char path[128];

	make_dir();
	path_in_dir(path, sizeof(path), "a.scans");
	write_one(path, code, sizeof(code), 0x10, &scan);
	other.scanner++;
	ck_assert_int_eq(dacce_scan_store_open(path, &other, &store), -EINVAL);
	other = key;
	other.module++;
	ck_assert_int_eq(dacce_scan_store_open(path, &other, &store), -EINVAL);
	ck_assert_ptr_null(store.map);
	dacce_scan_store_close(&store);
	path_in_dir(path, sizeof(path), "missing.scans");
	ck_assert_int_eq(dacce_scan_store_open(path, &key, &store), -ENOENT);
	ck_assert_int_eq(dacce_scan_store_open(dir, &key, &store), -EINVAL);
	dacce_scan_fini(&scan);
	remove_dir();
}
END_TEST

static void write_bytes(const char *path, const uint8_t *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, bytes, len), (ssize_t)len);
	close(fd);
}

static uint8_t *read_bytes(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *bytes;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	bytes = malloc((size_t)st.st_size);
	ck_assert_ptr_nonnull(bytes);
	ck_assert_int_eq(read(fd, bytes, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return bytes;
}

/* Opens path and looks the scan up: 1 when it reads the same as scan, 0 when missed. */
static int read_back(const char *path, const struct dacce_scan *scan)
{
	struct dacce_scan_store store;
	struct dacce_scan back;
	int found;

	if (dacce_scan_store_open(path, &key, &store) != 0)
		return 0;
	found = dacce_scan_store_find(&store, 0x10, code, BASE, BASE + sizeof(code), &back) == 0;
	if (found)
		assert_same_scan(scan, &back);
	dacce_scan_fini(&back);
	dacce_scan_store_close(&store);
	return found;
}

START_TEST(test_damaged_file_never_reads_wrong)
{
	struct dacce_scan scan;
	uint8_t *good, *bad;
	size_t len, misses = 0;
	char path[128];

	make_dir();
	path_in_dir(path, sizeof(path), "a.scans");
	write_one(path, code, sizeof(code), 0x10, &scan);
	good = read_bytes(path, &len);
	bad = malloc(len);
	ck_assert_ptr_nonnull(bad);
	/* Every bit of the file flipped in turn. */
	for (size_t i = 0; i < len * 8; i++) {
		memcpy(bad, good, len);
		bad[i / 8] ^= (uint8_t)(1u << (i % 8));
		write_bytes(path, bad, len);
		misses += !read_back(path, &scan);
	}
	/* Only reserved or padding bits may flip unnoticed: most flips must miss. */
	ck_assert_uint_gt(misses, len * 8 / 2);
	/* Every truncation, and garbage the size of the file. */
	for (size_t cut = 0; cut < len; cut++) {
		write_bytes(path, good, cut);
		ck_assert_int_eq(read_back(path, &scan), 0);
	}
	for (size_t i = 0; i < len; i++)
		bad[i] = (uint8_t)(i * 131 + 7);
	write_bytes(path, bad, len);
	ck_assert_int_eq(read_back(path, &scan), 0);
	write_bytes(path, good, len);
	ck_assert_int_eq(read_back(path, &scan), 1);
	free(good);
	free(bad);
	dacce_scan_fini(&scan);
	remove_dir();
}
END_TEST

START_TEST(test_merge_keeps_old_and_prefers_new)
{
	uint8_t other[sizeof(code)];
	struct dacce_scan scan, scan2, back;
	struct dacce_scan_record recs[2];
	struct dacce_scan_store old, merged;
	char path[128];

	make_dir();
	path_in_dir(path, sizeof(path), "a.scans");
	write_one(path, code, sizeof(code), 0x10, &scan);
	ck_assert_int_eq(dacce_scan_store_open(path, &key, &old), 0);
	memcpy(other, code, sizeof(code));
	other[2] = 0x20;
	ck_assert_int_eq(dacce_scan_function(other, BASE, BASE, BASE + sizeof(other), NULL, 0,
					     &scan2), 0);
	/* The same bytes at another offset, and other bytes over offset 0x10. */
	ck_assert_int_eq(dacce_scan_record_make(&scan, code, BASE, BASE + sizeof(code), 0x8,
						&recs[0]), 0);
	ck_assert_int_eq(dacce_scan_record_make(&scan2, other, BASE, BASE + sizeof(other), 0x10,
						&recs[1]), 0);
	ck_assert_int_eq(dacce_scan_store_write(path, &key, &old, recs, 2), 0);
	dacce_scan_store_close(&old);
	ck_assert_int_eq(dacce_scan_store_open(path, &key, &merged), 0);
	ck_assert_uint_eq(merged.n, 2);
	ck_assert_int_eq(dacce_scan_store_find(&merged, 0x8, code, BASE, BASE + sizeof(code), &back),
			 0);
	assert_same_scan(&scan, &back);
	dacce_scan_fini(&back);
	ck_assert_int_eq(dacce_scan_store_find(&merged, 0x10, code, BASE, BASE + sizeof(code),
					       &back), -ENOENT);
	ck_assert_int_eq(dacce_scan_store_find(&merged, 0x10, other, BASE, BASE + sizeof(other),
					       &back), 0);
	assert_same_scan(&scan2, &back);
	ck_assert_uint_eq(back.sites[0].target, BASE + 0x26);
	dacce_scan_fini(&back);
	dacce_scan_store_close(&merged);
	dacce_scan_record_fini(&recs[0]);
	dacce_scan_record_fini(&recs[1]);
	dacce_scan_fini(&scan);
	dacce_scan_fini(&scan2);
	remove_dir();
}
END_TEST

/* A scan with every field set, far addresses both ways, as records must keep them. */
static void make_full_scan(struct dacce_scan *scan, uintptr_t start)
{
	static struct dacce_scan_site sites[3];
	static struct dacce_scan_pad pads[2];

	memset(sites, 0, sizeof(sites));
	sites[0] = (struct dacce_scan_site){
		.addr = start + 3, .len = 5, .kind = DACCE_SITE_DIRECT, .target = start - 0x7fff0000,
		.prev = start, .prev_len = 3, .prev_rip_disp = -1, .prev2_len = 2,
		.prev2_rip_disp = -1,
	};
	sites[1] = (struct dacce_scan_site){
		.addr = start + 0x30, .len = 6, .kind = DACCE_SITE_INDIRECT,
		.flags = DACCE_SCAN_MEM | DACCE_SCAN_NOTRACK, .slot = start + 0xc0000000ull,
		.prev = start + 0x29, .prev_len = 7, .prev_rip_disp = 3, .prev2 = start + 0x20,
		.prev2_len = 9, .prev2_rip_disp = DACCE_SCAN_PREV_JCC,
	};
	sites[2] = (struct dacce_scan_site){
		.addr = start + 0x1000, .len = 2, .kind = DACCE_SITE_TAIL_INDIRECT,
		.flags = DACCE_SCAN_REG | DACCE_SCAN_SHORT | DACCE_SCAN_JUMP_TABLE, .pad = 11,
		.jump_table = { .table = start + 0x123456789ull, .entries = 0xfffffff0u,
				.entry_size = 4, .guard = start + 0xff0 },
	};
	pads[0] = (struct dacce_scan_pad){ .start = start + 0x1002, .len = 14, .used = 0 };
	pads[1] = (struct dacce_scan_pad){ .start = start + 0x2000, .len = 255, .used = 7 };
	*scan = (struct dacce_scan){ .sites = sites, .n = 3, .pads = pads, .n_pads = 2,
				     .n_insns = 1234, .stopped_early = true,
				     .stop_addr = start + 0x2010 };
}

START_TEST(test_record_keeps_every_field)
{
	struct dacce_scan scan, back;
	uint8_t *bytes;
	size_t len;

	make_full_scan(&scan, BASE);
	ck_assert_int_eq(dacce_scan_record_encode(&scan, BASE, &bytes, &len), 0);
	ck_assert_uint_lt(len, 120); /* variable-length: far smaller than the structs */
	ck_assert_int_eq(dacce_scan_record_decode(bytes, len, BASE, 0x3000, &back), 0);
	assert_same_scan(&scan, &back);
	dacce_scan_fini(&back);
	/* Elsewhere, every address moves with the start. */
	ck_assert_int_eq(dacce_scan_record_decode(bytes, len, MOVED, 0x3000, &back), 0);
	make_full_scan(&scan, MOVED);
	assert_same_scan(&scan, &back);
	dacce_scan_fini(&back);
	dacce_free(bytes); /* the runtime's heap (private_alloc.h) */
}
END_TEST

START_TEST(test_record_refuses_what_is_not_one)
{
	struct dacce_scan scan, back;
	uint8_t *bytes, *longer;
	size_t len;

	make_full_scan(&scan, BASE);
	ck_assert_int_eq(dacce_scan_record_encode(&scan, BASE, &bytes, &len), 0);
	/* Every prefix is short of something. */
	for (size_t cut = 0; cut < len; cut++) {
		ck_assert_int_eq(dacce_scan_record_decode(bytes, cut, BASE, 0x3000, &back), -EINVAL);
		ck_assert_ptr_null(back.sites);
	}
	/* A byte more is not one record. */
	longer = malloc(len + 1);
	ck_assert_ptr_nonnull(longer);
	memcpy(longer, bytes, len);
	longer[len] = 0;
	ck_assert_int_eq(dacce_scan_record_decode(longer, len + 1, BASE, 0x3000, &back), -EINVAL);
	/* A function too short for its sites and pads. */
	ck_assert_int_eq(dacce_scan_record_decode(bytes, len, BASE, 0x2000, &back), -EINVAL);
	ck_assert_int_eq(dacce_scan_record_decode(bytes, len, BASE, 0x1000, &back), -EINVAL);
	/* A varint that never ends. */
	memset(longer, 0xff, len + 1);
	ck_assert_int_eq(dacce_scan_record_decode(longer, len + 1, BASE, 0x3000, &back), -EINVAL);
	free(longer);
	dacce_free(bytes);
}
END_TEST

/* Every function of this program scanned, written, read back: the same scans. */
START_TEST(test_real_functions_round_trip)
{
	struct dacce_modules mods;
	const struct dacce_module_info *exe = NULL;
	struct dacce_funcs funcs;
	struct dacce_scan_record *recs;
	struct dacce_scan_store store;
	size_t n = 0, found = 0;
	char path[128];

	make_dir();
	path_in_dir(path, sizeof(path), "exe.scans");
	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	for (size_t i = 0; i < mods.n; i++)
		if (mods.mods[i].is_main)
			exe = &mods.mods[i];
	ck_assert_ptr_nonnull(exe);
	ck_assert_int_eq(dacce_funcs_load(exe, &funcs), 0);
	recs = calloc(funcs.n, sizeof(*recs));
	ck_assert_ptr_nonnull(recs);
	for (size_t i = 0; i < funcs.n; i++) {
		const struct dacce_func *f = &funcs.funcs[i];
		struct dacce_scan scan;

		if (dacce_scan_function((const uint8_t *)f->start, f->start, f->start, f->end,
					funcs.plt, funcs.n_plt, &scan) != 0)
			continue;
		ck_assert_int_eq(dacce_scan_record_make(&scan, (const uint8_t *)f->start, f->start,
							f->end, f->start - exe->bias, &recs[n++]), 0);
		dacce_scan_fini(&scan);
	}
	ck_assert_uint_gt(n, 500);
	ck_assert_int_eq(dacce_scan_store_write(path, &key, NULL, recs, n), 0);
	ck_assert_int_eq(dacce_scan_store_open(path, &key, &store), 0);
	for (size_t i = 0; i < funcs.n; i++) {
		const struct dacce_func *f = &funcs.funcs[i];
		struct dacce_scan scan, back;

		if (dacce_scan_function((const uint8_t *)f->start, f->start, f->start, f->end,
					funcs.plt, funcs.n_plt, &scan) != 0)
			continue;
		ck_assert_int_eq(dacce_scan_store_find(&store, f->start - exe->bias,
						       (const uint8_t *)f->start, f->start, f->end,
						       &back), 0);
		assert_same_scan(&scan, &back);
		found++;
		dacce_scan_fini(&scan);
		dacce_scan_fini(&back);
	}
	ck_assert_uint_eq(found, n);
	for (size_t i = 0; i < n; i++)
		dacce_scan_record_fini(&recs[i]);
	free(recs);
	dacce_scan_store_close(&store);
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
	remove_dir();
}
END_TEST

static const struct dacce_module_info *own_module(struct dacce_modules *mods)
{
	const struct dacce_module_info *exe = NULL;

	ck_assert_int_eq(dacce_modules_scan(mods), 0);
	for (size_t i = 0; i < mods->n; i++)
		if (mods->mods[i].is_main)
			exe = &mods->mods[i];
	ck_assert_ptr_nonnull(exe);
	return exe;
}

static void assert_same_table(const struct dacce_funcs *a, const struct dacce_funcs *b,
			      uintptr_t moved_by)
{
	ck_assert_uint_eq(a->n, b->n);
	ck_assert_uint_eq(a->n_plt, b->n_plt);
	ck_assert_uint_eq(a->n_got, b->n_got);
	for (size_t i = 0; i < a->n_plt; i++) {
		ck_assert_uint_eq(a->plt[i].start + moved_by, b->plt[i].start);
		ck_assert_uint_eq(a->plt[i].end + moved_by, b->plt[i].end);
	}
	for (size_t i = 0; i < a->n_got; i++) {
		ck_assert_uint_eq(a->got[i].start + moved_by, b->got[i].start);
		ck_assert_uint_eq(a->got[i].end + moved_by, b->got[i].end);
	}
	for (size_t i = 0; i < a->n; i++) {
		ck_assert_uint_eq(a->funcs[i].start + moved_by, b->funcs[i].start);
		ck_assert_uint_eq(a->funcs[i].end + moved_by, b->funcs[i].end);
		ck_assert_uint_eq(a->funcs[i].flags, b->funcs[i].flags);
		ck_assert_int_eq(!a->funcs[i].name, !b->funcs[i].name);
		if (a->funcs[i].name)
			ck_assert_str_eq(a->funcs[i].name, b->funcs[i].name);
	}
}

/* This program's function table, written and read back, here and moved; damage refused. */
START_TEST(test_function_table_round_trip)
{
	struct dacce_modules mods;
	const struct dacce_module_info *exe = own_module(&mods);
	struct dacce_funcs funcs, back;
	uint8_t *good, *bad;
	size_t len, refused = 0;
	char path[128];

	make_dir();
	path_in_dir(path, sizeof(path), "exe.funcs");
	ck_assert_int_eq(dacce_funcs_load(exe, &funcs), 0);
	ck_assert_uint_gt(funcs.n, 500);
	ck_assert_int_eq(dacce_funcs_store_write(path, 42, exe->bias, &funcs), 0);
	ck_assert_int_eq(dacce_funcs_store_read(path, 42, exe->bias, &back), 0);
	assert_same_table(&funcs, &back, 0);
	dacce_funcs_fini(&back);
	ck_assert_int_eq(dacce_funcs_store_read(path, 42, exe->bias + 0x100000, &back), 0);
	assert_same_table(&funcs, &back, 0x100000);
	dacce_funcs_fini(&back);
	ck_assert_int_eq(dacce_funcs_store_read(path, 43, exe->bias, &back), -EINVAL);
	ck_assert_ptr_null(back.funcs);
	/* A flipped bit anywhere (every 97th of them), or a cut, reads as no table. */
	good = read_bytes(path, &len);
	bad = malloc(len);
	ck_assert_ptr_nonnull(bad);
	for (size_t bit = 0; bit < len * 8; bit += 97) {
		memcpy(bad, good, len);
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		write_bytes(path, bad, len);
		if (dacce_funcs_store_read(path, 42, exe->bias, &back) == 0) {
			assert_same_table(&funcs, &back, 0); /* only unused padding may flip */
			dacce_funcs_fini(&back);
		} else {
			refused++;
		}
	}
	ck_assert_uint_gt(refused, len * 8 / 97 * 9 / 10);
	write_bytes(path, good, len / 2);
	ck_assert_int_eq(dacce_funcs_store_read(path, 42, exe->bias, &back), -EINVAL);
	free(good);
	free(bad);
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
	remove_dir();
}
END_TEST

/* The cache of a module, with the directory as DACCE_CACHE_DIR names it. */
static struct dacce_scan_cache *cache_with_dir(const char *cache_dir, struct dacce_modules *mods,
					       struct dacce_funcs *funcs)
{
	const struct dacce_module_info *exe = NULL;

	setenv("DACCE_CACHE_DIR", cache_dir, 1);
	ck_assert_int_eq(dacce_modules_scan(mods), 0);
	for (size_t i = 0; i < mods->n; i++)
		if (mods->mods[i].is_main)
			exe = &mods->mods[i];
	ck_assert_ptr_nonnull(exe);
	ck_assert_uint_gt(exe->build_id_len, 0);
	ck_assert_int_eq(dacce_funcs_load(exe, funcs), 0);
	dacce_scan_cache_setup(exe);
	return dacce_scan_cache_for(exe, funcs);
}

START_TEST(test_cache_directory_must_be_private)
{
	struct dacce_modules mods;
	struct dacce_funcs funcs;
	char shared[128], made[128];
	struct stat st;

	make_dir();
	snprintf(shared, sizeof(shared), "%s/shared", dir);
	ck_assert_int_eq(mkdir(shared, 0777), 0);
	ck_assert_int_eq(chmod(shared, 0777), 0);
	ck_assert_ptr_null(cache_with_dir(shared, &mods, &funcs));
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
	/* Missing: made, for the user alone. */
	snprintf(made, sizeof(made), "%s/made", dir);
	ck_assert_ptr_nonnull(cache_with_dir(made, &mods, &funcs));
	ck_assert_int_eq(stat(made, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
	setenv("DACCE_CACHE", "0", 1);
	ck_assert_ptr_null(cache_with_dir(made, &mods, &funcs));
	unsetenv("DACCE_CACHE");
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
	remove_dir();
}
END_TEST

static Suite *scan_store_suite(void)
{
	Suite *s = suite_create("rt_scan_store");
	TCase *store = tcase_create("store");
	TCase *cache = tcase_create("cache");

	tcase_add_test(store, test_record_keeps_every_field);
	tcase_add_test(store, test_record_refuses_what_is_not_one);
	tcase_add_test(store, test_moved_function_reads_back_moved);
	tcase_add_test(store, test_other_bytes_offset_or_length_miss);
	tcase_add_test(store, test_another_module_or_scanner_is_refused);
	tcase_add_test(store, test_damaged_file_never_reads_wrong);
	tcase_add_test(store, test_merge_keeps_old_and_prefers_new);
	tcase_add_test(store, test_real_functions_round_trip);
	tcase_add_test(store, test_function_table_round_trip);
	tcase_set_timeout(store, 60);
	suite_add_tcase(s, store);
	tcase_add_test(cache, test_cache_directory_must_be_private);
	suite_add_tcase(s, cache);
	return s;
}

int main(void)
{
	return run_suite(scan_store_suite());
}
