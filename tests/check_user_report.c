// SPDX-License-Identifier: MIT
/*
 * The report formats against golden files (tests/golden/report/, exact
 * match), and the pprof output decoded back with protobuf-c.
 * DACCE_UPDATE_GOLDEN=1 rewrites the golden files from the current output;
 * DACCE_GOLDEN_DIR points elsewhere than tests/golden/report (run from the
 * top of the tree).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check_main.h"
#include "profile.pb-c.h"
#include "report.h"
#include "report_profiles.h"

/* ---------------------------------------------------------------- more profiles */

static const struct dacce_rframe s_root = FRAME("r", APP, APP_ID, 0x10, "s.c", 1, 0, CALL);
static const struct dacce_rframe s_a = FRAME("a", APP, APP_ID, 0x20, "s.c", 2, 0, CALL);
static const struct dacce_rframe s_b = FRAME("b", APP, APP_ID, 0x30, "s.c", 3, 0, CALL);
static const struct dacce_rframe s_c = FRAME("c", APP, APP_ID, 0x40, "s.c", 4, 0, CALL);

/* Small enough to check the k-CCF by hand: r->a->b, r->c->b, r->a->a->b. */
static struct dacce_rstack small_stacks[] = {
	STACK(0, "", 1, &s_root, &s_a, &s_b),
	STACK(0, "", 2, &s_root, &s_c, &s_b),
	STACK(0, "", 1, &s_root, &s_a, &s_a, &s_b),
};

static struct dacce_rprofile small_profile(void)
{
	return (struct dacce_rprofile){
		.stacks = small_stacks,
		.n_stacks = sizeof(small_stacks) / sizeof(small_stacks[0]),
		.event = "cpu-clock",
		.period = 10,
		.period_unit = "nanoseconds",
		.total_samples = 4,
	};
}

/* Names that would break a format: quotes, backslashes, control characters, bad UTF-8. */
static const struct dacce_rframe e_outer = FRAME("say \"hi\"\\now", APP, APP_ID, 0x10, "dir\\f.c", 3, 0, CALL);
static const struct dacce_rframe e_inner = FRAME("two\nlines;\ttab\x01 na\xc3\xafve \xff\xc3", APP, APP_ID, 0x20, NULL, 0, 1, CALL);

static struct dacce_rstack escape_stacks[] = {
	STACK(7, "sh;\"x\"\n", 2, &e_outer, &e_inner),
	STACK(7, "sh;\"x\"\n", 1, &e_outer),
};

static struct dacce_rprofile escape_profile(void)
{
	return (struct dacce_rprofile){
		.stacks = escape_stacks,
		.n_stacks = sizeof(escape_stacks) / sizeof(escape_stacks[0]),
		.event = "page-faults\t",
		.period = 1,
		.period_unit = "events",
		.total_samples = 3,
	};
}

/* Recursion deeper than the CCT indents: main, then rec 70 times. */
#define DEEP_FRAMES 71
static const struct dacce_rframe d_rec = FRAME("rec", APP, APP_ID, 0x50, "rec.c", 5, 0, CALL);
static const struct dacce_rframe *deep_frames[DEEP_FRAMES];
static struct dacce_rstack deep_stacks[2];

static struct dacce_rprofile deep_profile(void)
{
	deep_frames[0] = &s_root;
	for (int i = 1; i < DEEP_FRAMES; i++)
		deep_frames[i] = &d_rec;
	deep_stacks[0] = (struct dacce_rstack){ .frames = deep_frames, .n_frames = DEEP_FRAMES,
						.count = 3 };
	deep_stacks[1] = (struct dacce_rstack){ .frames = deep_frames, .n_frames = 40,
						.count = 1 };
	return (struct dacce_rprofile){ .stacks = deep_stacks, .n_stacks = 2, .event = "cpu-clock",
					.total_samples = 4 };
}

static struct dacce_rprofile empty_profile(void)
{
	return (struct dacce_rprofile){ .event = "cpu-clock", .period = 1000000,
					.period_unit = "nanoseconds" };
}

/* ---------------------------------------------------------------- helpers */

struct output {
	char *text;
	size_t len;
};

static struct output render(enum dacce_report_format format, const struct dacce_rprofile *profile,
			    const struct dacce_report_options *opts)
{
	struct output out = { 0 };
	FILE *stream = open_memstream(&out.text, &out.len);

	ck_assert_ptr_nonnull(stream);
	ck_assert_int_eq(dacce_report_write(stream, format, profile, opts), 0);
	ck_assert_int_eq(fclose(stream), 0);
	return out;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *file = fopen(path, "rb");
	char *text = NULL;
	size_t cap = 0;
	int c;

	*len = 0;
	if (!file)
		return NULL;
	while ((c = fgetc(file)) != EOF) {
		if (*len + 1 >= cap) {
			cap = cap ? cap * 2 : 4096;
			text = realloc(text, cap);
			ck_assert_ptr_nonnull(text);
		}
		text[(*len)++] = (char)c;
	}
	fclose(file);
	return text ? text : calloc(1, 1);
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *file = fopen(path, "wb");

	ck_assert_msg(file != NULL, "cannot write %s", path);
	ck_assert_uint_eq(fwrite(text, 1, len, file), len);
	ck_assert_int_eq(fclose(file), 0);
}

static unsigned first_different_line(const char *a, size_t a_len, const char *b, size_t b_len)
{
	unsigned line = 1;

	for (size_t i = 0; i < a_len && i < b_len && a[i] == b[i]; i++)
		if (a[i] == '\n')
			line++;
	return line;
}

/* Output must equal tests/golden/report/NAME byte for byte. */
static void check_golden(const char *name, const struct output *actual)
{
	const char *dir = getenv("DACCE_GOLDEN_DIR");
	char path[512], saved[512];
	char *expected;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/golden/report", name);
	if (getenv("DACCE_UPDATE_GOLDEN")) {
		write_file(path, actual->text, actual->len);
		return;
	}
	expected = read_file(path, &len);
	ck_assert_msg(expected != NULL, "no golden file %s (DACCE_UPDATE_GOLDEN=1 writes it)",
		      path);
	if (len != actual->len || memcmp(expected, actual->text, len) != 0) {
		snprintf(saved, sizeof(saved), "/tmp/dacce-report-%s.actual", name);
		write_file(saved, actual->text, actual->len);
		ck_abort_msg("%s differs from the output at line %u (output in %s)", path,
			     first_different_line(expected, len, actual->text, actual->len),
			     saved);
	}
	free(expected);
}

static void check_format(const char *golden, enum dacce_report_format format,
			 const struct dacce_rprofile *profile,
			 const struct dacce_report_options *opts)
{
	struct output out = render(format, profile, opts);

	check_golden(golden, &out);
	free(out.text);
}

static struct dacce_report_options options(void)
{
	struct dacce_report_options opts;

	dacce_report_options_init(&opts);
	return opts;
}

/* ---------------------------------------------------------------- text formats */

START_TEST(test_top)
{
	struct dacce_rprofile profile = mixed_profile();
	struct dacce_report_options opts = options();

	check_format("top.txt", DACCE_REPORT_TOP, &profile, NULL);
	opts.limit = 2;
	opts.by_thread = true;
	check_format("top-threads-limit2.txt", DACCE_REPORT_TOP, &profile, &opts);
}
END_TEST

START_TEST(test_cct)
{
	struct dacce_rprofile profile = mixed_profile();
	struct dacce_report_options opts = options();

	check_format("cct.txt", DACCE_REPORT_CCT, &profile, NULL);
	opts.min_percent = 10;
	check_format("cct-min10.txt", DACCE_REPORT_CCT, &profile, &opts);
}
END_TEST

START_TEST(test_deep_recursion)
{
	struct dacce_rprofile profile = deep_profile();
	struct dacce_report_options opts = options();

	check_format("cct-deep.txt", DACCE_REPORT_CCT, &profile, NULL);
	opts.k = 2;
	check_format("kccf-deep-k2.txt", DACCE_REPORT_KCCF, &profile, &opts);
	check_format("folded-deep.txt", DACCE_REPORT_FOLDED, &profile, NULL);
}
END_TEST

START_TEST(test_kccf)
{
	struct dacce_rprofile profile = mixed_profile();
	struct dacce_rprofile small = small_profile();
	struct dacce_report_options opts = options();

	opts.k = 1;
	check_format("kccf-small-k1.txt", DACCE_REPORT_KCCF, &small, &opts);
	check_format("kccf-k1.txt", DACCE_REPORT_KCCF, &profile, &opts);
	opts.k = 2;
	check_format("kccf-k2.txt", DACCE_REPORT_KCCF, &profile, &opts);
	opts.min_percent = 20;
	check_format("kccf-k2-min20.txt", DACCE_REPORT_KCCF, &profile, &opts);
}
END_TEST

/* Property 5 of the paper: k-CCF = inf-CCF once k reaches the CCT's depth. */
START_TEST(test_kccf_stops_growing_at_cct_depth)
{
	struct dacce_rprofile profile = mixed_profile();
	struct dacce_report_options opts = options();
	struct output deep, deeper;

	opts.k = 5; /* the deepest stack has 5 frames: 4 calls */
	deep = render(DACCE_REPORT_KCCF, &profile, &opts);
	opts.k = 4000000000u;
	deeper = render(DACCE_REPORT_KCCF, &profile, &opts);
	/* Only the header line naming k differs. */
	ck_assert_ptr_nonnull(strchr(deep.text, '\n'));
	ck_assert_str_eq(strchr(strchr(deep.text, '\n') + 1, '\n'),
			 strchr(strchr(deeper.text, '\n') + 1, '\n'));
	free(deep.text);
	free(deeper.text);
}
END_TEST

START_TEST(test_folded)
{
	struct dacce_rprofile profile = mixed_profile();
	struct dacce_report_options opts = options();

	check_format("folded.txt", DACCE_REPORT_FOLDED, &profile, NULL);
	opts.thread_prefix = true;
	check_format("folded-threads.txt", DACCE_REPORT_FOLDED, &profile, &opts);
}
END_TEST

START_TEST(test_json)
{
	struct dacce_rprofile profile = mixed_profile();
	struct dacce_report_options opts = options();

	check_format("top.json", DACCE_REPORT_JSON, &profile, NULL);
	opts.limit = 1;
	opts.by_thread = true;
	check_format("top-threads-limit1.json", DACCE_REPORT_JSON, &profile, &opts);
}
END_TEST

START_TEST(test_names_are_escaped)
{
	struct dacce_rprofile profile = escape_profile();
	struct dacce_report_options opts = options();

	opts.thread_prefix = true;
	check_format("escape-folded.txt", DACCE_REPORT_FOLDED, &profile, &opts);
	check_format("escape.json", DACCE_REPORT_JSON, &profile, NULL);
}
END_TEST

START_TEST(test_empty_profile)
{
	struct dacce_rprofile profile = empty_profile();

	check_format("empty-top.txt", DACCE_REPORT_TOP, &profile, NULL);
	check_format("empty-cct.txt", DACCE_REPORT_CCT, &profile, NULL);
	check_format("empty-kccf.txt", DACCE_REPORT_KCCF, &profile, NULL);
	check_format("empty-folded.txt", DACCE_REPORT_FOLDED, &profile, NULL);
	check_format("empty.json", DACCE_REPORT_JSON, &profile, NULL);
}
END_TEST

/* ---------------------------------------------------------------- pprof */

static uint8_t *gunzip(const uint8_t *data, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = 1 << 16;
	uint8_t *out = malloc(cap);
	int status;

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(inflateInit2(&z, 16 + 15), Z_OK); /* gzip only, not zlib */
	z.next_in = (uint8_t *)data;
	z.avail_in = (uInt)len;
	do {
		if (z.total_out == cap) {
			cap *= 2;
			out = realloc(out, cap);
			ck_assert_ptr_nonnull(out);
		}
		z.next_out = out + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		status = inflate(&z, Z_NO_FLUSH);
		ck_assert_msg(status == Z_OK || status == Z_STREAM_END, "inflate: %d", status);
	} while (status != Z_STREAM_END);
	ck_assert_uint_eq(z.avail_in, 0);
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

static Perftools__Profiles__Profile *decode_pprof(const struct dacce_rprofile *profile)
{
	struct output out = render(DACCE_REPORT_PPROF, profile, NULL);
	Perftools__Profiles__Profile *decoded;
	uint8_t *raw;
	size_t len;

	ck_assert_uint_gt(out.len, 2);
	ck_assert_uint_eq((uint8_t)out.text[0], 0x1f); /* gzip magic */
	ck_assert_uint_eq((uint8_t)out.text[1], 0x8b);
	raw = gunzip((const uint8_t *)out.text, out.len, &len);
	decoded = perftools__profiles__profile__unpack(NULL, len, raw);
	ck_assert_ptr_nonnull(decoded);
	free(raw);
	free(out.text);
	return decoded;
}

static const char *str_at(const Perftools__Profiles__Profile *p, int64_t index)
{
	ck_assert_int_ge(index, 0);
	ck_assert_uint_lt((uint64_t)index, p->n_string_table);
	return p->string_table[index];
}

static const Perftools__Profiles__Location *location_by_id(const Perftools__Profiles__Profile *p,
							   uint64_t id)
{
	ck_assert_uint_ge(id, 1);
	ck_assert_uint_le(id, p->n_location);
	ck_assert_uint_eq(p->location[id - 1]->id, id); /* ids are dense, in order */
	return p->location[id - 1];
}

static const char *function_name(const Perftools__Profiles__Profile *p, uint64_t id)
{
	ck_assert_uint_ge(id, 1);
	ck_assert_uint_le(id, p->n_function);
	ck_assert_uint_eq(p->function[id - 1]->id, id);
	return str_at(p, p->function[id - 1]->name);
}

static void check_value_type(const Perftools__Profiles__Profile *p,
			     const Perftools__Profiles__ValueType *type, const char *name,
			     const char *unit)
{
	ck_assert_ptr_nonnull(type);
	ck_assert_str_eq(str_at(p, type->type), name);
	ck_assert_str_eq(str_at(p, type->unit), unit);
}

/* Every id resolves, no two entries share one, no string twice in the table. */
static void check_tables(const Perftools__Profiles__Profile *p)
{
	ck_assert_uint_ge(p->n_string_table, 1);
	ck_assert_str_eq(p->string_table[0], "");
	for (size_t i = 0; i < p->n_string_table; i++)
		for (size_t j = i + 1; j < p->n_string_table; j++)
			ck_assert_str_ne(p->string_table[i], p->string_table[j]);
	for (size_t i = 0; i < p->n_mapping; i++) {
		ck_assert_uint_eq(p->mapping[i]->id, i + 1);
		ck_assert(p->mapping[i]->has_functions);
	}
	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *loc = location_by_id(p, i + 1);

		ck_assert_uint_le(loc->mapping_id, p->n_mapping);
		ck_assert_uint_ge(loc->n_line, 1);
		for (size_t j = 0; j < loc->n_line; j++)
			function_name(p, loc->line[j]->function_id);
	}
	for (size_t i = 0; i < p->n_sample; i++) {
		ck_assert_uint_eq(p->sample[i]->n_value, p->n_sample_type);
		for (size_t j = 0; j < p->sample[i]->n_location_id; j++)
			location_by_id(p, p->sample[i]->location_id[j]);
	}
}

static const char *label_str(const Perftools__Profiles__Profile *p,
			     const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str_at(p, s->label[i]->key), key))
			return str_at(p, s->label[i]->str);
	return NULL;
}

static int64_t label_num(const Perftools__Profiles__Profile *p,
			 const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str_at(p, s->label[i]->key), key))
			return s->label[i]->num;
	return -1;
}

START_TEST(test_pprof_header)
{
	struct dacce_rprofile profile = mixed_profile();
	Perftools__Profiles__Profile *p = decode_pprof(&profile);

	check_tables(p);
	ck_assert_uint_eq(p->n_sample_type, 2);
	check_value_type(p, p->sample_type[0], "samples", "count");
	check_value_type(p, p->sample_type[1], "cpu", "nanoseconds");
	check_value_type(p, p->period_type, "cpu", "nanoseconds");
	ck_assert_int_eq(p->period, 1000000);
	ck_assert_int_eq(p->duration_nanos, 2500000000LL);
	ck_assert_uint_eq(p->n_comment, 2);
	ck_assert_str_eq(str_at(p, p->comment[0]), "dacce: event cpu-clock");
	ck_assert_str_eq(str_at(p, p->comment[1]), "dacce: 27 samples, 25 with a context, 3 lost");
	perftools__profiles__profile__free_unpacked(p, NULL);
}
END_TEST

START_TEST(test_pprof_tables)
{
	struct dacce_rprofile profile = mixed_profile();
	Perftools__Profiles__Profile *p = decode_pprof(&profile);

	/* One per distinct (module, address); compute+add share one. */
	ck_assert_uint_eq(p->n_location, 17);
	/* main, compute, add, memcpy, fib, start_workers, worker, work, the template, on_alarm,
	 * [truncated], deep, libx.so+0x4321 */
	ck_assert_uint_eq(p->n_function, 13);
	/* app first (the main binary), libc, libx; [unknown] has none. */
	ck_assert_uint_eq(p->n_mapping, 3);
	ck_assert_str_eq(str_at(p, p->mapping[0]->filename), APP);
	ck_assert_str_eq(str_at(p, p->mapping[0]->build_id), APP_ID);
	ck_assert(p->mapping[0]->has_inline_frames);
	ck_assert(p->mapping[0]->has_line_numbers);
	ck_assert_str_eq(str_at(p, p->mapping[1]->filename), LIBC);
	ck_assert_str_eq(str_at(p, p->mapping[1]->build_id), LIBC_ID);
	ck_assert(!p->mapping[1]->has_filenames);
	ck_assert_str_eq(str_at(p, p->mapping[2]->filename), LIBX);
	perftools__profiles__profile__free_unpacked(p, NULL);
}
END_TEST

START_TEST(test_pprof_samples)
{
	struct dacce_rprofile profile = mixed_profile();
	Perftools__Profiles__Profile *p = decode_pprof(&profile);
	const Perftools__Profiles__Sample *s;
	const Perftools__Profiles__Location *loc;

	/* One sample per stack with samples, in order; the stack without any is left out. */
	ck_assert_uint_eq(p->n_sample, 9);

	/* main -> compute -> add (inlined) -> memcpy: three locations, leaf first. */
	s = p->sample[0];
	ck_assert_int_eq(s->value[0], 5);
	ck_assert_int_eq(s->value[1], 5 * 1000000);
	ck_assert_int_eq(label_num(p, s, "tid"), 101);
	ck_assert_str_eq(label_str(p, s, "comm"), "app");
	ck_assert_uint_eq(s->n_location_id, 3);
	loc = location_by_id(p, s->location_id[0]);
	ck_assert_uint_eq(loc->address, 0x9a0c0);
	ck_assert_str_eq(function_name(p, loc->line[0]->function_id), "memcpy");
	loc = location_by_id(p, s->location_id[1]);
	ck_assert_uint_eq(loc->address, 0x1180);
	ck_assert_uint_eq(loc->n_line, 2);
	ck_assert_str_eq(function_name(p, loc->line[0]->function_id), "add");
	ck_assert_int_eq(loc->line[0]->line, 12);
	ck_assert_str_eq(function_name(p, loc->line[1]->function_id), "compute");
	ck_assert_int_eq(loc->line[1]->line, 30);
	ck_assert_str_eq(str_at(p, p->mapping[loc->mapping_id - 1]->filename), APP);
	loc = location_by_id(p, s->location_id[2]);
	ck_assert_str_eq(function_name(p, loc->line[0]->function_id), "main");

	/* Recursion: fib's call site is one location, repeated. */
	s = p->sample[2];
	ck_assert_uint_eq(s->n_location_id, 4);
	ck_assert_uint_eq(s->location_id[1], s->location_id[2]);
	ck_assert_uint_ne(s->location_id[0], s->location_id[1]);
	ck_assert_str_eq(function_name(p, location_by_id(p, s->location_id[0])->line[0]->function_id),
			 function_name(p, location_by_id(p, s->location_id[1])->line[0]->function_id));

	/* Same frames, other thread: the same locations, other labels. */
	ck_assert_uint_eq(p->sample[8]->n_location_id, 3);
	ck_assert_mem_eq(p->sample[8]->location_id, p->sample[0]->location_id,
			 3 * sizeof(uint64_t));
	ck_assert_int_eq(label_num(p, p->sample[8], "tid"), 102);
	ck_assert_str_eq(label_str(p, p->sample[8], "comm"), "worker");

	/* The truncated context ends in a [truncated] location outside any mapping. */
	s = p->sample[7];
	ck_assert_uint_eq(s->n_location_id, 3);
	loc = location_by_id(p, s->location_id[2]);
	ck_assert_uint_eq(loc->mapping_id, 0);
	ck_assert_str_eq(function_name(p, loc->line[0]->function_id), "[truncated]");
	perftools__profiles__profile__free_unpacked(p, NULL);
}
END_TEST

START_TEST(test_pprof_empty_profile)
{
	struct dacce_rprofile profile = empty_profile();
	Perftools__Profiles__Profile *p = decode_pprof(&profile);

	check_tables(p);
	ck_assert_uint_eq(p->n_sample, 0);
	ck_assert_uint_eq(p->n_location, 0);
	ck_assert_uint_eq(p->n_sample_type, 2);
	perftools__profiles__profile__free_unpacked(p, NULL);
}
END_TEST

/* proto3 strings must be UTF-8: Go's protobuf refuses a whole profile otherwise. */
START_TEST(test_pprof_strings_are_utf8)
{
	struct dacce_rprofile profile = escape_profile();
	Perftools__Profiles__Profile *p = decode_pprof(&profile);
	const Perftools__Profiles__Location *leaf;

	check_tables(p);
	leaf = location_by_id(p, p->sample[0]->location_id[0]);
	ck_assert_uint_eq(leaf->n_line, 2);
	ck_assert_str_eq(function_name(p, leaf->line[0]->function_id),
			 "two\nlines;\ttab\x01 na\xc3\xafve \xef\xbf\xbd\xef\xbf\xbd");
	ck_assert_str_eq(function_name(p, leaf->line[1]->function_id), "say \"hi\"\\now");
	ck_assert_str_eq(label_str(p, p->sample[0], "comm"), "sh;\"x\"\n");
	check_value_type(p, p->sample_type[1], "page-faults\t", "events");
	perftools__profiles__profile__free_unpacked(p, NULL);
}
END_TEST

/* ---------------------------------------------------------------- arguments */

START_TEST(test_bad_arguments_are_refused)
{
	struct dacce_rprofile profile = mixed_profile();
	struct dacce_report_options opts = options();
	const struct dacce_rframe *no_frame[] = { &f_main_compute, NULL };
	struct dacce_rstack bad_stack = { .frames = no_frame, .n_frames = 2, .count = 1 };
	struct dacce_rprofile bad = { .stacks = &bad_stack, .n_stacks = 1 };
	struct dacce_rframe no_module = f_deep;
	const struct dacce_rframe *no_module_frames[] = { &no_module };
	enum dacce_report_format format;

	for (int f = 0; f < DACCE_REPORT_FORMAT_COUNT; f++) {
		ck_assert_int_eq(dacce_report_write(stdout, f, NULL, NULL), -EINVAL);
		ck_assert_int_eq(dacce_report_write(NULL, f, &profile, NULL), -EINVAL);
		ck_assert_int_eq(dacce_report_write(stdout, f, &bad, NULL), -EINVAL);
	}
	no_module.module = NULL;
	bad_stack.frames = no_module_frames;
	bad_stack.n_frames = 1;
	ck_assert_int_eq(dacce_report_top(stdout, &bad, NULL), -EINVAL);
	ck_assert_int_eq(dacce_report_write(stdout, DACCE_REPORT_FORMAT_COUNT, &profile, NULL),
			 -EINVAL);
	opts.k = 0;
	ck_assert_int_eq(dacce_report_kccf(stdout, &profile, &opts), -EINVAL);
	opts = options();
	opts.min_percent = -1;
	ck_assert_int_eq(dacce_report_cct(stdout, &profile, &opts), -EINVAL);

	ck_assert_int_eq(dacce_report_format_parse("kccf", &format), 0);
	ck_assert_int_eq(format, DACCE_REPORT_KCCF);
	ck_assert_int_eq(dacce_report_format_parse("flamegraph", &format), -EINVAL);
	for (int f = 0; f < DACCE_REPORT_FORMAT_COUNT; f++) {
		ck_assert_int_eq(dacce_report_format_parse(dacce_report_format_name(f), &format), 0);
		ck_assert_int_eq(format, f);
	}
	ck_assert_str_eq(dacce_report_format_name(DACCE_REPORT_FORMAT_COUNT), "unknown");
	dacce_report_options_init(NULL);
}
END_TEST

/* A full disk is an error, not a short report. */
START_TEST(test_write_errors_are_reported)
{
	struct dacce_rprofile profile = mixed_profile();
	FILE *full = fopen("/dev/full", "w");

	if (!full)
		return; /* no /dev/full in this environment */
	for (int f = 0; f < DACCE_REPORT_FORMAT_COUNT; f++) {
		ck_assert_int_eq(dacce_report_write(full, f, &profile, NULL), -EIO);
		clearerr(full);
	}
	fclose(full);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *text = tcase_create("text");
	TCase *pprof = tcase_create("pprof");
	TCase *args = tcase_create("arguments");

	tcase_add_test(text, test_top);
	tcase_add_test(text, test_cct);
	tcase_add_test(text, test_kccf);
	tcase_add_test(text, test_deep_recursion);
	tcase_add_test(text, test_kccf_stops_growing_at_cct_depth);
	tcase_add_test(text, test_folded);
	tcase_add_test(text, test_json);
	tcase_add_test(text, test_names_are_escaped);
	tcase_add_test(text, test_empty_profile);
	suite_add_tcase(s, text);
	tcase_add_test(pprof, test_pprof_header);
	tcase_add_test(pprof, test_pprof_tables);
	tcase_add_test(pprof, test_pprof_samples);
	tcase_add_test(pprof, test_pprof_empty_profile);
	tcase_add_test(pprof, test_pprof_strings_are_utf8);
	suite_add_tcase(s, pprof);
	tcase_add_test(args, test_bad_arguments_are_refused);
	tcase_add_test(args, test_write_errors_are_reported);
	suite_add_tcase(s, args);
	return s;
}

int main(void)
{
	return run_suite(report_suite());
}
