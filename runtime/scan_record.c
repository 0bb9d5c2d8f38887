// SPDX-License-Identifier: MIT
#include "scan_record.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Which optional parts a site's record holds. */
enum {
	HAS_TARGET = 1 << 0,
	HAS_SLOT = 1 << 1,
	HAS_PREV = 1 << 2,
	HAS_PREV2 = 1 << 3,
	HAS_TABLE = 1 << 4, /* the jump table: its address, bound, entry size and guard */
	HAS_PAD = 1 << 5,
};

#define STOPPED_EARLY 1
#define HAS_STOP 2

/* The most one site, pad or header takes: every varint at its 10 bytes. */
#define SITE_MAX (10 + 4 + 2 * 10 + 2 * (10 + 2) + 1 + 3 * 10 + 1)
#define PAD_MAX (10 + 2)
#define HEAD_MAX (3 * 10 + 1 + 10)

struct writer {
	uint8_t *p;
};

static void put_u8(struct writer *w, uint8_t v)
{
	*w->p++ = v;
}

static void put_varint(struct writer *w, uint64_t v)
{
	while (v >= 0x80) {
		*w->p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*w->p++ = (uint8_t)v;
}

/* A distance that may be negative (modulo 2^64), small either way. */
static void put_delta(struct writer *w, uintptr_t to, uintptr_t from)
{
	int64_t d = (int64_t)(uint64_t)(to - from);

	put_varint(w, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
}

static void put_site(struct writer *w, const struct dacce_scan_site *s, uintptr_t last)
{
	const struct dacce_jump_table *jt = &s->jump_table;
	uint8_t has = (s->target ? HAS_TARGET : 0) | (s->slot ? HAS_SLOT : 0) |
		      (s->prev ? HAS_PREV : 0) | (s->prev2 ? HAS_PREV2 : 0) |
		      (jt->table || jt->entries || jt->entry_size || jt->guard ? HAS_TABLE : 0) |
		      (s->pad ? HAS_PAD : 0);

	put_delta(w, s->addr, last);
	put_u8(w, has);
	put_u8(w, s->len);
	put_u8(w, s->kind);
	put_u8(w, s->flags);
	put_u8(w, s->prev_len);
	put_u8(w, (uint8_t)s->prev_rip_disp);
	put_u8(w, s->prev2_len);
	put_u8(w, (uint8_t)s->prev2_rip_disp);
	if (has & HAS_TARGET)
		put_delta(w, s->target, s->addr);
	if (has & HAS_SLOT)
		put_delta(w, s->slot, s->addr);
	if (has & HAS_PREV)
		put_delta(w, s->addr, s->prev);
	if (has & HAS_PREV2)
		put_delta(w, s->addr, s->prev2);
	if (has & HAS_PAD)
		put_u8(w, s->pad);
	if (has & HAS_TABLE) {
		put_delta(w, jt->table, s->addr);
		put_varint(w, jt->entries);
		put_u8(w, jt->entry_size);
		put_delta(w, s->addr, jt->guard);
	}
}

int dacce_scan_record_encode(const struct dacce_scan *scan, uintptr_t start, uint8_t **bytes,
			     size_t *len)
{
	struct writer w;
	uintptr_t last = start;
	uint8_t *buf;

	*bytes = NULL;
	*len = 0;
	if (!scan || scan->n > SIZE_MAX / 2 / SITE_MAX || scan->n_pads > SIZE_MAX / 2 / PAD_MAX)
		return -EINVAL;
	buf = malloc(HEAD_MAX + scan->n * SITE_MAX + scan->n_pads * PAD_MAX);
	if (!buf)
		return -ENOMEM;
	w.p = buf;
	put_varint(&w, scan->n);
	put_varint(&w, scan->n_pads);
	put_varint(&w, scan->n_insns);
	put_u8(&w, (scan->stopped_early ? STOPPED_EARLY : 0) | (scan->stop_addr ? HAS_STOP : 0));
	if (scan->stop_addr)
		put_delta(&w, scan->stop_addr, start);
	for (size_t i = 0; i < scan->n; i++) {
		put_site(&w, &scan->sites[i], last);
		last = scan->sites[i].addr;
	}
	for (size_t i = 0; i < scan->n_pads; i++) {
		put_delta(&w, scan->pads[i].start, start);
		put_u8(&w, scan->pads[i].len);
		put_u8(&w, scan->pads[i].used);
	}
	*bytes = buf;
	*len = (size_t)(w.p - buf);
	return 0;
}

/* Reads from a record; any read past its end sets bad and returns 0. */
struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint8_t get_u8(struct reader *r)
{
	if (r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

static uint64_t get_varint(struct reader *r)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b = get_u8(r);

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true; /* longer than 64 bits */
	return 0;
}

static uintptr_t get_delta(struct reader *r, uintptr_t from, int sign)
{
	uint64_t z = get_varint(r);
	int64_t d = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);

	return sign > 0 ? from + (uintptr_t)d : from - (uintptr_t)d;
}

static void get_site(struct reader *r, uintptr_t last, struct dacce_scan_site *s)
{
	struct dacce_jump_table *jt = &s->jump_table;
	uint8_t has;

	memset(s, 0, sizeof(*s));
	s->addr = get_delta(r, last, 1);
	has = get_u8(r);
	s->len = get_u8(r);
	s->kind = get_u8(r);
	s->flags = get_u8(r);
	s->prev_len = get_u8(r);
	s->prev_rip_disp = (int8_t)get_u8(r);
	s->prev2_len = get_u8(r);
	s->prev2_rip_disp = (int8_t)get_u8(r);
	if (has & HAS_TARGET)
		s->target = get_delta(r, s->addr, 1);
	if (has & HAS_SLOT)
		s->slot = get_delta(r, s->addr, 1);
	if (has & HAS_PREV)
		s->prev = get_delta(r, s->addr, -1);
	if (has & HAS_PREV2)
		s->prev2 = get_delta(r, s->addr, -1);
	if (has & HAS_PAD)
		s->pad = get_u8(r);
	if (has & HAS_TABLE) {
		uint64_t entries;

		jt->table = get_delta(r, s->addr, 1);
		entries = get_varint(r);
		jt->entries = (uint32_t)entries;
		jt->entry_size = get_u8(r);
		jt->guard = get_delta(r, s->addr, -1);
		r->bad |= entries > UINT32_MAX;
	}
	r->bad |= (has & ~(HAS_TARGET | HAS_SLOT | HAS_PREV | HAS_PREV2 | HAS_TABLE | HAS_PAD)) != 0;
}

/* An address of the function [start, start + code_len). */
static bool inside(uintptr_t addr, uintptr_t start, uint64_t code_len)
{
	return addr >= start && addr - start < code_len;
}

int dacce_scan_record_decode(const uint8_t *bytes, size_t len, uintptr_t start, uint64_t code_len,
			     struct dacce_scan *out)
{
	struct reader r = { .p = bytes, .end = bytes + len };
	uint64_t n_sites, n_pads, n_insns;
	uintptr_t last = start;
	uint8_t flags;

	memset(out, 0, sizeof(*out));
	if (!bytes)
		return -EINVAL;
	n_sites = get_varint(&r);
	n_pads = get_varint(&r);
	n_insns = get_varint(&r);
	flags = get_u8(&r);
	/* Every site takes 9 bytes at least, every pad 3, every instruction one byte of code. */
	if (r.bad || n_sites > len / 9 || n_pads > len / 3 || n_insns > code_len ||
	    (flags & ~(STOPPED_EARLY | HAS_STOP)))
		return -EINVAL;
	if (flags & HAS_STOP)
		out->stop_addr = get_delta(&r, start, 1);
	out->stopped_early = flags & STOPPED_EARLY;
	out->n_insns = (size_t)n_insns;
	out->sites = n_sites ? malloc(n_sites * sizeof(*out->sites)) : NULL;
	out->pads = n_pads ? malloc(n_pads * sizeof(*out->pads)) : NULL;
	if ((n_sites && !out->sites) || (n_pads && !out->pads)) {
		dacce_scan_fini(out);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n_sites && !r.bad; i++) {
		get_site(&r, last, &out->sites[i]);
		r.bad |= !inside(out->sites[i].addr, start, code_len);
		last = out->sites[i].addr;
	}
	for (uint64_t i = 0; i < n_pads && !r.bad; i++) {
		out->pads[i] = (struct dacce_scan_pad){ .start = get_delta(&r, start, 1) };
		out->pads[i].len = get_u8(&r);
		out->pads[i].used = get_u8(&r);
		r.bad |= !inside(out->pads[i].start, start, code_len);
	}
	if (r.bad || r.p != r.end) {
		dacce_scan_fini(out);
		return -EINVAL;
	}
	out->n = out->cap = (size_t)n_sites;
	out->n_pads = out->cap_pads = (size_t)n_pads;
	return 0;
}
