// SPDX-License-Identifier: MIT
/* Helpers every report format uses (report_internal.h), and the format table. */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

/* ---------------------------------------------------------------- formats */

typedef int (*report_writer)(FILE *, const struct dacce_rprofile *,
			     const struct dacce_report_options *);

static const struct {
	const char *name;
	report_writer write;
} formats[DACCE_REPORT_FORMAT_COUNT] = {
	[DACCE_REPORT_TOP] = { "top", dacce_report_top },
	[DACCE_REPORT_CCT] = { "cct", dacce_report_cct },
	[DACCE_REPORT_KCCF] = { "kccf", dacce_report_kccf },
	[DACCE_REPORT_FOLDED] = { "folded", dacce_report_folded },
	[DACCE_REPORT_PPROF] = { "pprof", dacce_report_pprof },
	[DACCE_REPORT_JSON] = { "json", dacce_report_json },
};

void dacce_report_options_init(struct dacce_report_options *opts)
{
	if (!opts)
		return;
	*opts = (struct dacce_report_options){ .k = DACCE_REPORT_DEFAULT_K };
}

int dacce_report_format_parse(const char *name, enum dacce_report_format *format)
{
	if (!name || !format)
		return -EINVAL;
	for (int i = 0; i < DACCE_REPORT_FORMAT_COUNT; i++) {
		if (strcmp(name, formats[i].name) == 0) {
			*format = (enum dacce_report_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *dacce_report_format_name(enum dacce_report_format format)
{
	if ((unsigned)format >= DACCE_REPORT_FORMAT_COUNT)
		return "unknown";
	return formats[format].name;
}

int dacce_report_write(FILE *out, enum dacce_report_format format,
		       const struct dacce_rprofile *profile, const struct dacce_report_options *opts)
{
	if ((unsigned)format >= DACCE_REPORT_FORMAT_COUNT)
		return -EINVAL;
	return formats[format].write(out, profile, opts);
}

/* ---------------------------------------------------------------- profile */

static bool frame_is_valid(const struct dacce_rframe *frame)
{
	return frame && frame->function && frame->module && frame->build_id &&
	       frame->kind <= DACCE_RFRAME_TRUNCATED;
}

int rpt_check_args(FILE *out, const struct dacce_rprofile *profile)
{
	if (!out || !profile || (profile->n_stacks && !profile->stacks))
		return -EINVAL;
	for (size_t i = 0; i < profile->n_stacks; i++) {
		const struct dacce_rstack *stack = &profile->stacks[i];

		if (stack->n_frames && !stack->frames)
			return -EINVAL;
		for (uint32_t j = 0; j < stack->n_frames; j++)
			if (!frame_is_valid(stack->frames[j]))
				return -EINVAL;
	}
	return 0;
}

int rpt_flush(FILE *out)
{
	if (fflush(out) != 0 || ferror(out))
		return -EIO;
	return 0;
}

const struct dacce_report_options *rpt_options(const struct dacce_report_options *opts,
					       struct dacce_report_options *defaults)
{
	if (opts)
		return opts;
	dacce_report_options_init(defaults);
	return defaults;
}

const char *rpt_str(const char *s)
{
	return s ? s : "";
}

const char *rpt_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

uint64_t rpt_context_samples(const struct dacce_rprofile *profile)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < profile->n_stacks; i++)
		sum = rpt_add_sat(sum, profile->stacks[i].count);
	return sum;
}

uint64_t rpt_percent_base(const struct dacce_rprofile *profile)
{
	uint64_t in_stacks = rpt_context_samples(profile);

	return profile->total_samples > in_stacks ? profile->total_samples : in_stacks;
}

void rpt_print_summary(FILE *out, const struct dacce_rprofile *profile)
{
	const char *event = rpt_str(profile->event);

	fprintf(out, "# event %s", event[0] ? event : "[unknown]");
	if (profile->period)
		fprintf(out, ", period %" PRIu64 " %s", profile->period,
			rpt_str(profile->period_unit));
	fprintf(out, ": %" PRIu64 " samples, %" PRIu64 " with a context, %" PRIu64
		" lost, duration %" PRIu64 ".%09" PRIu64 " s\n",
		rpt_percent_base(profile), rpt_context_samples(profile), profile->lost_samples,
		profile->duration_ns / 1000000000, profile->duration_ns % 1000000000);
}

void rpt_format_percent(char buf[RPT_PERCENT_LEN], uint64_t part, uint64_t base)
{
	/* Hundredths of a percent, rounded half up; 128 bits so no count overflows. */
	unsigned __int128 hundredths = 0;

	if (base)
		hundredths = ((unsigned __int128)part * 20000 + base) / ((unsigned __int128)base * 2);
	snprintf(buf, RPT_PERCENT_LEN, "%" PRIu64 ".%02u", (uint64_t)(hundredths / 100),
		 (unsigned)(hundredths % 100));
}

/* ---------------------------------------------------------------- text */

/* RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF. */
size_t rpt_utf8_sequence(const unsigned char *s)
{
	size_t len;
	uint32_t code;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, code = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, code = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, code = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		code = code << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && code < 0x800) || (len == 4 && (code < 0x10000 || code > 0x10ffff)) ||
	    (code >= 0xd800 && code <= 0xdfff))
		return 0;
	return len;
}

char *rpt_utf8_sanitize(const char *s)
{
	const unsigned char *at = (const unsigned char *)s;
	size_t len = 0;
	char *clean, *to;

	while (*at) {
		size_t n = rpt_utf8_sequence(at);

		len += n ? n : 3; /* U+FFFD takes 3 bytes */
		at += n ? n : 1;
	}
	to = clean = malloc(len + 1);
	if (!clean)
		return NULL;
	for (at = (const unsigned char *)s; *at;) {
		size_t n = rpt_utf8_sequence(at);

		if (!n) {
			memcpy(to, "\xef\xbf\xbd", 3);
			to += 3;
			at++;
			continue;
		}
		memcpy(to, at, n);
		to += n;
		at += n;
	}
	*to = '\0';
	return clean;
}

bool rpt_utf8_is_valid(const char *s)
{
	for (const unsigned char *at = (const unsigned char *)s; *at;) {
		size_t n = rpt_utf8_sequence(at);

		if (!n)
			return false;
		at += n;
	}
	return true;
}

/* ---------------------------------------------------------------- frames */

static const char *const kind_names[] = {
	[DACCE_RFRAME_CALL] = "call",
	[DACCE_RFRAME_TAIL] = "tail",
	[DACCE_RFRAME_THREAD_ROOT] = "thread_root",
	[DACCE_RFRAME_SIGNAL_ROOT] = "signal_root",
	[DACCE_RFRAME_CALLBACK_ROOT] = "callback_root",
	[DACCE_RFRAME_LEAF] = "leaf",
	[DACCE_RFRAME_TRUNCATED] = "truncated",
};

static const char *const kind_markers[] = {
	[DACCE_RFRAME_CALL] = "",
	[DACCE_RFRAME_TAIL] = "[tail call]",
	[DACCE_RFRAME_THREAD_ROOT] = "[thread root]",
	[DACCE_RFRAME_SIGNAL_ROOT] = "[signal handler]",
	[DACCE_RFRAME_CALLBACK_ROOT] = "[callback]",
	[DACCE_RFRAME_LEAF] = "[leaf]",
	[DACCE_RFRAME_TRUNCATED] = "[truncated]",
};

bool rpt_frame_is_truncated(const struct dacce_rframe *frame)
{
	return frame->kind == DACCE_RFRAME_TRUNCATED;
}

const char *rpt_frame_name(const struct dacce_rframe *frame)
{
	return rpt_frame_is_truncated(frame) ? "[truncated]" : frame->function;
}

const char *rpt_kind_name(uint8_t kind)
{
	return kind <= DACCE_RFRAME_TRUNCATED ? kind_names[kind] : "unknown";
}

const char *rpt_kind_marker(uint8_t kind)
{
	return kind <= DACCE_RFRAME_TRUNCATED ? kind_markers[kind] : "";
}

static int compare_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* NULL (no file) sorts first. */
static int compare_file(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

int rpt_label_compare(const struct dacce_rframe *a, const struct dacce_rframe *b)
{
	int diff;

	if (a == b)
		return 0;
	if (rpt_frame_is_truncated(a) || rpt_frame_is_truncated(b))
		return (int)rpt_frame_is_truncated(a) - (int)rpt_frame_is_truncated(b);
	diff = strcmp(a->function, b->function);
	if (!diff)
		diff = strcmp(a->module, b->module);
	if (!diff)
		diff = (int)a->inlined - (int)b->inlined;
	if (!diff)
		diff = (int)a->kind - (int)b->kind;
	return diff;
}

int rpt_frame_compare(const struct dacce_rframe *a, const struct dacce_rframe *b)
{
	int diff;

	if (a == b)
		return 0;
	diff = strcmp(a->function, b->function);
	if (!diff)
		diff = strcmp(a->module, b->module);
	if (!diff)
		diff = compare_file(a->file, b->file);
	if (!diff)
		diff = compare_u64(a->line, b->line);
	if (!diff)
		diff = compare_u64(a->address, b->address);
	if (!diff)
		diff = strcmp(a->build_id, b->build_id);
	if (!diff)
		diff = (int)a->inlined - (int)b->inlined;
	if (!diff)
		diff = (int)a->kind - (int)b->kind;
	return diff;
}

int rpt_frames_compare(const struct dacce_rframe *const *a, uint32_t n_a,
		       const struct dacce_rframe *const *b, uint32_t n_b)
{
	uint32_t n = n_a < n_b ? n_a : n_b;

	for (uint32_t i = 0; i < n; i++) {
		int diff = rpt_frame_compare(a[i], b[i]);

		if (diff)
			return diff;
	}
	return compare_u64(n_a, n_b);
}

uint64_t rpt_hash_bytes(uint64_t hash, const void *data, size_t len)
{
	const unsigned char *bytes = data;

	/* FNV-1a: short strings, no need for more. */
	for (size_t i = 0; i < len; i++) {
		hash ^= bytes[i];
		hash *= 0x100000001b3ULL;
	}
	return hash;
}

uint64_t rpt_hash_str(uint64_t hash, const char *s)
{
	/* The terminating NUL keeps ("ab", "c") apart from ("a", "bc"). */
	return rpt_hash_bytes(hash, s, strlen(s) + 1);
}

uint64_t rpt_hash_u64(uint64_t hash, uint64_t value)
{
	return dacce_hash64(hash ^ dacce_hash64(value));
}

uint64_t rpt_label_hash(const struct dacce_rframe *frame)
{
	uint64_t hash = RPT_HASH_SEED;

	if (rpt_frame_is_truncated(frame))
		return rpt_hash_u64(hash, DACCE_RFRAME_TRUNCATED);
	hash = rpt_hash_str(hash, frame->function);
	hash = rpt_hash_str(hash, frame->module);
	return rpt_hash_u64(hash, (uint64_t)frame->inlined << 8 | frame->kind);
}

void rpt_print_markers(FILE *out, const struct dacce_rframe *frame)
{
	if (frame->inlined)
		fputs(" [inlined]", out);
	if (frame->kind != DACCE_RFRAME_CALL)
		fprintf(out, " %s", rpt_kind_marker(frame->kind));
}

void rpt_print_label(FILE *out, const struct dacce_rframe *frame)
{
	if (rpt_frame_is_truncated(frame)) {
		fputs("[truncated]", out);
		return;
	}
	fprintf(out, "%s (%s)", frame->function, rpt_basename(frame->module));
	rpt_print_markers(out, frame);
}

/* ---------------------------------------------------------------- contexts */

static int compare_context_frames(const struct rpt_context *a, const struct rpt_context *b)
{
	return rpt_frames_compare(a->frames, a->n_frames, b->frames, b->n_frames);
}

/* Threads, then frames: equal keys become neighbours to merge. */
static int compare_context_keys(const void *pa, const void *pb)
{
	const struct rpt_context *a = pa, *b = pb;
	int diff = compare_u64(a->tid, b->tid);

	return diff ? diff : compare_context_frames(a, b);
}

static int compare_context_frames_only(const void *pa, const void *pb)
{
	return compare_context_frames(pa, pb);
}

/* Most samples first; then by thread and frames so the order is stable. */
static int compare_context_heat(const void *pa, const void *pb)
{
	const struct rpt_context *a = pa, *b = pb;
	int diff = compare_u64(b->count, a->count);

	return diff ? diff : compare_context_keys(a, b);
}

static void merge_into(struct rpt_context *into, const struct rpt_context *from)
{
	into->count = rpt_add_sat(into->count, from->count);
	if (into->tid != from->tid)
		into->tid = 0;
	if (strcmp(into->comm, from->comm) != 0)
		into->comm = "";
}

/* Merges neighbours with equal frames (and threads, when by_thread) in place. */
static size_t merge_neighbours(struct rpt_context *contexts, size_t n, bool by_thread)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		if (kept && (by_thread ? compare_context_keys(&contexts[kept - 1], &contexts[i])
				       : compare_context_frames(&contexts[kept - 1], &contexts[i])) == 0) {
			merge_into(&contexts[kept - 1], &contexts[i]);
			continue;
		}
		contexts[kept++] = contexts[i];
	}
	return kept;
}

int rpt_contexts_collect(const struct dacce_rprofile *profile, bool by_thread,
			 struct rpt_context **contexts_out, size_t *n_out)
{
	struct rpt_context *contexts;
	size_t n = 0;

	contexts = calloc(profile->n_stacks ? profile->n_stacks : 1, sizeof(*contexts));
	if (!contexts)
		return -ENOMEM;
	for (size_t i = 0; i < profile->n_stacks; i++) {
		const struct dacce_rstack *stack = &profile->stacks[i];

		if (!stack->count)
			continue;
		contexts[n++] = (struct rpt_context){
			.frames = stack->frames,
			.n_frames = stack->n_frames,
			.tid = stack->tid,
			.comm = rpt_str(stack->comm),
			.count = stack->count,
		};
	}
	qsort(contexts, n, sizeof(*contexts),
	      by_thread ? compare_context_keys : compare_context_frames_only);
	n = merge_neighbours(contexts, n, by_thread);
	qsort(contexts, n, sizeof(*contexts), compare_context_heat);
	*contexts_out = contexts;
	*n_out = n;
	return 0;
}

static int compare_thread_ids(const void *pa, const void *pb)
{
	const struct rpt_thread *a = pa, *b = pb;

	return compare_u64(a->tid, b->tid);
}

static int compare_thread_heat(const void *pa, const void *pb)
{
	const struct rpt_thread *a = pa, *b = pb;
	int diff = compare_u64(b->count, a->count);

	return diff ? diff : compare_thread_ids(a, b);
}

int rpt_threads_collect(const struct rpt_context *contexts, size_t n_contexts,
			struct rpt_thread **threads_out, size_t *n_out)
{
	struct rpt_thread *threads = calloc(n_contexts ? n_contexts : 1, sizeof(*threads));
	size_t n = 0;

	if (!threads)
		return -ENOMEM;
	for (size_t i = 0; i < n_contexts; i++)
		threads[i] = (struct rpt_thread){ .tid = contexts[i].tid,
						  .comm = contexts[i].comm,
						  .count = contexts[i].count,
						  .n_contexts = 1 };
	qsort(threads, n_contexts, sizeof(*threads), compare_thread_ids);
	for (size_t i = 0; i < n_contexts; i++) {
		if (n && threads[n - 1].tid == threads[i].tid) {
			struct rpt_thread *into = &threads[n - 1];

			into->count = rpt_add_sat(into->count, threads[i].count);
			into->n_contexts++;
			if (!into->comm[0])
				into->comm = threads[i].comm;
			continue;
		}
		threads[n++] = threads[i];
	}
	qsort(threads, n, sizeof(*threads), compare_thread_heat);
	*threads_out = threads;
	*n_out = n;
	return 0;
}

/* ---------------------------------------------------------------- index */

struct rpt_index_slot {
	uint64_t hash;
	uint32_t item_plus_one; /* 0: empty */
};

uint32_t rpt_index_find(const struct rpt_index *index, uint64_t hash, const void *key,
			rpt_index_match match, const void *ctx)
{
	size_t mask = index->capacity - 1;

	if (!index->capacity)
		return RPT_NONE;
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		const struct rpt_index_slot *slot = &index->slots[i];

		if (!slot->item_plus_one)
			return RPT_NONE;
		if (slot->hash == hash && match(ctx, slot->item_plus_one - 1, key))
			return slot->item_plus_one - 1;
	}
}

static void place(struct rpt_index_slot *slots, size_t capacity, uint64_t hash, uint32_t item)
{
	size_t i = hash & (capacity - 1);

	while (slots[i].item_plus_one)
		i = (i + 1) & (capacity - 1);
	slots[i] = (struct rpt_index_slot){ .hash = hash, .item_plus_one = item + 1 };
}

/* Keeps the load under one half so probes stay short. */
static int grow(struct rpt_index *index)
{
	size_t capacity = index->capacity ? index->capacity * 2 : 64;
	struct rpt_index_slot *slots = calloc(capacity, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < index->capacity; i++)
		if (index->slots[i].item_plus_one)
			place(slots, capacity, index->slots[i].hash,
			      index->slots[i].item_plus_one - 1);
	free(index->slots);
	index->slots = slots;
	index->capacity = capacity;
	return 0;
}

int rpt_index_add(struct rpt_index *index, uint64_t hash, uint32_t item)
{
	if (item == RPT_NONE)
		return -ENOMEM;
	if ((index->count + 1) * 2 > index->capacity) {
		int err = grow(index);

		if (err)
			return err;
	}
	place(index->slots, index->capacity, hash, item);
	index->count++;
	return 0;
}

void rpt_index_free(struct rpt_index *index)
{
	if (!index)
		return;
	free(index->slots);
	*index = (struct rpt_index){ 0 };
}
