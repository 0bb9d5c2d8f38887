// SPDX-License-Identifier: MIT
/*
 * Validating a capture: each sample with a stack copy is resolved as the
 * reports resolve it, unwound with the modules' CFI, and both reduced to
 * validation frames (validate.h) and compared.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dacce_events.h"
#include "store.h"
#include "symbolize.h"
#include "stack_unwind.h"
#include "validate.h"

#define MAX_UNWIND_FRAMES 4096

/*
 * The code generated for one call site: [start, end) stands for site in
 * caller.  caller DACCE_NONE: code of no site, such as the runtime's
 * tail-call return stub.
 */
struct site_code {
	uint64_t start, end;
	uint32_t caller;
	uint64_t site; /* link-time offset in caller's module */
	/* A return through start goes through a frame's tail record: the stub, or a leaf tail jump's return point. */
	bool tail_return;
};

/* What validating one process image needs. */
struct image {
	struct dacce_model_proc *proc;
	struct dacce_unwinder *unwinder;
	struct site_code *code; /* sorted by start */
	size_t n_code;
	uint64_t *stand_ins; /* `ret` bytes the loader's functions return through (DACCE_CODE_STAND_IN) */
	size_t n_stand_ins;
};

struct validator {
	struct dacce_model *model;
	const struct dacce_validate_options *opts;
	FILE *out;
	struct dacce_validate_result *result;
	struct dacce_symbolizer *sym;
	char *runtime_path;
	struct image image;
	struct dacce_unwind_frame *frames;
	struct dacce_vframes physical, logical;
	struct dacce_resolved resolved;
	uint32_t shown;
	uint8_t *stack;	      /* the sample's stack copy, with tail returns put back */
	size_t stack_cap;
	int vdso_fd; /* this process's vDSO as a file, or -1 */
	char vdso_path[64];
};

static void count_unverifiable(struct dacce_validate_result *res, const char *reason)
{
	uint32_t i;

	res->unverifiable++;
	for (i = 0; i < res->n_reasons; i++)
		if (strcmp(res->reasons[i].reason, reason) == 0)
			break;
	if (i == res->n_reasons) {
		if (i == DACCE_VALIDATE_MAX_REASONS)
			i--; /* the last one collects the rest */
		else
			res->reasons[res->n_reasons++].reason = reason;
	}
	res->reasons[i].count++;
}

/* ------------------------------------------------------------------ the vDSO */

/*
 * The vDSO has no file: the one the kernel maps into this process is the one
 * it mapped into the program (same kernel), so it is written to a memfd that
 * the unwinder opens by path.  The build-id the runtime recorded still has to
 * match, so a capture from another kernel gets "build-id mismatch".
 */
static void open_vdso(struct validator *v)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	uint64_t size;

	v->vdso_fd = -1;
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return;
	size = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)eh + eh->e_phoff) + i;

		if (ph->p_offset + ph->p_filesz > size)
			size = ph->p_offset + ph->p_filesz;
	}
	v->vdso_fd = memfd_create("vdso", MFD_CLOEXEC);
	if (v->vdso_fd < 0)
		return;
	if (write(v->vdso_fd, eh, size) != (ssize_t)size) {
		close(v->vdso_fd);
		v->vdso_fd = -1;
		return;
	}
	snprintf(v->vdso_path, sizeof(v->vdso_path), "/proc/self/fd/%d", v->vdso_fd);
}

/* The file to read a module from: its path, or the vDSO's copy. */
static const char *module_file(const struct validator *v, const char *path)
{
	if (strncmp(path, "linux-vdso.so", 13) == 0 || strcmp(path, "[vdso]") == 0)
		return v->vdso_fd >= 0 ? v->vdso_path : path;
	return path;
}

/* ------------------------------------------------------------------ one image */

static int by_start(const void *a, const void *b)
{
	const struct site_code *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void image_fini(struct image *im)
{
	dacce_unwinder_free(im->unwinder);
	free(im->code);
	free(im->stand_ins);
	*im = (struct image){ 0 };
}

/* The region of generated code holding address, as [start, end); false when none does. */
static bool region_of(const struct dacce_model_proc *p, uint64_t address, uint64_t *end)
{
	for (size_t i = 0; i < p->n_regions; i++)
		if (address >= p->region_start[i] && address - p->region_start[i] < p->region_size[i]) {
			*end = p->region_start[i] + p->region_size[i];
			return true;
		}
	return false;
}

/*
 * The code of each call site, from the addresses where each site's code
 * begins: it runs to the next such address or the end of its region.
 */
static int load_site_code(struct dacce_model *model, struct image *im)
{
	sqlite3_stmt *stmt = dacce_store_prepare(
		model->store, "SELECT address, site_caller, site_offset FROM code_entries "
			      "WHERE proc = ?1 AND site_offset IS NOT NULL ORDER BY address");
	size_t cap = 0;
	int err = 0;

	if (!stmt)
		return -EIO;
	sqlite3_bind_int64(stmt, 1, im->proc->id);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		uint64_t address = (uint64_t)sqlite3_column_int64(stmt, 0), end;
		uint32_t caller = (uint32_t)sqlite3_column_int64(stmt, 1);
		bool tail_return;

		/* Functions' copies are not a site's code (a walk through one is not validated). */
		if (caller == DACCE_CODE_COPY || caller == DACCE_CODE_INSIDE_OP ||
		    !region_of(im->proc, address, &end))
			continue;
		tail_return = caller == DACCE_CODE_TAIL_STUB;
		/* Code of no site: a walk stops there, but through a tail record it goes on. */
		if (caller >= im->proc->graph->n_nodes)
			caller = DACCE_NONE;
		if (im->n_code == cap) {
			struct site_code *code;

			cap = cap ? 2 * cap : 256;
			code = realloc(im->code, cap * sizeof(*code));
			if (!code) {
				err = -ENOMEM;
				break;
			}
			im->code = code;
		}
		im->code[im->n_code++] = (struct site_code){
			.start = address, .end = end, .caller = caller,
			.site = (uint64_t)sqlite3_column_int64(stmt, 2), .tail_return = tail_return };
	}
	sqlite3_finalize(stmt);
	if (err)
		return err;
	qsort(im->code, im->n_code, sizeof(*im->code), by_start);
	for (size_t i = 0; i + 1 < im->n_code; i++)
		if (im->code[i + 1].start < im->code[i].end)
			im->code[i].end = im->code[i + 1].start;
	return 0;
}

/*
 * The `ret` bytes the runtime wrote into modules (runtime/dl_callers.h): a
 * frame returning to one steps over it as the `ret` does, to the runtime's
 * code under it.  The byte before each is no instruction either, so a
 * return address there is looked up in the 2 bytes from it.
 */
static int load_stand_ins(struct dacce_model *model, struct image *im)
{
	static const struct dacce_code_step over_ret = { .rule = DACCE_CODE_RETURN_AT_SP };
	sqlite3_stmt *stmt = dacce_store_prepare(
		model->store,
		"SELECT address FROM code_entries WHERE proc = ?1 AND site_caller = ?2");
	size_t cap = 0;
	int err = 0;

	if (!stmt)
		return -EIO;
	sqlite3_bind_int64(stmt, 1, im->proc->id);
	sqlite3_bind_int64(stmt, 2, DACCE_CODE_STAND_IN);
	while (!err && sqlite3_step(stmt) == SQLITE_ROW) {
		uint64_t address = (uint64_t)sqlite3_column_int64(stmt, 0);

		if (im->n_stand_ins == cap) {
			uint64_t *grown;

			cap = cap ? 2 * cap : 8;
			grown = realloc(im->stand_ins, cap * sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			im->stand_ins = grown;
		}
		im->stand_ins[im->n_stand_ins++] = address;
		err = dacce_unwinder_add_code(im->unwinder, address - 1, 2, &over_ret);
		if (err == -EEXIST)
			err = 0;
	}
	sqlite3_finalize(stmt);
	return err;
}

static bool is_stand_in(const struct image *im, uint64_t pc)
{
	for (size_t i = 0; i < im->n_stand_ins; i++)
		if (im->stand_ins[i] == pc)
			return true;
	return false;
}

/* The site whose generated code holds address, or NULL. */
static const struct site_code *site_code_at(const struct image *im, uint64_t address)
{
	size_t lo = 0, hi = im->n_code;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->code[mid].start <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || address >= im->code[lo - 1].end || im->code[lo - 1].caller == DACCE_NONE)
		return NULL;
	return &im->code[lo - 1];
}

/*
 * The unwinder of an image: every module its scans saw, and the generated
 * code of each site unwound as the site itself (site code is entered by a
 * jump from the site and calls with the site's stack pointer).
 */
static int image_init(const struct validator *v, struct dacce_model_proc *p, struct image *im)
{
	int err;

	im->proc = p;
	im->unwinder = dacce_unwinder_new();
	if (!im->unwinder)
		return -ENOMEM;
	err = load_site_code(v->model, im);
	if (!err)
		err = load_stand_ins(v->model, im);
	for (size_t i = 0; !err && i < im->n_code; i++) {
		const struct dacce_model_module *m = NULL;
		struct dacce_code_step step = { .rule = DACCE_CODE_STOP };

		if (im->code[i].caller != DACCE_NONE)
			m = dacce_model_node_module(p, im->code[i].caller);
		if (m)
			step = (struct dacce_code_step){ .rule = DACCE_CODE_LIKE_PC,
							 .like_pc = im->code[i].site + m->bias };
		err = dacce_unwinder_add_code(im->unwinder, im->code[i].start,
					      im->code[i].end - im->code[i].start, &step);
		if (err == -EEXIST)
			err = 0;
	}
	/* Regions between site code (literals, tables): nothing there is a frame to step from. */
	for (size_t i = 0; !err && i < p->n_regions; i++) {
		err = dacce_unwinder_add_code(im->unwinder, p->region_start[i], p->region_size[i],
					      &(struct dacce_code_step){ .rule = DACCE_CODE_STOP });
		if (err == -EEXIST)
			err = 0;
	}
	for (size_t i = 0; !err && i < p->n_modules; i++) {
		const struct dacce_model_module *m = &p->modules[i];

		if (!m->path[0] || m->end <= m->start)
			continue;
		/* A module a later scan saw again overlaps itself; an unusable file is kept as such. */
		err = dacce_unwinder_add_module(im->unwinder, module_file(v, m->path), m->build_id,
						m->build_id_len, m->start, m->end, m->bias, NULL);
		if (err != -ENOMEM && err != -EINVAL)
			err = 0;
	}
	return err;
}

/* ------------------------------------------------------------------ one sample */

/* The validation frames of an unwound stack. */
static int physical_frames(const struct image *im, const struct dacce_unwind_frame *frames,
			   uint32_t n, struct dacce_vframes *out)
{
	int err = 0;

	out->len = 0;
	for (uint32_t i = 0; !err && i < n; i++) {
		uint64_t pc = frames[i].pc, lookup = frames[i].exact ? pc : pc - 1;
		const struct site_code *code = site_code_at(im, lookup);
		struct dacce_vframe f = { .kind = DACCE_VF_OUTSIDE, .address = pc };

		if (is_stand_in(im, pc)) {
			/* The runtime's: between the loader's function and the call into it. */
		} else if (code && frames[i].exact && (i == 0 || pc == code->start)) {
			f.kind = DACCE_VF_AT; /* at a site's code: still in its function */
			f.node = code->caller;
		} else if (code && frames[i].exact) {
			f.kind = DACCE_VF_IN_SITE; /* interrupted by a signal in the middle of it */
			f.node = code->caller;
			f.site = code->site;
		} else if (code) {
			f.kind = DACCE_VF_CALL;
			f.node = code->caller;
			f.site = code->site;
		} else if ((f.node = dacce_model_function_at(im->proc, lookup)) != DACCE_NONE) {
			f.kind = frames[i].exact ? DACCE_VF_AT : DACCE_VF_RETURN_INTO;
		}
		err = dacce_vframes_push(out, f);
	}
	dacce_vframes_trim(out);
	return err;
}

/* "function" of a program node, from its module's symbols, else "module+0xOFFSET". */
static void node_name(struct validator *v, uint32_t node, char *buf, size_t len)
{
	const struct dacce_model_proc *p = v->image.proc;
	const struct dacce_model_module *m = dacce_model_node_module(p, node);
	const struct dacce_sym_result *res = NULL;
	uint64_t offset = node < p->graph->n_nodes ? p->graph->nodes[node].offset : 0;
	const char *base;

	if (m && m->path[0])
		dacce_symbolize(v->sym, m->path, m->build_id, m->build_id_len, offset, &res, NULL);
	if (res && res->n_frames) {
		snprintf(buf, len, "%s", res->frames[res->n_frames - 1].function);
		return;
	}
	base = m && m->path[0] ? strrchr(m->path, '/') : NULL;
	snprintf(buf, len, "%s+0x%" PRIx64, base ? base + 1 : m ? m->path : "[unknown]", offset);
}

/* A frame as text; physical ones start with their address. */
static void vframe_text(struct validator *v, const struct dacce_vframe *f, bool physical,
			char *buf, size_t len)
{
	char name[256], address[32] = "";

	if (physical)
		snprintf(address, sizeof(address), "0x%" PRIx64 " ", f->address);
	if (f->kind == DACCE_VF_OUTSIDE) {
		snprintf(buf, len, "%s[outside the program]", address);
		return;
	}
	node_name(v, f->node, name, sizeof(name));
	switch (f->kind) {
	case DACCE_VF_AT: snprintf(buf, len, "%s%s", address, name); break;
	case DACCE_VF_CALL:
		snprintf(buf, len, "%s%s (call at 0x%" PRIx64 ")", address, name, f->site);
		break;
	case DACCE_VF_IN_SITE:
		snprintf(buf, len, "%s%s (interrupted in the call at 0x%" PRIx64 ")", address, name,
			 f->site);
		break;
	default: snprintf(buf, len, "%s%s (returns into it)", address, name); break;
	}
}

static void show_mismatch(struct validator *v, uint32_t tid, uint64_t time_ns, uint64_t pc,
			  uint32_t first_difference)
{
	uint32_t n = v->physical.len > v->logical.len ? v->physical.len : v->logical.len;
	char left[384], right[384];

	fprintf(v->out,
		"validate: mismatch: pid %u tid %u time %" PRIu64 " pc 0x%" PRIx64
		" (innermost first; first difference at frame %u)\n",
		v->image.proc->pid, tid, time_ns, pc, first_difference);
	fprintf(v->out, "  %-3s %-64s %s\n", "#", "stack walk", "decoded context");
	for (uint32_t i = 0; i < n; i++) {
		left[0] = right[0] = 0;
		if (i < v->physical.len)
			vframe_text(v, &v->physical.frames[i], true, left, sizeof(left));
		if (i < v->logical.len)
			vframe_text(v, &v->logical.frames[i], false, right, sizeof(right));
		fprintf(v->out, "%s %-3u %-64s %s\n", i == first_difference ? "=>" : "  ", i, left,
			right);
	}
}

struct stack_row {
	uint32_t tid;
	uint64_t time_ns, pc;
	struct dacce_raw_context ctx;
	const void *regs;
	size_t regs_len;
	uint64_t stack_start;
	const void *stack;
	size_t stack_len;
	const struct dacce_ev_tail *tail;
	size_t n_tail;
	uint32_t stack_flags;
};

static int start_is(const void *key, const void *member)
{
	uint64_t value = *(const uint64_t *)key, start = ((const struct site_code *)member)->start;

	return value < start ? -1 : value > start;
}

/* Whether a return through value goes through a frame's tail record (site_code's tail_return). */
static bool is_tail_return(const struct image *im, uint64_t value)
{
	const struct site_code *code =
		bsearch(&value, im->code, im->n_code, sizeof(*im->code), start_is);

	return code && code->tail_return;
}

/*
 * The stack as it would be without the runtime's tail-call records: a slot
 * holding the return stub (or a leaf tail jump's return point) gets back the
 * return address its record saved.
 * Records are applied innermost first and once per slot; a record whose slot
 * no longer holds the stub belongs to a frame a longjmp skipped.
 */
static int restore_tail_returns(struct validator *v, const struct stack_row *row,
				struct dacce_unwind_sample *sample)
{
	if (!row->n_tail || !row->stack_len)
		return 0;
	if (row->stack_len > v->stack_cap) {
		uint8_t *grown = realloc(v->stack, row->stack_len);

		if (!grown)
			return -ENOMEM;
		v->stack = grown;
		v->stack_cap = row->stack_len;
	}
	memcpy(v->stack, row->stack, row->stack_len);
	for (size_t i = row->n_tail; i-- > 0;) {
		struct dacce_ev_tail t;
		uint64_t slot, value;

		memcpy(&t, &row->tail[i], sizeof(t));
		slot = t.frame - row->stack_start;
		if (t.frame < row->stack_start || slot > row->stack_len - sizeof(value))
			continue;
		memcpy(&value, v->stack + slot, sizeof(value));
		if (is_tail_return(&v->image, value))
			memcpy(v->stack + slot, &t.return_to, sizeof(value));
	}
	sample->stack = v->stack;
	return 0;
}

/*
 * The registers of a sample taken while the kernel was setting up a signal
 * frame can be caught half updated: the stack pointer already the handler's
 * (its first slot the restorer's address), the pc still the interrupted
 * one (seen under the runtime's trap sites, which take a SIGTRAP each).  The
 * walk then meets the interrupted pc twice: as frame 0, and again through
 * the signal frame just above it.
 */
static bool caught_in_signal_delivery(const struct dacce_unwind_frame *f, uint32_t n)
{
	return n >= 3 && !f[1].exact && f[2].exact && f[2].pc == f[0].pc;
}

static int validate_sample(struct validator *v, const struct stack_row *row)
{
	struct dacce_validate_result *res = v->result;
	struct dacce_unwind_sample sample = { .stack = row->stack, .stack_len = row->stack_len,
					      .stack_start = row->stack_start };
	struct dacce_unwind_result unwound;
	uint32_t diff;
	int err;

	res->samples++;
	dacce_model_resolve(v->image.proc, row->tid, row->pc, &row->ctx, v->runtime_path,
			    &v->resolved);
	if (v->resolved.status != DACCE_RESOLVED) {
		count_unverifiable(res, dacce_resolve_status_name(v->resolved.status));
		return 0;
	}
	if (row->regs_len != DACCE_BPF_NREGS * sizeof(uint64_t)) {
		count_unverifiable(res, "registers not copied");
		return 0;
	}
	memcpy(sample.regs.value, row->regs, row->regs_len);
	sample.regs.known = (1u << DACCE_UNWIND_NREGS) - 1;
	if (!sample.stack)
		sample.stack = "";
	err = restore_tail_returns(v, row, &sample);
	if (!err)
		err = dacce_unwind(v->image.unwinder, &sample, 0, v->frames, MAX_UNWIND_FRAMES, &unwound);
	if (err)
		return err;
	if (unwound.stop != DACCE_UNWIND_OUTERMOST) {
		count_unverifiable(res, dacce_unwind_stop_text(unwound.stop));
		return 0;
	}
	if (caught_in_signal_delivery(v->frames, unwound.n_frames)) {
		count_unverifiable(res, "registers caught half way through signal delivery");
		return 0;
	}

	err = physical_frames(&v->image, v->frames, unwound.n_frames, &v->physical);
	if (!err)
		err = dacce_validate_logical(v->image.proc->graph, v->image.proc->node_size,
					     &v->resolved, &v->logical);
	if (err == -EINVAL) {
		count_unverifiable(res, "decoded context ends in no root");
		return 0;
	}
	if (err)
		return err;
	/* A thread that runs no code of the program (a library's worker): nothing to compare. */
	if (v->physical.len == 0 && v->logical.len == 0) {
		count_unverifiable(res, "no frame of the program on either side");
		return 0;
	}
	/*
	 * "Outermost" without a single frame of the program, where the context
	 * has some: the unwind information read for some pc was not the code
	 * that ran there (a module unloaded, its addresses reused).
	 */
	if (v->physical.len == 0) {
		count_unverifiable(res, "stack walk reached no frame of the program");
		return 0;
	}
	res->verified++;
	if (dacce_vframes_match(&v->physical, &v->logical, &diff)) {
		res->exact++;
		return 0;
	}
	res->mismatched++;
	if (v->shown < v->opts->show_mismatches) {
		v->shown++;
		show_mismatch(v, row->tid, row->time_ns, row->pc, diff);
	}
	return 0;
}

/* ------------------------------------------------------------------ the capture */

static const char stacks_sql[] =
	"SELECT s.proc, s.tid, s.time_ns, s.pc, s.epoch, s.id, s.reset_id, s.depth, s.ctx_flags, "
	"s.entries, k.regs, k.stack_start, k.stack, k.flags, k.tail "
	"FROM samples s JOIN stacks k ON k.sample = s.rowid JOIN procs p ON p.id = s.proc "
	"WHERE (?1 = 0 OR p.pid = ?1) AND (?2 = 0 OR s.tid = ?2) ORDER BY s.proc, s.rowid";

static void read_row(sqlite3_stmt *stmt, struct stack_row *row)
{
	int entries_len = sqlite3_column_bytes(stmt, 9);

	row->tid = (uint32_t)sqlite3_column_int64(stmt, 1);
	row->time_ns = (uint64_t)sqlite3_column_int64(stmt, 2);
	row->pc = (uint64_t)sqlite3_column_int64(stmt, 3);
	row->ctx = (struct dacce_raw_context){
		.epoch = (uint64_t)sqlite3_column_int64(stmt, 4),
		.id = (uint64_t)sqlite3_column_int64(stmt, 5),
		.reset_id = (uint64_t)sqlite3_column_int64(stmt, 6),
		.depth = (uint32_t)sqlite3_column_int64(stmt, 7),
		.flags = (uint32_t)sqlite3_column_int64(stmt, 8),
		.n_entries = (uint32_t)(entries_len > 0 ? (size_t)entries_len /
								sizeof(struct dacce_cc_entry)
							: 0),
		.entries = sqlite3_column_blob(stmt, 9),
	};
	row->regs = sqlite3_column_blob(stmt, 10);
	row->regs_len = (size_t)sqlite3_column_bytes(stmt, 10);
	row->stack_start = (uint64_t)sqlite3_column_int64(stmt, 11);
	row->stack = sqlite3_column_blob(stmt, 12);
	row->stack_len = (size_t)sqlite3_column_bytes(stmt, 12);
	row->stack_flags = (uint32_t)sqlite3_column_int64(stmt, 13);
	row->tail = sqlite3_column_blob(stmt, 14);
	row->n_tail = (size_t)sqlite3_column_bytes(stmt, 14) / sizeof(struct dacce_ev_tail);
}

int dacce_validate(struct dacce_model *model, const struct dacce_validate_options *opts,
		   FILE *out, struct dacce_validate_result *result, char *why, size_t why_len)
{
	struct validator v = { .model = model, .opts = opts, .out = out, .result = result };
	sqlite3_stmt *stmt = NULL;
	int err = 0;

	memset(result, 0, sizeof(*result));
	open_vdso(&v);
	dacce_resolved_init(&v.resolved);
	v.sym = dacce_symbolizer_new();
	v.frames = calloc(MAX_UNWIND_FRAMES, sizeof(*v.frames));
	if (!v.sym || !v.frames) {
		err = -ENOMEM;
		goto cleanup;
	}
	v.runtime_path = dacce_store_get_meta(model->store, "runtime");
	stmt = dacce_store_prepare(model->store, stacks_sql);
	if (!stmt) {
		err = -EIO;
		goto cleanup;
	}
	sqlite3_bind_int64(stmt, 1, opts->pid);
	sqlite3_bind_int64(stmt, 2, opts->tid);
	while (!err && sqlite3_step(stmt) == SQLITE_ROW) {
		int64_t proc_id = sqlite3_column_int64(stmt, 0);
		struct stack_row row;

		if (!v.image.proc || v.image.proc->id != proc_id) {
			struct dacce_model_proc *p = dacce_model_proc(model, proc_id);

			image_fini(&v.image);
			if (!p)
				continue;
			err = image_init(&v, p, &v.image);
			if (err)
				break;
		}
		read_row(stmt, &row);
		err = validate_sample(&v, &row);
	}
	if (!err && result->samples == 0)
		err = -ENODATA;
cleanup:
	if (err == -ENODATA)
		snprintf(why, why_len, "%s holds no stack copies (capture with dacce launch --validate)",
			 model->store->path);
	else if (err)
		snprintf(why, why_len, "cannot validate %s: %s", model->store->path, strerror(-err));
	sqlite3_finalize(stmt);
	image_fini(&v.image);
	dacce_vframes_fini(&v.physical);
	dacce_vframes_fini(&v.logical);
	dacce_resolved_fini(&v.resolved);
	dacce_symbolizer_free(v.sym);
	free(v.frames);
	free(v.stack);
	free(v.runtime_path);
	if (v.vdso_fd >= 0)
		close(v.vdso_fd);
	return err;
}

void dacce_validate_print(FILE *out, const struct dacce_validate_result *r)
{
	fprintf(out,
		"validate: samples=%" PRIu64 " verified=%" PRIu64 " exact=%" PRIu64
		" mismatched=%" PRIu64 " unverifiable=%" PRIu64 "\n",
		r->samples, r->verified, r->exact, r->mismatched, r->unverifiable);
	if (!r->n_reasons)
		return;
	fprintf(out, "validate: unverifiable:");
	for (uint32_t i = 0; i < r->n_reasons; i++)
		fprintf(out, "%s %" PRIu64 " %s", i ? "," : "", r->reasons[i].count,
			r->reasons[i].reason);
	fprintf(out, "\n");
}
