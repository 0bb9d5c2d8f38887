// SPDX-License-Identifier: MIT
/*
 * `dacce decode`: one raw context (as a program logged it with
 * dacce_context_get, or as a script read it) decoded against a capture.
 *
 *   dacce decode -i dacce.db -p PID -e EPOCH --id ID [--pc ADDR] [--tid TID]
 *                [ID:EDGE[:AUX] ...]      ccStack entries, outermost first
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "dacce_events.h"
#include "launch_util.h"
#include "model.h"
#include "profile_build.h"
#include "store.h"

struct decode_opts {
	const char *input;
	uint32_t pid, tid;
	uint64_t epoch, id, pc, reset_id;
	int have_epoch, have_id, have_reset;
	struct dacce_cc_entry *entries;
	uint32_t n_entries;
};

static int parse_number(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || end == s || *end ? -EINVAL : 0;
}

static int parse_entry(const char *s, struct dacce_cc_entry *e)
{
	unsigned long long id, edge, aux = 0;
	char tail;
	int n = sscanf(s, "%llu:%llu:%llu%c", &id, &edge, &aux, &tail);

	if ((n != 2 && n != 3) || edge > UINT32_MAX || aux > UINT32_MAX)
		return -EINVAL;
	*e = (struct dacce_cc_entry){ .id = id, .edge = (uint32_t)edge, .aux = (uint32_t)aux };
	return 0;
}

static int parse_decode(int argc, char **argv, struct decode_opts *o)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' }, { "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },   { "epoch", required_argument, NULL, 'e' },
		{ "id", required_argument, NULL, 'I' },	   { "pc", required_argument, NULL, 'c' },
		{ "reset-id", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },	   { 0 },
	};
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->input = "dacce.db";
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:p:t:e:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o->input = optarg; break;
		case 'p':
		case 't':
			if (dacce_parse_u64(optarg, 1, UINT32_MAX, &v)) {
				dacce_err("bad %s '%s'", c == 'p' ? "pid" : "tid", optarg);
				return -EINVAL;
			}
			*(c == 'p' ? &o->pid : &o->tid) = (uint32_t)v;
			break;
		case 'e': o->have_epoch = !parse_number(optarg, &o->epoch); goto check;
		case 'I': o->have_id = !parse_number(optarg, &o->id); goto check;
		case 'r': o->have_reset = !parse_number(optarg, &o->reset_id); goto check;
		case 'c':
			if (parse_number(optarg, &o->pc)) {
				dacce_err("bad pc '%s'", optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			printf("usage: dacce decode [-i FILE] -p PID -e EPOCH --id ID [--pc ADDR] "
			       "[--tid TID] [--reset-id N] [ID:EDGE[:AUX]...]\n"
			       "  entries are the ccStack's, outermost first\n");
			return 1;
		default: return -EINVAL;
		}
		continue;
check:
		if (!(c == 'e' ? o->have_epoch : c == 'I' ? o->have_id : o->have_reset)) {
			dacce_err("bad number '%s'", optarg);
			return -EINVAL;
		}
	}
	if (!o->pid || !o->have_epoch || !o->have_id) {
		dacce_err("decode needs -p PID, -e EPOCH and --id ID; see 'dacce decode --help'");
		return -EINVAL;
	}
	o->n_entries = (uint32_t)(argc - optind);
	o->entries = calloc(o->n_entries ? o->n_entries : 1, sizeof(*o->entries));
	if (!o->entries)
		return -ENOMEM;
	for (uint32_t i = 0; i < o->n_entries; i++)
		if (parse_entry(argv[optind + (int)i], &o->entries[i])) {
			dacce_err("bad ccStack entry '%s': want ID:EDGE[:AUX]", argv[optind + (int)i]);
			return -EINVAL;
		}
	return 0;
}

/* The last image of pid that ran the runtime. */
static struct dacce_model_proc *image_of(struct dacce_model *model, uint32_t pid)
{
	for (size_t i = model->n_procs; i-- > 0;)
		if (model->procs[i].pid == pid && model->procs[i].runtime)
			return &model->procs[i];
	return NULL;
}

static void print_frames(const struct dacce_rframe **frames, int n)
{
	for (int i = n - 1, k = 0; i >= 0; i--, k++) {
		const struct dacce_rframe *f = frames[i];

		printf("#%-3d %s (%s)", k, f->function, f->module);
		if (f->file)
			printf(" at %s:%u", f->file, f->line);
		printf("\n");
	}
}

int dacce_cmd_decode(int argc, char **argv)
{
	struct dacce_profile_builder *builder = NULL;
	const struct dacce_rframe **frames;
	struct dacce_model model = { 0 };
	struct dacce_store *store = NULL;
	struct dacce_model_proc *proc;
	struct dacce_resolved r;
	struct dacce_raw_context ctx;
	struct decode_opts o;
	char why[512];
	int err, n, status = 1;

	dacce_resolved_init(&r);
	err = parse_decode(argc, argv, &o);
	if (err) {
		free(o.entries);
		return err > 0 ? 0 : 2;
	}
	if (dacce_store_open(o.input, &store, why, sizeof(why)) ||
	    dacce_model_load(store, &model, why, sizeof(why))) {
		dacce_err("%s", why);
		goto out;
	}
	proc = image_of(&model, o.pid);
	if (!proc) {
		dacce_err("process %u ran no runtime in %s", o.pid, o.input);
		goto out;
	}
	if (!o.have_reset) {
		const struct dacce_dict *dict = dacce_model_dict(proc, o.epoch);

		if (!dict) {
			dacce_err("process %u has no dictionary for epoch %" PRIu64, o.pid, o.epoch);
			goto out;
		}
		o.reset_id = dict->max_id + 1;
	}
	ctx = (struct dacce_raw_context){ .epoch = o.epoch, .id = o.id, .reset_id = o.reset_id,
					  .depth = o.n_entries, .flags = DACCE_CTX_VALID,
					  .n_entries = o.n_entries, .entries = o.entries };
	dacce_model_resolve(proc, o.tid ? o.tid : o.pid, o.pc, &ctx, NULL, &r);
	if (r.status != DACCE_RESOLVED) {
		dacce_err("context does not decode: %s%s%s", dacce_resolve_status_name(r.status),
			  r.why ? ": " : "", r.why ? r.why : "");
		goto out;
	}
	if (dacce_profile_builder_new(&model, &builder) ||
	    (n = dacce_profile_frames(builder, proc, &r, &frames)) < 0) {
		dacce_err("out of memory");
		goto out;
	}
	print_frames(frames, n);
	status = 0;
out:
	dacce_resolved_fini(&r);
	dacce_profile_builder_free(builder);
	dacce_model_fini(&model);
	dacce_store_close(store);
	free(o.entries);
	return status;
}
