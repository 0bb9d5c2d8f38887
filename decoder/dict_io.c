// SPDX-License-Identifier: MIT
/*
 * Dictionary files (docs/dictionary-format.md).  Every multi-byte field is
 * written byte by byte in little-endian order, so the format does not depend
 * on the host.  The reader first checks the framing (magic, version, sizes,
 * checksum), then decodes the payload into a dictionary, then checks that
 * the dictionary is consistent, then builds the decoder's index (in_range).  The writer runs the same consistency check
 * so it never produces a file the reader would refuse.
 */
#include "dict_io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hashmap.h"

#define MAGIC_LEN 8u
#define HEADER_SIZE 32u
#define HEADER_VERSION_END 12u	/* magic + version: enough to tell the version */

/* Header field offsets. */
#define OFF_VERSION 8u
#define OFF_HEADER_SIZE 12u
#define OFF_PAYLOAD_LEN 16u
#define OFF_CRC 24u
#define OFF_FLAGS 28u

/* Payload record sizes. */
#define SCALARS_SIZE (3u * 8u + 1u + 5u * 4u) /* epoch, max_id, id_limit, flag, counts */
#define NODE_SIZE 9u			      /* num_cc u64, dummy u8 */
#define OFFSET_SIZE 4u			      /* in_start and in_edges entries */
#define SITE_SIZE 5u			      /* caller u32, kind u8 */
#define EDGE_SIZE 22u			      /* site, caller, callee u32; class, compress u8; en u64 */
#define TABLE_HEADER_SIZE 8u		      /* site u32, bits u32 */
#define SLOT_SIZE 8u			      /* callee u32, edge u32 */

#define DISPATCH_BITS_MIN 1u
#define DISPATCH_BITS_MAX 24u
#define ID_LIMIT_MAX (1ULL << 62)

/* ------------------------------------------------------------ byte order */

static void put_u8(uint8_t **pos, uint8_t value)
{
	*(*pos)++ = value;
}

static void put_u32(uint8_t **pos, uint32_t value)
{
	for (unsigned i = 0; i < 4; i++)
		(*pos)[i] = (uint8_t)(value >> (8 * i));
	*pos += 4;
}

static void put_u64(uint8_t **pos, uint64_t value)
{
	for (unsigned i = 0; i < 8; i++)
		(*pos)[i] = (uint8_t)(value >> (8 * i));
	*pos += 8;
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* A bounded cursor over the payload. */
struct reader {
	const uint8_t *pos;
	size_t left;
};

/* Returns the next n bytes and consumes them, or NULL when fewer are left. */
static const uint8_t *take(struct reader *in, uint64_t n)
{
	const uint8_t *start = in->pos;

	if (n > in->left)
		return NULL;
	in->pos += n;
	in->left -= n;
	return start;
}

static uint32_t payload_crc(const uint8_t *p, size_t len)
{
	uLong crc = crc32(0L, Z_NULL, 0);

	/* crc32() takes a uInt length: feed large payloads in pieces. */
	while (len) {
		uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;

		crc = crc32(crc, p, chunk);
		p += chunk;
		len -= chunk;
	}
	return (uint32_t)crc;
}

static int reject(const char **why, int err, const char *message)
{
	*why = message;
	return err;
}

/* ------------------------------------------------------------ validation */

static const uint8_t root_site_kind[DACCE_NR_ROOT_SITES] = {
	[DACCE_ROOT_SITE_MAIN] = DACCE_SITE_ROOT_MAIN,
	[DACCE_ROOT_SITE_THREAD] = DACCE_SITE_ROOT_THREAD,
	[DACCE_ROOT_SITE_SIGNAL] = DACCE_SITE_ROOT_SIGNAL,
	[DACCE_ROOT_SITE_CALLBACK] = DACCE_SITE_ROOT_CALLBACK,
};

static int check_counts(const struct dacce_dict *d, const char **why)
{
	if (d->n_nodes == 0)
		return reject(why, -EBADMSG, "no root node");
	if (d->n_sites < DACCE_NR_ROOT_SITES)
		return reject(why, -EBADMSG, "root sites missing");
	/* DACCE_NONE marks "no index" everywhere, so no index may reach it. */
	if (d->n_nodes >= DACCE_NONE || d->n_sites >= DACCE_NONE || d->n_edges >= DACCE_NONE)
		return reject(why, -EBADMSG, "count too large");
	return 0;
}

static int check_ids(const struct dacce_dict *d, const char **why)
{
	if (d->id_limit > ID_LIMIT_MAX)
		return reject(why, -EBADMSG, "id_limit above 2^62");
	if (d->max_id >= d->id_limit)
		return reject(why, -EBADMSG, "max_id not below id_limit");
	return 0;
}

static int check_nodes(const struct dacce_dict *d, const char **why)
{
	uint64_t largest = 0;

	for (uint32_t n = 0; n < d->n_nodes; n++) {
		if (d->dummy[n] > DACCE_DUMMY_LEAF)
			return reject(why, -EBADMSG, "dummy flag not 0, 1 or 2");
		/* Bounds every num_cc by 2^62, so sums of two never overflow below. */
		if (d->num_cc[n] > d->max_id + 1)
			return reject(why, -EBADMSG, "num_cc above max_id + 1");
		if (d->dummy[n] && d->num_cc[n] == 0)
			return reject(why, -EBADMSG, "dummy node without ids");
		if (d->num_cc[n] > largest)
			largest = d->num_cc[n];
	}
	if (d->num_cc[DACCE_ROOT_NODE] != 1 || d->dummy[DACCE_ROOT_NODE])
		return reject(why, -EBADMSG, "root node does not have exactly one context");
	if (largest != d->max_id + 1)
		return reject(why, -EBADMSG, "max_id is not the largest num_cc - 1");
	return 0;
}

static int check_sites(const struct dacce_dict *d, const char **why)
{
	for (uint32_t s = 0; s < d->n_sites; s++) {
		uint8_t kind = d->site_kind[s];
		uint32_t caller = d->site_caller[s];

		if (kind >= DACCE_SITE_KIND_COUNT)
			return reject(why, -EBADMSG, "unknown site kind");
		if (caller >= d->n_nodes)
			return reject(why, -EBADMSG, "site caller out of range");
		if (s < DACCE_NR_ROOT_SITES) {
			if (caller != DACCE_ROOT_NODE)
				return reject(why, -EBADMSG, "root site outside the root node");
			if (kind != root_site_kind[s])
				return reject(why, -EBADMSG, "root sites out of order");
		} else {
			if (caller == DACCE_ROOT_NODE)
				return reject(why, -EBADMSG, "call site in the root node");
			if (dacce_site_kind_is_root(kind))
				return reject(why, -EBADMSG, "root kind on a call site");
		}
	}
	return 0;
}

static uint64_t edge_key(uint32_t site, uint32_t callee)
{
	return (uint64_t)site << 32 | callee;
}

/* Checks one edge on its own; the caller checks (site, callee) uniqueness. */
static int check_edge(const struct dacce_dict *d, uint32_t e, const char **why)
{
	uint32_t site = d->edge_site[e], caller = d->edge_caller[e], callee = d->edge_callee[e];
	uint64_t caller_ids, callee_ids;

	if (site >= d->n_sites)
		return reject(why, -EBADMSG, "edge site out of range");
	if (caller != d->site_caller[site])
		return reject(why, -EBADMSG, "edge caller differs from its site's");
	if (callee >= d->n_nodes)
		return reject(why, -EBADMSG, "edge callee out of range");
	if (callee == DACCE_ROOT_NODE)
		return reject(why, -EBADMSG, "edge calls the root node");
	if (d->edge_class[e] > DACCE_EDGE_BACK)
		return reject(why, -EBADMSG, "unknown edge class");
	if (d->edge_compress[e] > 1)
		return reject(why, -EBADMSG, "compress flag not 0 or 1");
	if (d->edge_class[e] != DACCE_EDGE_ENCODED)
		return 0;
	if (dacce_site_kind_is_nested_root(d->site_kind[site]))
		return reject(why, -EBADMSG, "nested root edge encoded");
	/* [en, en + num_cc[caller]) must lie in [0, num_cc[callee]); written to not overflow. */
	caller_ids = d->num_cc[caller];
	callee_ids = d->num_cc[callee];
	if (caller_ids > callee_ids || d->en[e] > callee_ids - caller_ids)
		return reject(why, -EBADMSG, "encoded range outside the callee's ids");
	return 0;
}

static int check_edges(const struct dacce_dict *d, uint32_t *n_encoded, const char **why)
{
	struct dacce_hashmap seen;
	uint32_t found;
	int err = 0;

	dacce_hashmap_init(&seen);
	*n_encoded = 0;
	for (uint32_t e = 0; e < d->n_edges; e++) {
		uint64_t key = edge_key(d->edge_site[e], d->edge_callee[e]);

		err = check_edge(d, e, why);
		if (err)
			goto cleanup;
		/* Lookups by (site, callee) must be unambiguous. */
		if (dacce_hashmap_get(&seen, key, &found) == 0) {
			err = reject(why, -EBADMSG, "two edges with the same site and callee");
			goto cleanup;
		}
		err = dacce_hashmap_put(&seen, key, e);
		if (err) {
			*why = "out of memory";
			goto cleanup;
		}
		if (d->edge_class[e] == DACCE_EDGE_ENCODED)
			(*n_encoded)++;
	}
cleanup:
	dacce_hashmap_fini(&seen);
	return err;
}

static int check_in_start(const struct dacce_dict *d, uint32_t n_in_edges, const char **why)
{
	if (d->in_start[0] != 0)
		return reject(why, -EBADMSG, "in_start does not begin at 0");
	for (uint32_t n = 0; n < d->n_nodes; n++)
		if (d->in_start[n + 1] < d->in_start[n])
			return reject(why, -EBADMSG, "in_start not monotonic");
	if (d->in_start[d->n_nodes] != n_in_edges)
		return reject(why, -EBADMSG, "in_start does not end at n_in_edges");
	return 0;
}

/* The encoded in-edges of node n: sorted, disjoint, above the dummy id. */
static int check_in_list(const struct dacce_dict *d, uint32_t n, const char **why)
{
	uint64_t free_from = d->dummy[n] ? 1 : 0; /* a leaf node's floor: dacce_dict_index */

	for (uint32_t k = d->in_start[n]; k < d->in_start[n + 1]; k++) {
		uint32_t e = d->in_edges[k];

		if (e >= d->n_edges)
			return reject(why, -EBADMSG, "in_edges entry out of range");
		if (d->edge_class[e] != DACCE_EDGE_ENCODED)
			return reject(why, -EBADMSG, "in_edges lists an edge that is not encoded");
		if (d->edge_callee[e] != n)
			return reject(why, -EBADMSG, "in_edges entry under the wrong node");
		if (k > d->in_start[n] && d->en[e] <= d->en[d->in_edges[k - 1]])
			return reject(why, -EBADMSG, "in_edges not sorted by en");
		if (d->en[e] < free_from)
			return reject(why, -EBADMSG, k == d->in_start[n] ?
					     "encoded range covers the dummy id" :
					     "encoded ranges overlap");
		/* check_edge bounded this by num_cc[n] <= 2^62. */
		free_from = d->en[e] + d->num_cc[d->edge_caller[e]];
	}
	return 0;
}

static int check_in_edges(const struct dacce_dict *d, uint32_t n_in_edges, uint32_t n_encoded,
			  const char **why)
{
	int err = check_in_start(d, n_in_edges, why);

	if (err)
		return err;
	for (uint32_t n = 0; n < d->n_nodes; n++) {
		err = check_in_list(d, n, why);
		if (err)
			return err;
	}
	/* Each listed edge is encoded and listed once (by callee and en), so equal counts
	 * mean every encoded edge is listed. */
	if (n_in_edges != n_encoded)
		return reject(why, -EBADMSG, "encoded edge missing from in_edges");
	return 0;
}

/*
 * Decoding walks from a node to the caller of the in-edge whose range holds
 * the id; a cycle of encoded edges (possible with en = 0 and equal num_cc)
 * would make that walk endless.  Peels nodes with no encoded out-edge left,
 * walking in_edges backwards as the decoder does; a cycle never peels.
 */
static int check_acyclic(const struct dacce_dict *d, const char **why)
{
	uint32_t *out_left = calloc(d->n_nodes, sizeof(*out_left));
	uint32_t *queue = malloc(sizeof(*queue) * d->n_nodes);
	uint32_t head = 0, tail = 0;
	int err = 0;

	if (!out_left || !queue) {
		err = reject(why, -ENOMEM, "out of memory");
		goto cleanup;
	}
	for (uint32_t k = 0; k < d->in_start[d->n_nodes]; k++)
		out_left[d->edge_caller[d->in_edges[k]]]++;
	for (uint32_t n = 0; n < d->n_nodes; n++)
		if (out_left[n] == 0)
			queue[tail++] = n;
	while (head < tail) {
		uint32_t n = queue[head++];

		for (uint32_t k = d->in_start[n]; k < d->in_start[n + 1]; k++) {
			uint32_t caller = d->edge_caller[d->in_edges[k]];

			if (--out_left[caller] == 0)
				queue[tail++] = caller;
		}
	}
	if (tail != d->n_nodes)
		err = reject(why, -EBADMSG, "encoded edges form a cycle");
cleanup:
	free(out_left);
	free(queue);
	return err;
}

/*
 * dacce_dispatch_lookup probes linearly from an entry's home slot and stops
 * at the first empty slot, so an entry is found only if no empty slot lies
 * between its home and itself: its home must be inside the run of occupied
 * slots that ends at it.  One pass, starting just after an empty slot.
 */
static int check_probe_runs(const struct dacce_dispatch *t, uint32_t empty, const char **why)
{
	uint32_t mask = (1u << t->bits) - 1;
	uint32_t run_start = (empty + 1) & mask;

	for (uint32_t step = 1; step <= mask + 1; step++) {
		uint32_t slot = (empty + step) & mask;
		uint32_t home;

		if (t->callee[slot] == DACCE_NONE) {
			run_start = (slot + 1) & mask;
			continue;
		}
		home = dacce_dispatch_slot(t->callee[slot], t->bits);
		if (((slot - home) & mask) > ((slot - run_start) & mask))
			return reject(why, -EBADMSG, "dispatch entry unreachable by probing");
	}
	return 0;
}

/* Slot contents; in_table marks edges already stored (edges of one site are in one table). */
static int check_slots(const struct dacce_dict *d, const struct dacce_dispatch *t,
		       uint8_t *in_table, const char **why)
{
	uint32_t slots = 1u << t->bits, used = 0, empty = DACCE_NONE;

	for (uint32_t i = 0; i < slots; i++) {
		uint32_t callee = t->callee[i], edge = t->edge[i];

		if (callee == DACCE_NONE) {
			empty = i;
			continue;
		}
		used++;
		if (callee >= d->n_nodes)
			return reject(why, -EBADMSG, "dispatch callee out of range");
		if (edge >= d->n_edges)
			return reject(why, -EBADMSG, "dispatch edge out of range");
		if (d->edge_site[edge] != t->site || d->edge_callee[edge] != callee)
			return reject(why, -EBADMSG, "dispatch entry does not match its edge");
		if (in_table[edge])
			return reject(why, -EBADMSG, "callee stored twice in a dispatch table");
		in_table[edge] = 1;
	}
	/* Keeps probes short and guarantees an empty slot to end them. */
	if (used > slots / 2)
		return reject(why, -EBADMSG, "dispatch table more than half full");
	return check_probe_runs(t, empty, why);
}

static int check_dispatch(const struct dacce_dict *d, const char **why)
{
	uint8_t *in_table = calloc(d->n_edges ? d->n_edges : 1, 1);
	int err = 0;

	if (!in_table)
		return reject(why, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < d->n_dispatch; i++) {
		const struct dacce_dispatch *t = &d->dispatch[i];

		/* dacce_dict_dispatch binary-searches by site. */
		if (i > 0 && t->site <= d->dispatch[i - 1].site) {
			err = reject(why, -EBADMSG, "dispatch tables not sorted by site");
			goto cleanup;
		}
		if (t->site >= d->n_sites) {
			err = reject(why, -EBADMSG, "dispatch site out of range");
			goto cleanup;
		}
		if (t->bits < DISPATCH_BITS_MIN || t->bits > DISPATCH_BITS_MAX) {
			err = reject(why, -EBADMSG, "dispatch table size out of range");
			goto cleanup;
		}
		err = check_slots(d, t, in_table, why);
		if (err)
			goto cleanup;
	}
cleanup:
	free(in_table);
	return err;
}

/* Everything a decoder relies on; order matters (later checks index with earlier fields). */
static int validate_dict(const struct dacce_dict *d, uint32_t n_in_edges, const char **why)
{
	uint32_t n_encoded;
	int err;

	err = check_counts(d, why);
	if (!err)
		err = check_ids(d, why);
	if (!err)
		err = check_nodes(d, why);
	if (!err)
		err = check_sites(d, why);
	if (!err)
		err = check_edges(d, &n_encoded, why);
	if (!err)
		err = check_in_edges(d, n_in_edges, n_encoded, why);
	if (!err)
		err = check_acyclic(d, why);
	if (!err)
		err = check_dispatch(d, why);
	return err;
}

/* ------------------------------------------------------------ writing */

/* A caller-built dictionary must at least have its arrays before we look inside. */
static bool arrays_present(const struct dacce_dict *d)
{
	if (!d->in_start)
		return false;
	if (d->n_nodes && (!d->num_cc || !d->dummy))
		return false;
	if (d->in_start[d->n_nodes] && !d->in_edges)
		return false;
	if (d->n_sites && (!d->site_caller || !d->site_kind))
		return false;
	if (d->n_edges && (!d->edge_site || !d->edge_caller || !d->edge_callee ||
			   !d->edge_class || !d->edge_compress || !d->en))
		return false;
	if (d->n_dispatch && !d->dispatch)
		return false;
	for (uint32_t i = 0; i < d->n_dispatch; i++)
		if (!d->dispatch[i].callee || !d->dispatch[i].edge)
			return false;
	return true;
}

/* Bytes of the payload; the tables' bits are already validated. */
static uint64_t payload_size(const struct dacce_dict *d, uint32_t n_in_edges)
{
	uint64_t size = SCALARS_SIZE;

	size += (uint64_t)d->n_nodes * NODE_SIZE;
	size += ((uint64_t)d->n_nodes + 1) * OFFSET_SIZE;
	size += (uint64_t)n_in_edges * OFFSET_SIZE;
	size += (uint64_t)d->n_sites * SITE_SIZE;
	size += (uint64_t)d->n_edges * EDGE_SIZE;
	for (uint32_t i = 0; i < d->n_dispatch; i++)
		size += TABLE_HEADER_SIZE + ((uint64_t)SLOT_SIZE << d->dispatch[i].bits);
	return size;
}

static void write_payload(const struct dacce_dict *d, uint32_t n_in_edges, uint8_t *p)
{
	put_u64(&p, d->epoch);
	put_u64(&p, d->max_id);
	put_u64(&p, d->id_limit);
	put_u8(&p, d->compress_new ? 1 : 0);
	put_u32(&p, d->n_nodes);
	put_u32(&p, d->n_sites);
	put_u32(&p, d->n_edges);
	put_u32(&p, n_in_edges);
	put_u32(&p, d->n_dispatch);
	for (uint32_t n = 0; n < d->n_nodes; n++) {
		put_u64(&p, d->num_cc[n]);
		put_u8(&p, d->dummy[n]);
	}
	for (uint32_t n = 0; n <= d->n_nodes; n++)
		put_u32(&p, d->in_start[n]);
	for (uint32_t k = 0; k < n_in_edges; k++)
		put_u32(&p, d->in_edges[k]);
	for (uint32_t s = 0; s < d->n_sites; s++) {
		put_u32(&p, d->site_caller[s]);
		put_u8(&p, d->site_kind[s]);
	}
	for (uint32_t e = 0; e < d->n_edges; e++) {
		put_u32(&p, d->edge_site[e]);
		put_u32(&p, d->edge_caller[e]);
		put_u32(&p, d->edge_callee[e]);
		put_u8(&p, d->edge_class[e]);
		put_u8(&p, d->edge_compress[e]);
		put_u64(&p, d->en[e]);
	}
	for (uint32_t i = 0; i < d->n_dispatch; i++) {
		const struct dacce_dispatch *t = &d->dispatch[i];

		put_u32(&p, t->site);
		put_u32(&p, t->bits);
		/* Empty slots' values mean nothing; write DACCE_NONE so files are canonical. */
		for (uint32_t slot = 0; slot < (1u << t->bits); slot++) {
			bool empty = t->callee[slot] == DACCE_NONE;

			put_u32(&p, t->callee[slot]);
			put_u32(&p, empty ? DACCE_NONE : t->edge[slot]);
		}
	}
}

static void write_header(uint8_t *p, uint64_t payload_len, uint32_t crc)
{
	memcpy(p, DACCE_DICT_MAGIC, MAGIC_LEN);
	p += MAGIC_LEN;
	put_u32(&p, DACCE_DICT_VERSION);
	put_u32(&p, HEADER_SIZE);
	put_u64(&p, payload_len);
	put_u32(&p, crc);
	put_u32(&p, 0); /* flags: none defined in version 1 */
}

int dacce_dict_serialize(const struct dacce_dict *dict, uint8_t **buf, size_t *len)
{
	uint32_t n_in_edges;
	uint64_t size;
	const char *why;
	uint8_t *out;
	int err;

	if (!dict || !buf || !len || !arrays_present(dict))
		return -EINVAL;
	n_in_edges = dict->in_start[dict->n_nodes];
	/* Never write a file the reader would refuse. */
	err = validate_dict(dict, n_in_edges, &why);
	if (err)
		return err == -ENOMEM ? err : -EINVAL;
	size = payload_size(dict, n_in_edges);
	if (size > SIZE_MAX - HEADER_SIZE)
		return -EFBIG;
	out = malloc(HEADER_SIZE + size);
	if (!out)
		return -ENOMEM;
	write_payload(dict, n_in_edges, out + HEADER_SIZE);
	write_header(out, size, payload_crc(out + HEADER_SIZE, size));
	*buf = out;
	*len = HEADER_SIZE + size;
	return 0;
}

/* ------------------------------------------------------------ reading */

/* Checks the framing; on success the payload is the rest of buf, checksum verified. */
static int read_header(const uint8_t *buf, size_t len, const char **why)
{
	uint64_t payload_len;

	if (len < MAGIC_LEN)
		return reject(why, -ENODATA, "truncated header");
	if (memcmp(buf, DACCE_DICT_MAGIC, MAGIC_LEN) != 0)
		return reject(why, -EBADMSG, "not a dictionary (bad magic)");
	/* Tell the version before anything else: another version may frame differently. */
	if (len < HEADER_VERSION_END)
		return reject(why, -ENODATA, "truncated header");
	if (get_u32(buf + OFF_VERSION) != DACCE_DICT_VERSION)
		return reject(why, -EPROTONOSUPPORT, "unsupported dictionary version");
	if (len < HEADER_SIZE)
		return reject(why, -ENODATA, "truncated header");
	if (get_u32(buf + OFF_HEADER_SIZE) != HEADER_SIZE)
		return reject(why, -EBADMSG, "bad header size");
	if (get_u32(buf + OFF_FLAGS) != 0)
		return reject(why, -EBADMSG, "unknown header flags");
	payload_len = get_u64(buf + OFF_PAYLOAD_LEN);
	if (payload_len > len - HEADER_SIZE)
		return reject(why, -ENODATA, "truncated payload");
	if (payload_len < len - HEADER_SIZE)
		return reject(why, -EBADMSG, "trailing bytes after payload");
	if (payload_crc(buf + HEADER_SIZE, payload_len) != get_u32(buf + OFF_CRC))
		return reject(why, -EBADMSG, "payload checksum mismatch");
	return 0;
}

struct counts {
	uint32_t n_nodes, n_sites, n_edges, n_in_edges, n_dispatch;
};

/* Smallest payload remainder the counts need (tables have at least two slots). */
static uint64_t bytes_needed(const struct counts *c)
{
	return (uint64_t)c->n_nodes * NODE_SIZE + ((uint64_t)c->n_nodes + 1) * OFFSET_SIZE +
	       (uint64_t)c->n_in_edges * OFFSET_SIZE + (uint64_t)c->n_sites * SITE_SIZE +
	       (uint64_t)c->n_edges * EDGE_SIZE +
	       (uint64_t)c->n_dispatch * (TABLE_HEADER_SIZE + (SLOT_SIZE << DISPATCH_BITS_MIN));
}

/* The fixed arrays; their total size was checked against the payload. */
static void read_arrays(struct reader *in, struct dacce_dict *d, uint32_t n_in_edges)
{
	const uint8_t *p;

	p = take(in, (uint64_t)d->n_nodes * NODE_SIZE);
	for (uint32_t n = 0; n < d->n_nodes; n++, p += NODE_SIZE) {
		d->num_cc[n] = get_u64(p);
		d->dummy[n] = p[8];
	}
	p = take(in, ((uint64_t)d->n_nodes + 1) * OFFSET_SIZE);
	for (uint32_t n = 0; n <= d->n_nodes; n++, p += OFFSET_SIZE)
		d->in_start[n] = get_u32(p);
	p = take(in, (uint64_t)n_in_edges * OFFSET_SIZE);
	for (uint32_t k = 0; k < n_in_edges; k++, p += OFFSET_SIZE)
		d->in_edges[k] = get_u32(p);
	p = take(in, (uint64_t)d->n_sites * SITE_SIZE);
	for (uint32_t s = 0; s < d->n_sites; s++, p += SITE_SIZE) {
		d->site_caller[s] = get_u32(p);
		d->site_kind[s] = p[4];
	}
	p = take(in, (uint64_t)d->n_edges * EDGE_SIZE);
	for (uint32_t e = 0; e < d->n_edges; e++, p += EDGE_SIZE) {
		d->edge_site[e] = get_u32(p);
		d->edge_caller[e] = get_u32(p + 4);
		d->edge_callee[e] = get_u32(p + 8);
		d->edge_class[e] = p[12];
		d->edge_compress[e] = p[13];
		d->en[e] = get_u64(p + 14);
	}
}

static int read_table(struct reader *in, struct dacce_dispatch *t, const char **why)
{
	const uint8_t *p = take(in, TABLE_HEADER_SIZE);
	uint32_t slots;

	if (!p)
		return reject(why, -EBADMSG, "dispatch tables exceed payload");
	t->site = get_u32(p);
	t->bits = get_u32(p + 4);
	/* Before sizing anything by it. */
	if (t->bits < DISPATCH_BITS_MIN || t->bits > DISPATCH_BITS_MAX)
		return reject(why, -EBADMSG, "dispatch table size out of range");
	slots = 1u << t->bits;
	p = take(in, (uint64_t)slots * SLOT_SIZE);
	if (!p)
		return reject(why, -EBADMSG, "dispatch tables exceed payload");
	t->callee = malloc(sizeof(*t->callee) * slots);
	t->edge = malloc(sizeof(*t->edge) * slots);
	if (!t->callee || !t->edge)
		return reject(why, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < slots; i++, p += SLOT_SIZE) {
		t->callee[i] = get_u32(p);
		t->edge[i] = get_u32(p + 4);
		/* The writer stores DACCE_NONE there; anything else is not a file it wrote. */
		if (t->callee[i] == DACCE_NONE && t->edge[i] != DACCE_NONE)
			return reject(why, -EBADMSG, "empty dispatch slot with an edge");
	}
	return 0;
}

/* Decodes the payload into a new dictionary; nothing is allocated before its bytes are seen. */
static int read_payload(const uint8_t *payload, size_t len, struct dacce_dict **out,
			uint32_t *n_in_edges, const char **why)
{
	struct reader in = { .pos = payload, .left = len };
	struct dacce_dict *d = NULL;
	const uint8_t *p = take(&in, SCALARS_SIZE);
	struct counts c;
	int err = 0;

	if (!p)
		return reject(why, -EBADMSG, "payload too short for its fields");
	c.n_nodes = get_u32(p + 25);
	c.n_sites = get_u32(p + 29);
	c.n_edges = get_u32(p + 33);
	c.n_in_edges = get_u32(p + 37);
	c.n_dispatch = get_u32(p + 41);
	if (bytes_needed(&c) > in.left)
		return reject(why, -EBADMSG, "counts exceed payload");
	if (p[24] > 1)
		return reject(why, -EBADMSG, "compress_new flag not 0 or 1");
	d = dacce_dict_alloc(c.n_nodes, c.n_sites, c.n_edges, c.n_in_edges, c.n_dispatch);
	if (!d)
		return reject(why, -ENOMEM, "out of memory");
	d->epoch = get_u64(p);
	d->max_id = get_u64(p + 8);
	d->id_limit = get_u64(p + 16);
	d->compress_new = p[24];
	read_arrays(&in, d, c.n_in_edges);
	for (uint32_t i = 0; i < c.n_dispatch; i++) {
		err = read_table(&in, &d->dispatch[i], why);
		if (err)
			goto fail;
	}
	if (in.left) {
		err = reject(why, -EBADMSG, "trailing bytes in payload");
		goto fail;
	}
	*out = d;
	*n_in_edges = c.n_in_edges;
	return 0;
fail:
	dacce_dict_free(d);
	return err;
}

int dacce_dict_deserialize(const uint8_t *buf, size_t len, struct dacce_dict **out,
			   const char **why)
{
	struct dacce_dict *dict = NULL;
	const char *ignored;
	uint32_t n_in_edges;
	int err;

	if (!why)
		why = &ignored;
	*why = NULL;
	if ((!buf && len) || !out)
		return reject(why, -EINVAL, "invalid arguments");
	*out = NULL;
	err = read_header(buf, len, why);
	if (err)
		return err;
	err = read_payload(buf + HEADER_SIZE, len - HEADER_SIZE, &dict, &n_in_edges, why);
	if (err)
		return err;
	err = validate_dict(dict, n_in_edges, why);
	if (err)
		goto fail;
	/* The decoder's derived index; never stored in the file. */
	err = dacce_dict_index(dict);
	if (err) {
		*why = err == -EBADMSG ? "leaf ranges overlap or reach below another node's ids"
				       : "out of memory";
		goto fail;
	}
	*out = dict;
	return 0;
fail:
	dacce_dict_free(dict);
	return err;
}
