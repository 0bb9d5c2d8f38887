// SPDX-License-Identifier: MIT
#include "relocated.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <Zydis/Zydis.h>

#include "code_names.h"
#include "dacce_events.h"
#include "debug_returns.h"
#include "entry_notes.h"
#include "env.h"
#include "grow.h"
#include "probes.h"
#include "relocate.h"
#include "rt.h"
#include "rt_state.h"
#include "scan.h"
#include "tramp.h"

/* A function kept for moving: its original bytes and its sites. */
struct kept {
	uintptr_t start, end;
	uint32_t node;
	uint8_t *bytes;
	uint32_t *sites;
	uint32_t n_sites;
	uint32_t copy;  /* its copy in use (index in copies), or NO_COPY */
	uint32_t ready; /* a copy built ahead for the next epoch, or NO_COPY */
	uint32_t entry_at; /* offset of the entry's jump: 0, or 4 after an endbr64 */
	struct dacce_reloc_code decoded; /* once a copy was first wanted */
	uintptr_t stub; /* the `jmp` to its copy in use that the entry jumps to, once installed */
	bool entry_jumps; /* the entry holds the jump to the stub */
	bool unmovable; /* its code cannot be copied (relocate.h) */
};

/* An inline call of a copy: what disarming it needs. */
struct inline_call {
	uint32_t site;
	uint32_t code_at, return_at;
	uint32_t end_at;
	uint32_t callee; /* the kept function it calls, or NO_COPY */
	struct dacce_rt_op op; /* what its code does */
};

struct copy {
	uintptr_t exec;
	size_t len;
	uint32_t kept;
	uint32_t entry_at; /* the copy's offset of the instruction the entry's jump goes to */
	uint32_t start_at; /* ... and of the function's first instruction (where calls go) */
	bool branch_into_entry; /* a branch lands inside the bytes that jump would cover */
	bool disarmed;
	struct dacce_reloc_pair *pairs;
	size_t n_pairs;
	struct inline_call *calls;
	size_t n_calls;
};

#define NO_COPY UINT32_MAX

static struct {
	bool wanted;
	struct kept *kept;
	size_t n_kept, cap_kept;
	struct copy *copies;
	size_t n_copies, cap_copies;
	uint32_t *by_exec; /* copies installed, sorted by exec */
	size_t n_by_exec;
	uint32_t *kept_by_start; /* kept sorted by start, as many as there were at the last epoch */
	size_t n_kept_by_start;
	struct dacce_hashmap by_start; /* function start -> index in kept */
	struct dacce_hashmap stubs;    /* an entry's stub -> index in kept */
	uint8_t *changed;	       /* per kept: its copy in use changed in this stop */
	size_t cap_changed;
	uint32_t *installed; /* copies installed in this stop */
	size_t n_installed, cap_installed;
	uint64_t built, refused;
} rl;

void rt_relocate_start(bool debugged)
{
	const char *v = dacce_env("DACCE_RELOCATE");

	/* A debugger's breakpoints are on the originals: they would not stop in a copy. */
	rl.wanted = v && strcmp(v, "1") == 0 && !debugged;
	dacce_hashmap_init(&rl.by_start);
	dacce_hashmap_init(&rl.stubs);
}

bool rt_relocate_wanted(void)
{
	return rl.wanted;
}

int rt_relocate_keep(const struct dacce_func *fn, uint32_t node, const uint8_t *bytes,
		     const uint32_t *sites, uint32_t n_sites)
{
	size_t len = fn->end - fn->start;
	struct kept k = {
		.start = fn->start, .end = fn->end, .node = node, .copy = NO_COPY, .ready = NO_COPY,
	};
	int err;

	if (!rl.wanted || len > DACCE_RELOC_MAX_FUNCTION || (fn->flags & DACCE_FUNC_END_GUESSED))
		return 0;
	err = dacce_grow((void **)&rl.kept, &rl.cap_kept, rl.n_kept + 1, sizeof(*rl.kept));
	if (err)
		return err;
	k.bytes = malloc(len);
	k.sites = malloc((n_sites ? n_sites : 1) * sizeof(*k.sites));
	if (!k.bytes || !k.sites) {
		free(k.bytes);
		free(k.sites);
		return -ENOMEM;
	}
	err = dacce_hashmap_put(&rl.by_start, fn->start, (uint32_t)rl.n_kept);
	if (err) {
		free(k.bytes);
		free(k.sites);
		return err;
	}
	memcpy(k.bytes, bytes, len);
	memcpy(k.sites, sites, n_sites * sizeof(*sites));
	k.n_sites = n_sites;
	k.entry_at = len >= 4 && dacce_scan_endbr64(bytes) ? 4 : 0;
	rl.kept[rl.n_kept++] = k;
	return 0;
}

/* A direct `call rel32` of a shape whose operation can go inline. */
static bool inline_shape(const struct rt_site *site)
{
	return site->scan.len == 5 && site->original[0] == 0xe8 && !site->trapped &&
	       !site->dispatched && !site->borrowed && site->scan.target;
}

/*
 * Whether a site's call goes inline, and with what operation: in the epoch
 * in place (next NULL: the site's own operation), or in next, as
 * op_for_edge_in (rt.c) would give it.
 */
static bool inline_op(const struct rt_site *site, const struct dacce_dict *next,
		      rt_relocate_op_fn op_for, struct dacce_rt_op *op)
{
	if (!inline_shape(site))
		return false;
	if (site->native) {
		*op = (struct dacce_rt_op){ .kind = DACCE_RT_OP_NONE };
		return true;
	}
	if (!site->tramp || !site->tramp_after)
		return false; /* never called yet: its first call goes through the original */
	if (!next)
		*op = site->op;
	else if (op_for(next, site->edge, op) != 0)
		return false;
	/*
	 * A pushed call too, as a trampoline would push it, but not one out of the
	 * instrumented code (pinned): dacce_backtrace and dacce_context_get know
	 * such a call by its trampoline's return point (rt.c, called_through_top).
	 */
	return op->kind != DACCE_RT_OP_PUSH ||
	       !(rt.graph->edges[site->edge].flags & DACCE_EDGE_PINNED);
}

/* Whether two operations do the same to a thread's context (what they count aside). */
static bool same_effect(const struct dacce_rt_op *a, const struct dacce_rt_op *b)
{
	return a->kind == b->kind && a->en == b->en &&
	       (a->kind != DACCE_RT_OP_PUSH || (a->edge == b->edge && a->compress == b->compress));
}

/* Where the original takes a site that leaves the copy on: the first byte its patch covers. */
static uintptr_t leave_to(const struct rt_site *site)
{
	if (site->borrowed_two && site->bytes && !site->hopped)
		return site->scan.prev2;
	if (site->borrowed && site->bytes && !site->hopped)
		return site->scan.prev;
	return site->scan.addr;
}

/* Whether a site has run: it has code of its own (a trampoline, dispatch code, a target's). */
static bool has_run(const struct rt_site *site)
{
	return site->tramp || site->dispatch || site->n_by_target || site->native || site->promoted;
}

/*
 * The sites of k as the copier takes them, in address order; *n_inline of
 * them inline.  -ENODATA when one that has run would leave the copy: the
 * thread would jump from the copy to the original there on each call (and
 * come in through the entry's two jumps), which made perl's op loop and
 * sqlite3's mutex wrappers slower than not moving them.
 */
static int reloc_sites(const struct kept *k, const struct dacce_dict *next, rt_relocate_op_fn op_for,
		       struct dacce_reloc_site **out, size_t *n_inline)
{
	struct dacce_reloc_site *s = calloc(k->n_sites ? k->n_sites : 1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	*n_inline = 0;
	for (uint32_t i = 0; i < k->n_sites; i++) {
		const struct rt_site *site = &rt.sites[k->sites[i]];

		s[i].addr = site->scan.addr;
		s[i].leave_to = leave_to(site);
		s[i].inline_call = inline_op(site, next, op_for, &s[i].op);
		s[i].target = site->scan.target;
		*n_inline += s[i].inline_call && !site->native;
		if (!s[i].inline_call && has_run(site)) {
			free(s);
			return -ENODATA;
		}
	}
	*out = s;
	return 0;
}

/*
 * Whether copy c does what the epoch in place (next NULL) or next asks of
 * every site of k: the same calls inline, with the same effect on the id
 * (what the code counts may differ: counts are not the context).
 */
static bool copy_fits(const struct kept *k, const struct copy *c, const struct dacce_dict *next,
		      rt_relocate_op_fn op_for)
{
	size_t call = 0;

	for (uint32_t i = 0; i < k->n_sites; i++) {
		struct dacce_rt_op op;
		bool in = inline_op(&rt.sites[k->sites[i]], next, op_for, &op);
		bool was = call < c->n_calls && c->calls[call].site == k->sites[i];

		if (in != was)
			return false;
		if (in && !same_effect(&c->calls[call].op, &op))
			return false;
		call += was;
	}
	return true;
}

/* Whether the entry's jump would cover nothing else a thread may come to. */
static bool entry_is_free(const struct kept *k, const struct copy *c)
{
	uintptr_t entry = k->start + k->entry_at;

	if (k->end - entry < 5 || dacce_reloc_original_of(c->pairs, c->n_pairs, c->entry_at) != k->entry_at ||
	    c->branch_into_entry)
		return false;
	for (uint32_t i = 0; i < k->n_sites; i++) {
		const struct rt_site *site = &rt.sites[k->sites[i]];

		if (leave_to(site) < entry + 5 && site->scan.addr + site->scan.len > entry)
			return false;
	}
	/* Nothing else of ours is written there (an armed entry's int3). */
	return memcmp((const void *)entry, k->bytes + k->entry_at, 5) == 0;
}

static int write_jmp(uintptr_t at, uintptr_t to)
{
	uint8_t *write = dacce_codecache_writable(&rt.cache, at);
	uint8_t jmp[5];
	int err;

	if (!write)
		return -EFAULT;
	err = dacce_tramp_jmp_bytes(at, to, jmp);
	if (!err)
		memcpy(write, jmp, sizeof(jmp));
	return err;
}

/*
 * A copy in use stops doing operations: its inline calls leave for the
 * original sites, and its return points go where the sites' code returns now.
 */
static int disarm(struct copy *c)
{
	int err = 0;

	for (size_t i = 0; i < c->n_calls && !err; i++) {
		const struct rt_site *site = &rt.sites[c->calls[i].site];
		uintptr_t back = site->native || !site->tramp_after ? site->scan.addr + site->scan.len
								    : site->tramp_after;

		err = write_jmp(c->exec + c->calls[i].code_at, site->scan.addr);
		if (!err)
			err = write_jmp(c->exec + c->calls[i].return_at, back);
	}
	c->disarmed = true;
	return err;
}

/* Return points of a copy: unwinders and debuggers see the original's return address. */
static int note_returns(const struct copy *c)
{
	int err = 0;

	for (size_t i = 0; i < c->n_calls && !err; i++) {
		const struct rt_site *site = &rt.sites[c->calls[i].site];
		uintptr_t at = c->exec + c->calls[i].return_at;

		err = dacce_hashmap_put(&rt.return_edge, at, site->edge);
		if (!err)
			err = dacce_debug_returns_add(at, site->scan.addr + site->scan.len);
	}
	return err;
}

static int keep_calls(struct copy *c, const struct kept *k, const struct dacce_reloc_site *s)
{
	size_t n = 0;

	for (uint32_t i = 0; i < k->n_sites; i++)
		n += s[i].inline_call;
	c->calls = calloc(n ? n : 1, sizeof(*c->calls));
	if (!c->calls)
		return -ENOMEM;
	for (uint32_t i = 0; i < k->n_sites; i++) {
		uint32_t callee;

		if (!s[i].inline_call)
			continue;
		if (dacce_hashmap_get(&rl.by_start, s[i].target, &callee) != 0)
			callee = NO_COPY;
		c->calls[c->n_calls++] = (struct inline_call){
			.site = k->sites[i], .code_at = s[i].code_at, .return_at = s[i].return_at,
			.end_at = s[i].end_at, .callee = callee, .op = s[i].op,
		};
	}
	return 0;
}

/*
 * Tells tracers of a copy (before it is installed: no thread is in it before then) (dacce_events.h, DACCE_CODE_COPY) and
 * of every instruction inside its calls' operations but the first: there
 * the context holds a call the thread is not in yet, or not any more, or is
 * half written.  (A free call's code leaves the context alone: every
 * instruction of it is the caller's.)
 */
static void announce(const struct kept *k, const struct copy *c)
{
	ZydisDecoder decoder;

	if (!DACCE_PROBE_CODE_ENTRIES_WANTED())
		return; /* no tracer: spare the decoding */
	dacce_entry_note(c->exec, DACCE_CODE_COPY, (uint64_t)c->len << 32 | k->node);
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return;
	for (size_t i = 0; i < c->n_calls; i++) {
		const struct inline_call *call = &c->calls[i];
		const uint8_t *code = (const uint8_t *)c->exec;

		if (call->op.kind == DACCE_RT_OP_NONE)
			continue;
		for (uint32_t at = call->code_at; at < call->end_at;) {
			ZydisDecodedInstruction insn;
			ZydisDecoderContext ctx;

			if (at != call->code_at)
				dacce_entry_note(c->exec + at, DACCE_CODE_INSIDE_OP, 0);
			if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &ctx, code + at,
									 call->end_at - at, &insn)))
				break;
			at += insn.length;
		}
	}
}

/*
 * Lays out, places and writes k's copy for the operations of next (NULL:
 * of the epoch in place), not in use yet: 0 and *out, -ENODATA when no call
 * of it would go inline, or why it cannot move.
 */
static int build(struct kept *k, const struct dacce_dict *next, rt_relocate_op_fn op_for,
		 struct copy *out)
{
	struct dacce_reloc_copy layout;
	struct dacce_reloc_site *s = NULL;
	size_t n_inline;
	uintptr_t exec;
	uint8_t *write;
	long entry;
	int err;

	memset(out, 0, sizeof(*out));
	memset(&layout, 0, sizeof(layout));
	if (k->unmovable)
		return -ENOTSUP;
	err = reloc_sites(k, next, op_for, &s, &n_inline);
	if (!err && n_inline == 0)
		err = -ENODATA;
	/* Decoded once, when first worth a copy. */
	if (!err && !k->decoded.insns) {
		err = dacce_relocate_decode(k->bytes, k->start, k->end, &k->decoded);
		k->unmovable = err && err != -ENOMEM;
	}
	if (!err)
		err = dacce_relocate_layout(&k->decoded, k->bytes, k->start, k->end, rt.tpoff, s,
					    k->n_sites, &layout);
	if (err)
		goto cleanup;
	err = dacce_codecache_alloc(&rt.cache, k->start, k->end, layout.len, 16, &exec, &write);
	if (err)
		goto cleanup;
	err = dacce_relocate_place(&layout, exec);
	if (err) {
		dacce_codecache_trim(&rt.cache, exec, layout.len, 0);
		goto cleanup;
	}
	memcpy(write, layout.code, layout.len);
	entry = dacce_reloc_copy_of(&layout, k->entry_at);
	*out = (struct copy){
		.exec = exec, .len = layout.len, .kept = (uint32_t)(k - rl.kept),
		.pairs = layout.pairs, .n_pairs = layout.n_pairs,
		.entry_at = entry < 0 ? 0 : (uint32_t)entry,
		.start_at = layout.n_pairs && layout.pairs[0].original == 0 ? layout.pairs[0].copy : 0,
		.branch_into_entry = dacce_reloc_branch_into(&k->decoded, k->entry_at, k->entry_at + 5),
	};
	layout.pairs = NULL;
	err = keep_calls(out, k, s);
	if (!err)
		err = note_returns(out);
	if (!err) {
		rt_code_named("copy", exec, layout.len, k->start);
		announce(k, out);
	}
cleanup:
	dacce_reloc_copy_fini(&layout);
	free(s);
	return err;
}

/* Builds k's copy and keeps it as k's ready one: 0, or -ENOMEM (any other failure leaves k as it is). */
static int build_ready(struct kept *k, const struct dacce_dict *next, rt_relocate_op_fn op_for)
{
	struct copy c;
	int err = dacce_grow((void **)&rl.copies, &rl.cap_copies, rl.n_copies + 1, sizeof(*rl.copies));

	if (err)
		return err;
	err = build(k, next, op_for, &c);
	if (err) {
		free(c.pairs);
		free(c.calls);
		if (err != -ENODATA)
			rl.refused++;
		return err == -ENOMEM ? err : 0;
	}
	/* Not reachable until installed: nothing else to undo if it is never used. */
	rl.copies[rl.n_copies] = c;
	k->ready = (uint32_t)rl.n_copies++;
	return 0;
}

static int prebuild_one(struct kept *k, const struct dacce_dict *next, rt_relocate_op_fn op_for)
{
	const struct rt_module *m = rt_module_at(k->start);

	if (!m || m->later || m->closed)
		return 0;
	if (k->copy != NO_COPY && !rl.copies[k->copy].disarmed &&
	    copy_fits(k, &rl.copies[k->copy], next, op_for))
		return 0;
	if (k->ready != NO_COPY && copy_fits(k, &rl.copies[k->ready], next, op_for))
		return 0;
	k->ready = NO_COPY;
	return build_ready(k, next, op_for);
}

/* Functions looked at per hold of the lock: short holds, so first calls go on. */
#define PREBUILD_FUNCTIONS 32

int rt_relocate_prebuild(const struct dacce_dict *next, rt_relocate_op_fn op_for)
{
	size_t i = 0;
	int err = 0;

	if (!rl.wanted)
		return 0;
	while (!err) {
		sigset_t saved;
		bool done;

		rt_lock(&saved);
		/* As rt_prebuild_code: a module being closed may go at any moment. */
		if (rt.loader_busy || rt.dict == NULL) {
			rt_unlock(&saved);
			break;
		}
		for (size_t n = 0; n < PREBUILD_FUNCTIONS && i < rl.n_kept && !err &&
				   (n == 0 || !dacce_lock_waited_for(&rt.lock));
		     n++, i++)
			err = prebuild_one(&rl.kept[i], next, op_for);
		done = i >= rl.n_kept;
		rt_unlock(&saved);
		if (done)
			break;
	}
	return err;
}

static int cmp_exec(const void *a, const void *b)
{
	uintptr_t x = rl.copies[*(const uint32_t *)a].exec, y = rl.copies[*(const uint32_t *)b].exec;

	return x < y ? -1 : x > y;
}

static int cmp_start(const void *a, const void *b)
{
	uintptr_t x = rl.kept[*(const uint32_t *)a].start, y = rl.kept[*(const uint32_t *)b].start;

	return x < y ? -1 : x > y;
}

/*
 * Merges the n_new indexes at added (sorted here) into the sorted *index of
 * *n: each stop adds a few, and sorting everything again took milliseconds
 * of every pause.
 */
static int merge_into(uint32_t **index, size_t *n, uint32_t *added, size_t n_new,
		      int (*cmp)(const void *, const void *))
{
	uint32_t *merged;
	size_t i = 0, j = 0, k = 0;

	if (n_new == 0)
		return 0;
	qsort(added, n_new, sizeof(*added), cmp);
	merged = malloc((*n + n_new) * sizeof(*merged));
	if (!merged)
		return -ENOMEM;
	while (i < *n || j < n_new)
		merged[k++] = j == n_new || (i < *n && cmp(&(*index)[i], &added[j]) <= 0) ? (*index)[i++]
											  : added[j++];
	free(*index);
	*index = merged;
	*n = k;
	return 0;
}

static int index_kept(void)
{
	size_t n_new = rl.n_kept - rl.n_kept_by_start;
	uint32_t *added = malloc((n_new ? n_new : 1) * sizeof(*added));
	int err;

	if (!added)
		return -ENOMEM;
	for (size_t i = 0; i < n_new; i++)
		added[i] = (uint32_t)(rl.n_kept_by_start + i);
	err = merge_into(&rl.kept_by_start, &rl.n_kept_by_start, added, n_new, cmp_start);
	free(added);
	return err;
}

/*
 * Points k's entry at copy c: through a stub of its own in the code cache
 * (written there in each stop, no write to program text but the first), and
 * the first time, threads inside the bytes the entry's jump covers move into
 * c.
 */
static int point_entry(struct kept *k, const struct copy *c, struct dacce_patch_runs *writes,
		       void (*moved)(uintptr_t from, uintptr_t to, void *ctx), void *ctx)
{
	uintptr_t entry = k->start + k->entry_at;
	uint8_t jmp[5], *write;
	int err;

	if (!k->stub) {
		err = dacce_codecache_alloc(&rt.cache, entry, entry + 5, 8, 8, &k->stub, &write);
		if (!err)
			err = dacce_hashmap_put(&rl.stubs, k->stub, (uint32_t)(k - rl.kept));
		if (err) {
			k->stub = 0;
			return err;
		}
	}
	err = write_jmp(k->stub, c->exec + c->entry_at);
	if (err || k->entry_jumps)
		return err;
	err = dacce_tramp_jmp_bytes(entry, k->stub, jmp);
	if (!err)
		err = dacce_patch_runs_add(writes, entry, jmp, sizeof(jmp));
	if (err)
		return err;
	k->entry_jumps = true;
	for (size_t i = 0; i < c->n_pairs; i++) {
		uint32_t at = c->pairs[i].original;

		if (at > k->entry_at && at < k->entry_at + 5)
			moved(k->start + at, c->exec + c->pairs[i].copy, ctx);
	}
	return 0;
}

/* The entry is the program's own again: a disarmed copy would only add jumps. */
static int unpoint_entry(struct kept *k, struct dacce_patch_runs *writes)
{
	int err = 0;

	if (k->entry_jumps)
		err = dacce_patch_runs_add(writes, k->start + k->entry_at, k->bytes + k->entry_at, 5);
	k->entry_jumps = false;
	k->copy = NO_COPY;
	return err;
}

/*
 * A copy's call of a function whose copy is in use goes straight to that
 * copy: through the original's entry (and its stub) it would take two more
 * jumps.  Only the calls of copies installed in this stop, or into functions
 * whose copy changed in it.
 */
static void call_copies(const struct copy *c, bool all)
{
	for (size_t i = 0; i < c->n_calls; i++) {
		const struct inline_call *call = &c->calls[i];
		uintptr_t at = c->exec + call->return_at - 4, to = rt.sites[call->site].scan.target;
		const struct kept *callee;
		uint8_t *write;
		int64_t rel;
		int32_t rel32;

		if (call->callee == NO_COPY || !(all || rl.changed[call->callee]))
			continue;
		callee = &rl.kept[call->callee];
		if (callee->copy != NO_COPY && !rl.copies[callee->copy].disarmed)
			to = rl.copies[callee->copy].exec + rl.copies[callee->copy].start_at;
		rel = (int64_t)(to - (at + 4));
		write = dacce_codecache_writable(&rt.cache, at);
		if (rel != (int32_t)rel || !write)
			continue;
		rel32 = (int32_t)rel;
		memcpy(write, &rel32, sizeof(rel32));
	}
}

/* Points the call whose rel32 ends at after (a trampoline's) at target's copy in use, if it has one. */
static void call_copy_at(uintptr_t after, uintptr_t target)
{
	const uint8_t *code = (const uint8_t *)after;
	const struct kept *callee;
	uint8_t *write;
	uint32_t k;
	int64_t rel;
	int32_t rel32;

	uintptr_t now_to, original;
	uint32_t node;

	if (code[-5] != 0xe8 || dacce_hashmap_get(&rl.by_start, target, &k) != 0)
		return;
	callee = &rl.kept[k];
	/* Only a call that goes to target now, or to one of its copies. */
	memcpy(&rel32, code - 4, sizeof(rel32));
	now_to = after + (uintptr_t)(intptr_t)rel32;
	if (now_to != target && !(rt_relocated_at(now_to, &original, &node) && node == callee->node))
		return;
	if (callee->copy != NO_COPY && !rl.copies[callee->copy].disarmed)
		target = rl.copies[callee->copy].exec + rl.copies[callee->copy].start_at;
	rel = (int64_t)(target - after);
	write = dacce_codecache_writable(&rt.cache, after - 4);
	if (rel != (int32_t)rel || !write)
		return;
	rel32 = (int32_t)rel;
	memcpy(write, &rel32, sizeof(rel32));
}

/*
 * The same for the call in each trampoline, a direct site's or a target's
 * of dispatch code: a call from code not moved into a moved function would
 * otherwise take the entry's jump and the stub's on each call (perl's op
 * loop calls every op through its dispatch code).
 */
static void trampolines_call_copies(void)
{
	for (uint32_t i = 0; i < rt.graph->n_sites && i < rt.cap_sites; i++) {
		const struct rt_site *site = &rt.sites[i];

		if (site->tramp && site->tramp_after && !site->native && inline_shape(site))
			call_copy_at(site->tramp_after, site->scan.target);
		for (uint32_t t = 0; t < site->n_by_target; t++)
			if (site->by_target[t].after && !dacce_site_kind_is_tail(site->scan.kind))
				call_copy_at(site->by_target[t].after, site->by_target[t].target);
	}
}

/* In the stop: k's copy for the epoch now in place, if one is ready; else none that is wrong. */
static int install_one(struct kept *k, struct dacce_patch_runs *writes,
		       void (*moved)(uintptr_t from, uintptr_t to, void *ctx), void *ctx, bool *changed)
{
	struct copy *cur = k->copy == NO_COPY ? NULL : &rl.copies[k->copy];
	struct copy *ready = k->ready == NO_COPY ? NULL : &rl.copies[k->ready];
	int err = 0;

	*changed = false;
	k->ready = NO_COPY;
	if (cur && !cur->disarmed && copy_fits(k, cur, NULL, NULL))
		return 0;
	if (ready && !copy_fits(k, ready, NULL, NULL))
		ready = NULL;
	if (ready && !k->entry_jumps && !entry_is_free(k, ready))
		ready = NULL;
	if (cur && !cur->disarmed) {
		err = disarm(cur); /* its operations are the last epoch's */
		*changed = true;
	}
	if (!err && ready)
		err = point_entry(k, ready, writes, moved, ctx);
	if (!err && ready)
		err = dacce_grow((void **)&rl.installed, &rl.cap_installed, rl.n_installed + 1,
				 sizeof(*rl.installed));
	if (!err && ready) {
		k->copy = (uint32_t)(ready - rl.copies);
		rl.installed[rl.n_installed++] = k->copy;
		rl.built++;
		*changed = true;
	} else if (!err && cur) {
		err = unpoint_entry(k, writes);
	}
	return err;
}

static uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

int rt_relocate_epoch(struct dacce_patch_runs *writes,
		      void (*moved)(uintptr_t from, uintptr_t to, void *ctx), void *ctx)
{
	uint64_t built = rl.built, start;
	size_t changed = 0;
	int err = 0;

	if (!rl.wanted)
		return 0;
	start = now_us();
	rl.n_installed = 0;
	err = dacce_grow((void **)&rl.changed, &rl.cap_changed, rl.n_kept, 1);
	for (size_t i = 0; i < rl.n_kept && !err; i++) {
		bool one;

		err = install_one(&rl.kept[i], writes, moved, ctx, &one);
		rl.changed[i] = one;
		changed += one;
	}
	for (size_t i = 0; i < rl.n_kept && !err && changed; i++) {
		const struct kept *k = &rl.kept[i];

		if (k->copy != NO_COPY && !rl.copies[k->copy].disarmed)
			call_copies(&rl.copies[k->copy], rl.changed[i]);
	}
	if (!err)
		trampolines_call_copies();
	if (!err)
		err = merge_into(&rl.by_exec, &rl.n_by_exec, rl.installed, rl.n_installed, cmp_exec);
	if (!err)
		err = index_kept();
	dacce_rt_log(false, "copies: %llu functions moved in the stop's %llu us (%llu in all, %llu could not move)",
		     (unsigned long long)(rl.built - built), (unsigned long long)(now_us() - start),
		     (unsigned long long)rl.built, (unsigned long long)rl.refused);
	return err;
}

bool rt_relocated_at(uintptr_t pc, uintptr_t *original, uint32_t *node)
{
	size_t lo = 0, hi = rl.n_by_exec;

	uint32_t stub_of;

	/* On an entry's stub: at the function's entry, nothing of it run yet. */
	if (dacce_hashmap_get(&rl.stubs, pc, &stub_of) == 0) {
		*original = rl.kept[stub_of].start + rl.kept[stub_of].entry_at;
		*node = rl.kept[stub_of].node;
		return true;
	}
	/* Only copies installed: those built ahead are in no thread's way before then. */
	if (!rl.by_exec)
		return false;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct copy *c = &rl.copies[rl.by_exec[mid]];

		if (pc < c->exec) {
			hi = mid;
		} else if (pc >= c->exec + c->len) {
			lo = mid + 1;
		} else {
			const struct kept *k = &rl.kept[c->kept];
			long at = dacce_reloc_original_of(c->pairs, c->n_pairs, (uint32_t)(pc - c->exec));

			/* An instruction the entry's jump covers is no place to go on in the original. */
			if (k->entry_jumps && at > k->entry_at && at < k->entry_at + 5)
				at = -1;
			*original = at < 0 ? 0 : k->start + (uintptr_t)at;
			*node = k->node;
			return true;
		}
	}
	return false;
}

/* The kept function whose original holds pc, or NULL. */
static const struct kept *kept_at(uintptr_t pc)
{
	size_t lo = 0, hi = rl.n_kept_by_start;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct kept *k = &rl.kept[rl.kept_by_start[mid]];

		if (pc < k->start)
			hi = mid;
		else if (pc >= k->end)
			lo = mid + 1;
		else
			return k;
	}
	return NULL;
}

/*
 * Whether the original's bytes from at to the next instruction the copy
 * has are still the program's: not a site's patch, a borrowed instruction
 * under a jump, or a hop in the function's padding.
 */
static bool unpatched(const struct kept *k, const struct copy *c, size_t pair)
{
	uint32_t at = c->pairs[pair].original;
	uint32_t next = pair + 1 < c->n_pairs ? c->pairs[pair + 1].original
					      : (uint32_t)(k->end - k->start);

	return memcmp((const void *)(k->start + at), k->bytes + at, next - at) == 0;
}

uintptr_t rt_relocated_resume(uintptr_t pc)
{
	const struct kept *k = kept_at(pc);
	const struct copy *c;
	size_t lo = 0, hi;
	uint32_t at;

	if (!k || k->copy == NO_COPY || (c = &rl.copies[k->copy])->disarmed)
		return 0;
	at = (uint32_t)(pc - k->start);
	for (hi = c->n_pairs; lo < hi;) {
		size_t mid = (lo + hi) / 2;

		if (c->pairs[mid].original == at)
			return unpatched(k, c, mid) ? c->exec + c->pairs[mid].copy : 0;
		if (c->pairs[mid].original < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}
