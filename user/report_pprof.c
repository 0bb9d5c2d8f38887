// SPDX-License-Identifier: MIT
/*
 * `dacce report --format pprof`: pprof's profile.proto (user/profile.proto),
 * gzip-compressed, for `go tool pprof`, Pyroscope, Parca.
 *
 * Every table is sized for its worst case before anything is added (a
 * location, function, line or mapping per frame at most), so the arrays never
 * move and messages can point into them while the profile is assembled.
 */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

#define N_COMMENTS 2
#define COMMENT_LEN 160
/* "", value type names and units, label keys, comments. */
#define N_FIXED_STRINGS (1 + 4 + 2 + N_COMMENTS)

/* A Location's frames: chain[0] is the frame the others were inlined into. */
struct location_key {
	const struct dacce_rframe *const *chain;
	uint32_t len;
};

struct pprof_builder {
	const struct dacce_rprofile *profile;
	pb_profile message;

	/* protobuf-c wants char ** but only reads the strings. */
	char **strings;
	size_t n_strings;
	char **owned; /* copies made valid UTF-8 */
	size_t n_owned;
	struct rpt_index string_index;
	char comments[N_COMMENTS][COMMENT_LEN];

	pb_value_type value_types[2]; /* samples, the event (also the period type) */
	pb_value_type *value_type_ptrs[2];
	int64_t comment_ids[N_COMMENTS];

	pb_mapping *mappings;
	pb_mapping **mapping_ptrs;
	const struct dacce_rframe **mapping_frames; /* one frame of each mapping's module */
	struct rpt_index mapping_index;

	pb_function *functions;
	pb_function **function_ptrs;
	const struct dacce_rframe **function_frames;
	struct rpt_index function_index;

	pb_location *locations;
	pb_location **location_ptrs;
	struct location_key *location_keys;
	struct rpt_index location_index;
	pb_line *lines;
	pb_line **line_ptrs;
	size_t n_lines;

	pb_sample *samples;
	pb_sample **sample_ptrs;
	uint64_t *location_ids;
	size_t n_location_ids;
	int64_t *values;
	pb_label *labels;
	pb_label **label_ptrs;
	size_t n_labels;
};

static int64_t clamp_int64(uint64_t value)
{
	return value > INT64_MAX ? INT64_MAX : (int64_t)value;
}

/* ---------------------------------------------------------------- strings */

static bool string_matches(const void *ctx, uint32_t item, const void *key)
{
	const struct pprof_builder *b = ctx;

	return strcmp(b->strings[item], key) == 0;
}

/*
 * The string table index of s, added when new.  proto3 strings must be UTF-8
 * (Go's protobuf refuses a profile otherwise): bad bytes become U+FFFD.
 */
static int intern(struct pprof_builder *b, const char *s, int64_t *id)
{
	char *clean = NULL;
	uint64_t hash;
	uint32_t found;
	int err = 0;

	if (!rpt_utf8_is_valid(s)) {
		s = clean = rpt_utf8_sanitize(s);
		if (!clean)
			return -ENOMEM;
	}
	hash = rpt_hash_str(RPT_HASH_SEED, s);
	found = rpt_index_find(&b->string_index, hash, s, string_matches, b);
	if (found == RPT_NONE) {
		found = (uint32_t)b->n_strings;
		err = rpt_index_add(&b->string_index, hash, found);
		if (err)
			goto cleanup;
		b->strings[b->n_strings++] = (char *)s;
		if (clean)
			b->owned[b->n_owned++] = clean;
		clean = NULL;
	}
	*id = found;
cleanup:
	free(clean);
	return err;
}

/* ---------------------------------------------------------------- mappings */

/* Frames outside any known module belong to no mapping (id 0). */
static bool has_module(const struct dacce_rframe *frame)
{
	return !rpt_frame_is_truncated(frame) && strcmp(frame->module, "[unknown]") != 0;
}

static uint64_t mapping_hash(const struct dacce_rframe *frame)
{
	return rpt_hash_str(rpt_hash_str(RPT_HASH_SEED, frame->module), frame->build_id);
}

static bool mapping_matches(const void *ctx, uint32_t item, const void *key)
{
	const struct pprof_builder *b = ctx;
	const struct dacce_rframe *have = b->mapping_frames[item], *want = key;

	return strcmp(have->module, want->module) == 0 &&
	       strcmp(have->build_id, want->build_id) == 0;
}

static int add_mapping(struct pprof_builder *b, const struct dacce_rframe *frame, uint32_t *item)
{
	pb_mapping *mapping = &b->mappings[b->message.n_mapping];
	int err;

	*item = (uint32_t)b->message.n_mapping;
	*mapping = (pb_mapping)PERFTOOLS__PROFILES__MAPPING__INIT;
	mapping->id = *item + 1;
	/* Addresses are link-time addresses in the module: the mapping starts at 0. */
	mapping->has_functions = true;
	err = intern(b, frame->module, &mapping->filename);
	if (!err)
		err = intern(b, frame->build_id, &mapping->build_id);
	if (!err)
		err = rpt_index_add(&b->mapping_index, mapping_hash(frame), *item);
	if (err)
		return err;
	b->mapping_frames[*item] = frame;
	b->mapping_ptrs[*item] = mapping;
	b->message.n_mapping++;
	return 0;
}

/* The mapping id of frame's module (0 for none), its flags updated by this frame. */
static int mapping_of(struct pprof_builder *b, const struct dacce_rframe *frame, uint64_t *id)
{
	uint32_t item;
	pb_mapping *mapping;
	int err;

	*id = 0;
	if (!has_module(frame))
		return 0;
	item = rpt_index_find(&b->mapping_index, mapping_hash(frame), frame, mapping_matches, b);
	if (item == RPT_NONE) {
		err = add_mapping(b, frame, &item);
		if (err)
			return err;
	}
	mapping = &b->mappings[item];
	if (frame->address >= mapping->memory_limit)
		mapping->memory_limit = frame->address + 1;
	mapping->has_filenames |= frame->file != NULL;
	mapping->has_line_numbers |= frame->line != 0;
	*id = mapping->id;
	return 0;
}

/* ---------------------------------------------------------------- functions */

static const char *file_of(const struct dacce_rframe *frame)
{
	return frame->file && !rpt_frame_is_truncated(frame) ? frame->file : "";
}

static uint64_t function_hash(const struct dacce_rframe *frame)
{
	return rpt_hash_str(rpt_hash_str(RPT_HASH_SEED, rpt_frame_name(frame)), file_of(frame));
}

static bool function_matches(const void *ctx, uint32_t item, const void *key)
{
	const struct pprof_builder *b = ctx;
	const struct dacce_rframe *have = b->function_frames[item], *want = key;

	return strcmp(rpt_frame_name(have), rpt_frame_name(want)) == 0 &&
	       strcmp(file_of(have), file_of(want)) == 0;
}

/* Functions are deduplicated by name and source file. */
static int function_of(struct pprof_builder *b, const struct dacce_rframe *frame, uint64_t *id)
{
	uint64_t hash = function_hash(frame);
	uint32_t item = rpt_index_find(&b->function_index, hash, frame, function_matches, b);
	pb_function *function;
	int err;

	if (item != RPT_NONE) {
		*id = b->functions[item].id;
		return 0;
	}
	item = (uint32_t)b->message.n_function;
	function = &b->functions[item];
	*function = (pb_function)PERFTOOLS__PROFILES__FUNCTION__INIT;
	function->id = item + 1;
	err = intern(b, rpt_frame_name(frame), &function->name);
	if (!err)
		err = intern(b, file_of(frame), &function->filename);
	if (!err)
		err = rpt_index_add(&b->function_index, hash, item);
	if (err)
		return err;
	function->system_name = function->name; /* demangled only: no other name known */
	b->function_frames[item] = frame;
	b->function_ptrs[item] = function;
	b->message.n_function++;
	*id = function->id;
	return 0;
}

/* ---------------------------------------------------------------- locations */

static uint64_t address_of(const struct dacce_rframe *frame)
{
	return rpt_frame_is_truncated(frame) ? 0 : frame->address;
}

static uint64_t location_hash(const struct location_key *key)
{
	uint64_t hash = rpt_hash_str(RPT_HASH_SEED, key->chain[0]->module);

	hash = rpt_hash_u64(hash, address_of(key->chain[0]));
	for (uint32_t i = 0; i < key->len; i++) {
		hash = rpt_hash_str(hash, rpt_frame_name(key->chain[i]));
		hash = rpt_hash_str(hash, file_of(key->chain[i]));
		hash = rpt_hash_u64(hash, key->chain[i]->line);
	}
	return hash;
}

/*
 * Same module and address, and the same inline chain: a real profile has one
 * chain per address, but a location must never merge functions that differ.
 */
static bool location_matches(const void *ctx, uint32_t item, const void *key)
{
	const struct pprof_builder *b = ctx;
	const struct location_key *have = &b->location_keys[item], *want = key;

	if (have->len != want->len || address_of(have->chain[0]) != address_of(want->chain[0]) ||
	    strcmp(have->chain[0]->module, want->chain[0]->module) != 0)
		return false;
	for (uint32_t i = 0; i < have->len; i++) {
		const struct dacce_rframe *x = have->chain[i], *y = want->chain[i];

		if (strcmp(rpt_frame_name(x), rpt_frame_name(y)) != 0 ||
		    strcmp(file_of(x), file_of(y)) != 0 || x->line != y->line)
			return false;
	}
	return true;
}

/* Lines innermost first: pprof lists the inlined functions before their caller. */
static int add_lines(struct pprof_builder *b, pb_location *location, const struct location_key *key)
{
	location->line = &b->line_ptrs[b->n_lines];
	for (uint32_t i = key->len; i-- > 0;) {
		pb_line *line = &b->lines[b->n_lines];
		int err;

		*line = (pb_line)PERFTOOLS__PROFILES__LINE__INIT;
		err = function_of(b, key->chain[i], &line->function_id);
		if (err)
			return err;
		line->line = key->chain[i]->line;
		b->line_ptrs[b->n_lines++] = line;
		location->n_line++;
	}
	return 0;
}

static int location_of(struct pprof_builder *b, const struct location_key *key, uint64_t *id)
{
	uint64_t hash = location_hash(key);
	uint32_t item = rpt_index_find(&b->location_index, hash, key, location_matches, b);
	pb_location *location;
	int err;

	if (item != RPT_NONE) {
		*id = b->locations[item].id;
		return 0;
	}
	item = (uint32_t)b->message.n_location;
	location = &b->locations[item];
	*location = (pb_location)PERFTOOLS__PROFILES__LOCATION__INIT;
	location->id = item + 1;
	location->address = address_of(key->chain[0]);
	err = mapping_of(b, key->chain[0], &location->mapping_id);
	if (!err && location->mapping_id && key->len > 1)
		b->mappings[location->mapping_id - 1].has_inline_frames = true;
	if (!err)
		err = add_lines(b, location, key);
	if (!err)
		err = rpt_index_add(&b->location_index, hash, item);
	if (err)
		return err;
	b->location_keys[item] = *key;
	b->location_ptrs[item] = location;
	b->message.n_location++;
	*id = location->id;
	return 0;
}

/* ---------------------------------------------------------------- samples */

static pb_label *next_label(struct pprof_builder *b, pb_sample *sample)
{
	pb_label *label = &b->labels[b->n_labels];

	*label = (pb_label)PERFTOOLS__PROFILES__LABEL__INIT;
	b->label_ptrs[b->n_labels++] = label;
	sample->n_label++;
	return label;
}

static int add_labels(struct pprof_builder *b, pb_sample *sample, const struct dacce_rstack *stack)
{
	const char *comm = rpt_str(stack->comm);
	int err = 0;

	sample->label = &b->label_ptrs[b->n_labels];
	if (stack->tid) {
		pb_label *label = next_label(b, sample);

		label->num = stack->tid;
		err = intern(b, "tid", &label->key);
	}
	if (!err && comm[0]) {
		pb_label *label = next_label(b, sample);

		err = intern(b, "comm", &label->key);
		if (!err)
			err = intern(b, comm, &label->str);
	}
	return err;
}

/*
 * Location ids leaf first.  A location is a frame and the frames inlined into
 * it (each inlined frame sits just inside the frame it was inlined into).
 */
static int add_locations(struct pprof_builder *b, pb_sample *sample,
			 const struct dacce_rstack *stack)
{
	sample->location_id = &b->location_ids[b->n_location_ids];
	for (uint32_t inner = stack->n_frames; inner-- > 0;) {
		uint32_t outer = inner;
		struct location_key key;
		int err;

		while (outer > 0 && stack->frames[outer]->inlined)
			outer--;
		key = (struct location_key){ .chain = &stack->frames[outer],
					     .len = inner - outer + 1 };
		err = location_of(b, &key, &b->location_ids[b->n_location_ids]);
		if (err)
			return err;
		b->n_location_ids++;
		sample->n_location_id++;
		inner = outer;
	}
	return 0;
}

static int add_sample(struct pprof_builder *b, const struct dacce_rstack *stack)
{
	pb_sample *sample = &b->samples[b->message.n_sample];
	size_t n_values = b->message.n_sample_type;
	int err;

	*sample = (pb_sample)PERFTOOLS__PROFILES__SAMPLE__INIT;
	sample->value = &b->values[b->message.n_sample * n_values];
	sample->n_value = n_values;
	sample->value[0] = clamp_int64(stack->count);
	if (n_values > 1) {
		unsigned __int128 weight = (unsigned __int128)stack->count * b->profile->period;

		sample->value[1] = weight > INT64_MAX ? INT64_MAX : (int64_t)weight;
	}
	err = add_locations(b, sample, stack);
	if (!err)
		err = add_labels(b, sample, stack);
	if (err)
		return err;
	b->sample_ptrs[b->message.n_sample++] = sample;
	return 0;
}

/* ---------------------------------------------------------------- the profile */

/* pprof's name for the event's sample type: "cpu" for the CPU clocks. */
static const char *event_type(const char *event)
{
	if (!strcmp(event, "cpu-clock") || !strcmp(event, "task-clock"))
		return "cpu";
	return event[0] ? event : "events";
}

static int add_value_type(struct pprof_builder *b, pb_value_type *type, const char *name,
			  const char *unit)
{
	int err;

	*type = (pb_value_type)PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	err = intern(b, name, &type->type);
	if (!err)
		err = intern(b, unit, &type->unit);
	return err;
}

static int add_header(struct pprof_builder *b)
{
	const struct dacce_rprofile *profile = b->profile;
	const char *unit = rpt_str(profile->period_unit);
	pb_profile *message = &b->message;
	int err = intern(b, "", &(int64_t){ 0 });

	if (!err)
		err = add_value_type(b, &b->value_types[0], "samples", "count");
	b->value_type_ptrs[message->n_sample_type++] = &b->value_types[0];
	if (!err && profile->period && unit[0]) {
		const char *type = event_type(rpt_str(profile->event));

		err = add_value_type(b, &b->value_types[1], type, unit);
		b->value_type_ptrs[message->n_sample_type++] = &b->value_types[1];
		message->period_type = &b->value_types[1];
		message->period = clamp_int64(profile->period);
	}
	message->sample_type = b->value_type_ptrs;
	message->duration_nanos = clamp_int64(profile->duration_ns);

	snprintf(b->comments[0], COMMENT_LEN, "dacce: event %s", rpt_str(profile->event));
	snprintf(b->comments[1], COMMENT_LEN,
		 "dacce: %" PRIu64 " samples, %" PRIu64 " with a context, %" PRIu64 " lost",
		 rpt_percent_base(profile), rpt_context_samples(profile), profile->lost_samples);
	for (int i = 0; !err && i < N_COMMENTS; i++)
		err = intern(b, b->comments[i], &b->comment_ids[i]);
	message->comment = b->comment_ids;
	message->n_comment = N_COMMENTS;
	return err;
}

static size_t count_frames(const struct dacce_rprofile *profile)
{
	size_t frames = 0;

	for (size_t i = 0; i < profile->n_stacks; i++)
		if (profile->stacks[i].count)
			frames += profile->stacks[i].n_frames;
	return frames;
}

static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

#define ALLOC(field, n) (b->field = alloc_array((n), sizeof(*b->field)))

/* Every table at its largest: a new entry per frame (or per stack). */
static int allocate(struct pprof_builder *b)
{
	size_t frames = count_frames(b->profile), stacks = b->profile->n_stacks;
	size_t strings = N_FIXED_STRINGS + 4 * frames + stacks;

	if (!ALLOC(strings, strings) || !ALLOC(owned, strings) || !ALLOC(mappings, frames) ||
	    !ALLOC(mapping_ptrs, frames) || !ALLOC(mapping_frames, frames) || !ALLOC(functions, frames) ||
	    !ALLOC(function_ptrs, frames) || !ALLOC(function_frames, frames) ||
	    !ALLOC(locations, frames) || !ALLOC(location_ptrs, frames) ||
	    !ALLOC(location_keys, frames) || !ALLOC(lines, frames) || !ALLOC(line_ptrs, frames) ||
	    !ALLOC(samples, stacks) || !ALLOC(sample_ptrs, stacks) ||
	    !ALLOC(location_ids, frames) || !ALLOC(values, 2 * stacks) ||
	    !ALLOC(labels, 2 * stacks) || !ALLOC(label_ptrs, 2 * stacks))
		return -ENOMEM;
	return 0;
}

static void release(struct pprof_builder *b)
{
	for (size_t i = 0; i < b->n_owned; i++)
		free(b->owned[i]);
	free(b->owned);
	free(b->strings);
	rpt_index_free(&b->string_index);
	free(b->mappings);
	free(b->mapping_ptrs);
	free(b->mapping_frames);
	rpt_index_free(&b->mapping_index);
	free(b->functions);
	free(b->function_ptrs);
	free(b->function_frames);
	rpt_index_free(&b->function_index);
	free(b->locations);
	free(b->location_ptrs);
	free(b->location_keys);
	rpt_index_free(&b->location_index);
	free(b->lines);
	free(b->line_ptrs);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->location_ids);
	free(b->values);
	free(b->labels);
	free(b->label_ptrs);
}

/* Mappings in the order modules first appear, outermost frame first: main's
 * module (the main binary, which pprof expects as mapping[0]) comes first. */
static int add_mappings(struct pprof_builder *b)
{
	int err = 0;

	for (size_t i = 0; !err && i < b->profile->n_stacks; i++) {
		const struct dacce_rstack *stack = &b->profile->stacks[i];
		uint64_t id;

		for (uint32_t j = 0; !err && stack->count && j < stack->n_frames; j++)
			err = mapping_of(b, stack->frames[j], &id);
	}
	return err;
}

static int build(struct pprof_builder *b)
{
	int err = allocate(b);

	if (!err)
		err = add_header(b);
	if (!err)
		err = add_mappings(b);
	for (size_t i = 0; !err && i < b->profile->n_stacks; i++)
		if (b->profile->stacks[i].count)
			err = add_sample(b, &b->profile->stacks[i]);
	if (err)
		return err;
	b->message.sample = b->sample_ptrs;
	b->message.mapping = b->mapping_ptrs;
	b->message.location = b->location_ptrs;
	b->message.function = b->function_ptrs;
	b->message.string_table = b->strings;
	b->message.n_string_table = b->n_strings;
	return 0;
}

/* ---------------------------------------------------------------- output */

/* gzip (not raw zlib): what pprof files are. */
static int write_gzip(FILE *out, const uint8_t *data, size_t len)
{
	z_stream z = { 0 };
	uint8_t chunk[16384];
	int err = 0, status;

	/* windowBits 15 + 16 asks zlib for a gzip header and trailer. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)data;
	z.avail_in = (uInt)len; /* packed profiles stay far below 4 GiB */
	do {
		size_t produced;

		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		status = deflate(&z, Z_FINISH);
		produced = sizeof(chunk) - z.avail_out;
		if (status == Z_STREAM_ERROR ||
		    fwrite(chunk, 1, produced, out) != produced) {
			err = -EIO;
			break;
		}
	} while (status != Z_STREAM_END);
	deflateEnd(&z);
	return err;
}

int dacce_report_pprof(FILE *out, const struct dacce_rprofile *profile,
		       const struct dacce_report_options *opts)
{
	struct pprof_builder b = { .profile = profile,
				   .message = PERFTOOLS__PROFILES__PROFILE__INIT };
	uint8_t *packed = NULL;
	size_t len;
	int err = rpt_check_args(out, profile);

	(void)opts;
	if (err)
		return err;
	err = build(&b);
	if (err)
		goto cleanup;
	len = perftools__profiles__profile__get_packed_size(&b.message);
	if (len > UINT32_MAX) {
		err = -E2BIG;
		goto cleanup;
	}
	packed = malloc(len ? len : 1);
	if (!packed) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&b.message, packed);
	err = write_gzip(out, packed, len);
	if (!err)
		err = rpt_flush(out);
cleanup:
	free(packed);
	release(&b);
	return err;
}
