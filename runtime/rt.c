// SPDX-License-Identifier: MIT
/*
 * Discovery and the two slow paths.
 *
 * A function is decoded when first entered through an instrumented edge (or
 * as a root).  Each of its sites becomes either a patched site (a 5- or
 * 6-byte call, or a 5-byte tail jmp, rewritten as `jmp stub`) or a trapped
 * site (everything shorter or conditional: a permanent trap byte, trap.h).
 *
 * First call of a patched site: the stub enters the slow path with the site
 * index; the handler adds the edge, decodes the callee, builds the site's
 * trampoline for the current epoch and points the site at it.  A trapped
 * site: the trap hook computes where the instruction goes from the
 * thread's registers and sends the thread to the trampoline for that
 * (site, target), built on first use.  Both only choose generated code;
 * what the code does is ops.c and tail.c.
 */
#include "rt.h"
#include "rt_state.h"

#include "dacce.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "cancel.h"
#include "cfa.h"
#include "env.h"
#include "code_names.h"
#include "codecache.h"
#include "dict.h"
#include "emulate.h"
#include "exceptions.h"
#include "debug_returns.h"
#include "entry.h"
#include "entry_notes.h"
#include "funcs.h"
#include "graph.h"
#include "hashmap.h"
#include "libraries.h"
#include "lock.h"
#include "modules.h"
#include "ops.h"
#include "dacce_events.h"
#include "patch.h"
#include "patch_runs.h"
#include "perfmap.h"
#include "prebuilt.h"
#include "pristine.h"
#include "relocated.h"
#include "probes.h"
#include "reload.h"
#include "scan.h"
#include "scan_cache.h"
#include "signals.h"
#include "stop.h"
#include "tail.h"
#include "thread_registry.h"
#include "thread_stacks.h"
#include "tls.h"
#include "traits.h"
#include "tramp.h"
#include "trap.h"

#define STUB_LEN 48
#define SETJMP_THUNK_LEN 64
/*
 * Targets dispatch code compares before the site's table: a chain of compares
 * beats the table's lookup up to about this many (perl's op dispatch, some
 * 70 targets: 2.4 s with 16, 1.7 s with 64, 1.9 s with 128; natively 1.0 s).
 */
#define DISPATCH_TARGETS 64
#define RT_LATER_MODULES 4096 /* modules instrumented after start (their places are not reused) */
/* Room for dispatch code of n compared targets: literals, compares and the jumps to trampolines. */
#define DISPATCH_LEN(n) (64 + 16 + (n) * 80 + 256 + 4 * 48) /* 48: a flagless hit (jump dispatch) */
#define DISPATCH_R11_SLOT (-16)
/* The slow path's token for a call's dispatch code meeting a new target (else a site's first call). */
#define SLOW_DISPATCH_MISS (1ull << 63)
#define JUMP_SAVE 136 /* jump dispatch code keeps its data below the red zone */
/* Entries below an ended thread's ccStack (dacce_rt_thread_end). */
#define ENDED_THREAD_CUSHION 1024
/* Pushed when a thread leaves instrumented code: names no edge, so it decodes as partial. */
#define OUTSIDE_EDGE (DACCE_NONE - 1)

struct rt_state rt = { .lock = DACCE_LOCK_INIT };

void dacce_rt_log(bool error, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	if (!error && !rt.verbose)
		return;
	n = snprintf(line, sizeof(line), "dacce: ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* write(2): usable from the trap hook, unlike stdio. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

bool dacce_rt_enabled(void)
{
	return rt.enabled;
}

/*
 * rt.lock is held with cancellation disabled: a thread cancelled at a
 * cancellation point inside the runtime (open, pwrite, close, write,
 * nanosleep, and whatever libc, libdw or realpath call in turn) would be
 * unwound with the lock held, and every thread would then wait for it.
 * The holder's own state is kept under the lock and put back only after
 * the lock is released.
 */
static void hold_lock(void)
{
	int state;

	dacce_lock_acquire(&rt.lock);
	__atomic_store_n(&rt.holder, dacce_thread_self(), __ATOMIC_RELAXED);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	rt.holder_cancel_state = state;
	dacce_patch_batch_begin();
}

/* Returns the holder's cancel state, to put back with pthread_setcancelstate when all is done. */
static int release_lock(void)
{
	int state = rt.holder_cancel_state;

	/* Under a debugger: a stop at a breakpoint soon after new code was made finds it named. */
	if (rt.decode_everything)
		rt_code_names_flush_due();
	dacce_patch_batch_end();
	dacce_entry_notes_flush();
	__atomic_store_n(&rt.holder, NULL, __ATOMIC_RELAXED);
	/*
	 * The policy thread works in short holds: a program thread it woke goes
	 * first.  Not while the world stops: a parked thread takes nothing.
	 */
	if (dacce_lock_release(&rt.lock) && dacce_thread_self()->runtime_own &&
	    !dacce_world_stopping())
		dacce_lock_let_in(&rt.lock);
	return state;
}

/*
 * Runtime work calling the program back: a library the runtime uses (libc's
 * qsort, stdio, libdw) calling a function the program or a preloaded library
 * defines in libc's place, such as malloc (jemalloc, tcmalloc, a program's
 * own allocator).  Such code runs natively, whatever it meets: the thread's
 * context may be half updated, and the runtime's lock may be its own.
 */
static bool in_runtime_work(void)
{
	const struct dacce_thread *self = dacce_thread_self();

	return self->in_runtime > 0 || self->runtime_own;
}

static bool holding_lock(void)
{
	return __atomic_load_n(&rt.holder, __ATOMIC_RELAXED) == dacce_thread_self();
}

void rt_lock(sigset_t *saved)
{
	sigset_t all;

	dacce_runtime_enter();
	dacce_signals_but_trap(&all);
	pthread_sigmask(SIG_BLOCK, &all, saved);
	hold_lock();
}

void rt_unlock(const sigset_t *saved)
{
	int state = release_lock();

	pthread_sigmask(SIG_SETMASK, saved, NULL);
	/* Last: a pending asynchronous cancellation acts here, out of the runtime's lock. */
	pthread_setcancelstate(state, NULL);
	/*
	 * After it: a stop must not park this thread inside libc called from
	 * here, where its pc would read as a call out of the program's code.
	 */
	dacce_runtime_leave();
}

_Noreturn void rt_fatal(const char *what, int err)
{
	struct sigaction dfl;

	dacce_rt_log(true, "fatal: %s: %s", what, strerror(err < 0 ? -err : err));
	/* The program's SIGABRT handler would wait for the runtime lock we may hold. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGABRT, &dfl, NULL);
	abort();
}

/* ------------------------------------------------------------------ nodes */

struct rt_module *rt_module_at(uintptr_t addr)
{
	size_t n = __atomic_load_n(&rt.n_mods, __ATOMIC_ACQUIRE); /* entry traps read it unlocked */

	for (size_t i = 0; i < n; i++)
		if (!rt.mods[i].closed && addr >= rt.mods[i].info->start &&
		    addr < rt.mods[i].info->end)
			return &rt.mods[i];
	return NULL;
}

/* The module of code the runtime decoded (every site and function is in one). */
static struct rt_module *module_of(uintptr_t addr)
{
	struct rt_module *m = rt_module_at(addr);

	if (!m)
		rt_fatal("code outside every instrumented module", EFAULT);
	return m;
}

/* Tracers replay graph insertions in order (probes.h): each new module, node and edge is announced. */
static int add_module(const struct dacce_module_info *m, uint32_t *module)
{
	uint32_t before = rt.graph->n_modules;
	int err;

	if (m)
		err = dacce_graph_add_module(rt.graph, m->build_id, m->build_id_len, module);
	else
		err = dacce_graph_add_module(rt.graph, NULL, 0, module);
	if (!err && *module >= before)
		DACCE_PROBE(module, (int64_t)*module, m ? m->path : "", m ? m->bias : 0,
			    m ? m->start : 0, m ? m->end : 0, m ? m->build_id : NULL,
			    m ? m->build_id_len : 0);
	return err;
}

static int add_node(uint32_t module, uint64_t offset, uint64_t size, uint32_t *node)
{
	uint32_t before = rt.graph->n_nodes;
	int err = dacce_graph_add_node(rt.graph, module, offset, node);

	if (!err && *node >= before)
		DACCE_PROBE(node, *node, module, offset, size);
	return err;
}

static void announce_edge(uint32_t edge)
{
	const struct dacce_edge *e = &rt.graph->edges[edge];
	const struct dacce_site *s = &rt.graph->sites[e->site];

	DACCE_PROBE(edge, edge, e->caller, e->callee, e->kind, s->module, s->offset, e->flags);
}

/* Every module of a scan, for tracers that name addresses outside the graph (library code). */
static void announce_scan(const struct dacce_modules *mods)
{
	for (size_t i = 0; i < mods->n; i++) {
		const struct dacce_module_info *m = &mods->mods[i];

		DACCE_PROBE(module, (int64_t)-1, m->path, m->bias, m->start, m->end, m->build_id,
			    m->build_id_len);
	}
}

/*
 * Code the runtime leaves alone, as it does a library it does not
 * instrument: a function without an FDE of its own in a module whose
 * functions mostly have them.  Compilers give every function unwind
 * information unless told not to; one without is then hand-written or
 * generated code, whose jumps out need not leave a frame the way a tail
 * call does (V8's builtins in node push stack arguments, then jump to
 * another builtin, which returns past the jumping frame: a tail record
 * keyed by the wrong slot, and node died of SIGILL at its first run).
 * Calls into it are calls out; code of the program it calls reads partial,
 * as a library's callbacks do.  A program built without unwind tables has
 * FDEs only for the few functions of the C runtime's objects: its own are
 * instrumented as before, their tail calls guessed.
 */
static bool left_alone(const struct rt_module *m, const struct dacce_func *f)
{
	return m->has_fdes && !(f->flags & DACCE_FUNC_FDE);
}

/*
 * The node a transfer to target enters, and the function to instrument when
 * target starts a function of an instrumented module (NULL: a boundary node).
 */
static int node_at(uintptr_t target, uint32_t *node, const struct dacce_func **fn)
{
	const struct rt_module *mod;
	const struct dacce_module_info *m;
	const struct dacce_func *f;
	uint32_t module;
	int err;

	*fn = NULL;
	if ((mod = rt_module_at(target))) {
		f = dacce_funcs_find(&mod->funcs, target);
		if (f && f->start == target && !dacce_funcs_in_plt(&mod->funcs, target) &&
		    !left_alone(mod, f))
			*fn = f;
		return add_node(mod->graph_module, target - mod->info->bias,
				*fn ? f->end - f->start : 0, node);
	}
	m = dacce_modules_find(&rt.modules, target);
	if (!m && dacce_modules_changed(&rt.modules)) {
		/* Loaded since we last looked (dlopen): instrumented now, if chosen. */
		err = rt_modules_refresh();
		if (err)
			return err;
		if (rt_module_at(target))
			return node_at(target, node, fn);
		m = dacce_modules_find(&rt.modules, target);
	}
	if (!m) {
		/* Code in no module (generated at run time): named by its address. */
		err = add_module(NULL, &module);
		if (err)
			return err;
		return add_node(module, target & DACCE_OFFSET_MAX, 0, node);
	}
	err = add_module(m, &module);
	if (err)
		return err;
	return add_node(module, target - m->bias, 0, node);
}

/* ------------------------------------------------------------------ sites */

/* Code for site index starts at entry: a PC there is still in the site's function. */
static int note_entry(uintptr_t entry, uint32_t index)
{
	int err = dacce_hashmap_put(&rt.entry_site, entry, index);

	if (!err)
		dacce_entry_note(entry, rt.graph->sites[index].caller, rt.graph->sites[index].offset);
	return err;
}

/* Names generated code for perf (code_names.h): what it is, and the site it serves. */
static void name_code(const char *kind, const struct x86_buf *b, uintptr_t site)
{
	rt_code_named(kind, b->addr, b->len, site);
}

/* Every site of every decoded function has one (gcc's cc1: 450,000): keep it small. */
_Static_assert(sizeof(struct rt_site) <= 248, "struct rt_site grew");

static int reserve_sites(uint32_t count)
{
	uint32_t cap = rt.cap_sites ? rt.cap_sites : 256;
	struct rt_site *grown;

	if (count <= rt.cap_sites)
		return 0;
	while (cap < count)
		cap *= 2;
	grown = dacce_realloc_zeroed(rt.sites, rt.cap_sites * sizeof(*grown), cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	rt.sites = grown;
	rt.cap_sites = cap;
	return 0;
}

/*
 * Whether a jump from `from` to target stays in the same logical function: a target in
 * the middle of a function, or the start of a fragment the compiler split
 * off a function (foo.cold), is not a tail call: the frame is still live and
 * its stack holds no return address at %rsp.  *fragment: the fragment
 * target lies in (to decode as part of the jumping function), else NULL.
 */
static bool jump_stays_in_function(uintptr_t from, uintptr_t target,
				   const struct dacce_func **fragment)
{
	const struct rt_module *m = rt_module_at(from);
	const struct dacce_func *f;
	const char *cold;

	*fragment = NULL;
	if (!m || m != rt_module_at(target))
		return false;
	f = dacce_funcs_find(&m->funcs, target);
	if (!f)
		return false;
	cold = f->name ? strstr(f->name, ".cold") : NULL;
	/*
	 * A fragment is entered past its first byte too: gcc may start foo.cold
	 * with a nop, landing pads being jumped to at foo.cold+1.
	 */
	if ((f->flags & DACCE_FUNC_FRAGMENT) || (cold && (cold[5] == '\0' || cold[5] == '.')))
		*fragment = f;
	return f->start != target || *fragment;
}

/*
 * `call rel32`, bare or behind prefixes that change nothing: `66 66 48 e8`
 * is the call of a TLS general-dynamic sequence (`__tls_get_addr`), padded
 * so the linker can relax it; REX.W keeps the call 64-bit whatever 0x66
 * would say.  `67 e8` is the linker's `addr32 call`, what a `call
 * *foo@GOTPCREL(%rip)` (-fno-plt) to a function of the same link becomes:
 * the address size does not apply to a relative call.  The jump written
 * over the start returns past all of it.
 */
static bool is_call_rel32(const struct dacce_scan_site *s, const uint8_t *bytes)
{
	if (s->len == 5)
		return bytes[0] == 0xe8;
	if (s->len == 6 && bytes[0] == 0x67)
		return bytes[1] == 0xe8;
	if (s->len < 6 || s->len > 15 || bytes[s->len - 5] != 0xe8 || bytes[s->len - 6] != 0x48)
		return false;
	for (unsigned i = 0; i + 6 < s->len; i++)
		if (bytes[i] != 0x66)
			return false;
	return true;
}

/* A patched direct site that calls through its GOT slot (`ff 15`, -fno-plt): the callee is read there. */
static bool calls_through_slot(const struct rt_site *site)
{
	return site->scan.len == 6 && site->original[0] == 0xff;
}

/* A call rel32, a call through a RIP-relative slot, or a jmp rel32: room for jmp rel32. */
static bool site_is_patchable(const struct dacce_scan_site *s, const uint8_t *bytes)
{
	if (s->kind == DACCE_SITE_DIRECT || s->kind == DACCE_SITE_PLT)
		return is_call_rel32(s, bytes) ||
		       (s->len == 6 && bytes[0] == 0xff && bytes[1] == 0x15 && s->slot);
	if (s->kind == DACCE_SITE_TAIL_DIRECT)
		return s->len == 5 && bytes[0] == 0xe9 && !(s->flags & DACCE_SCAN_CONDITIONAL);
	return false;
}

/*
 * A patched site's first-call stub: `jmp` to the slow path, which enters
 * it with the site's index.  The jump's rel32 sits 4-byte aligned (after a
 * 3-byte nop) so that the first call can point it at the trampoline with
 * one atomic store (forward_stub): a thread that still fetches the old one
 * goes through the slow path, which finds the trampoline built.  That costs
 * a jump per call until an epoch points the site itself at its code, and
 * saves the three writes and three core serialisations of rewriting the
 * site (CPython's start-up makes 8,700 first calls).
 */
#define STUB_JMP 3		     /* where the stub's jmp is */
#define STUB_SLOW (STUB_JMP + 5)     /* where it jumps until the first call */
#define STUB_SITE (STUB_SLOW + 5 + 2) /* the site's index: after the spill and movabs's opcode */
#define STUB_ALIGN 16

static int make_stub(uint32_t site, uintptr_t near, uintptr_t *stub)
{
	static const uint8_t nop3[] = { 0x0f, 0x1f, 0x00 };
	static const uint8_t jmp_next[] = { 0xe9, 0, 0, 0, 0 };
	struct x86_buf b;
	uint8_t *write;
	int err;

	err = dacce_codecache_alloc(&rt.cache, near, near + 16, STUB_LEN, STUB_ALIGN, stub, &write);
	if (err)
		return err;
	x86_init(&b, write, STUB_LEN, *stub);
	x86_bytes(&b, nop3, sizeof(nop3));
	x86_bytes(&b, jmp_next, sizeof(jmp_next));
	x86_spill_r11(&b, DACCE_RT_STUB_R11_SLOT);
	if (b.len + 2 != STUB_SITE) /* movabs: REX.W+B, B8+r, then the index */
		return -EINVAL;
	x86_movabs_r11(&b, site);
	x86_jmp_abs_indirect(&b, (uintptr_t)dacce_rt_slow_entry);
	if (b.overflow)
		return -ENOSPC;
	name_code("first_call", &b, near);
	/*
	 * A thread stopped on it is still at the site, in its function:
	 * stub_site_at finds the site from the stub's own bytes, not the entry
	 * map (two inserts per stub: 800,000 in gcc's cc1, whose stubs are
	 * nine in ten never entered).  Tracers are told as of other code.
	 */
	dacce_entry_note(*stub, rt.graph->sites[site].caller, rt.graph->sites[site].offset);
	dacce_entry_note(*stub + STUB_JMP, rt.graph->sites[site].caller,
			 rt.graph->sites[site].offset);
	/* On the caller's stack (the slow path's own frame is libdacce's). */
	return dacce_debug_returns_add_range(*stub, *stub + b.len, near + rt.sites[site].scan.len);
}

/*
 * The site whose first-call stub starts at pc, or whose stub's jump is at
 * pc (where a thread may stop), read from the stub's own movabs and checked
 * against the site table: code that only looks like a stub (or a stub of a
 * module unloaded since, whose site was cleared) names no site.
 */
static bool stub_site_at(uintptr_t pc, uint32_t *index)
{
	const uintptr_t starts[] = { pc, pc - STUB_JMP };

	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		uintptr_t start = starts[i];
		uint64_t site;

		if (start % STUB_ALIGN || !dacce_codecache_contains(&rt.cache, start) ||
		    !dacce_codecache_contains(&rt.cache, start + STUB_SITE + sizeof(site) - 1))
			continue;
		memcpy(&site, (const void *)(start + STUB_SITE), sizeof(site));
		if (site < rt.graph->n_sites && site < rt.cap_sites && rt.sites[site].stub == start) {
			*index = (uint32_t)site;
			return true;
		}
	}
	return false;
}

/* Points the jump of a site's stub at dest, in one store; -ERANGE when it cannot reach. */
static int forward_stub(uintptr_t stub, uintptr_t dest)
{
	uint8_t *write = dacce_codecache_writable(&rt.cache, stub + STUB_JMP + 1);
	int32_t rel;

	if (!write)
		return -EFAULT;
	if (!x86_rel32_reaches(stub + STUB_SLOW, dest))
		return -ERANGE;
	rel = (int32_t)(dest - (stub + STUB_SLOW));
	__atomic_store_n((int32_t *)(void *)write, rel, __ATOMIC_RELEASE);
	return 0;
}

static int redirect_site(uintptr_t addr, uintptr_t dest)
{
	uint8_t bytes[5];
	struct dacce_patch patch = {
		.addr = addr, .bytes = bytes, .len = 5, .effect = DACCE_PATCH_JUMP, .target = dest,
	};
	int err = dacce_tramp_jmp_bytes(addr, dest, bytes);

	return err ? err : dacce_patch_submit(&patch);
}

/* A borrowed jcc from addr (scan.h's DACCE_SCAN_PREV_JCC), as `0f 8x rel32` to its target. */
static int emit_moved_jcc(struct x86_buf *b, const uint8_t *original, uint8_t len, uintptr_t addr)
{
	uint8_t cc = len == 2 ? original[0] & 0x0f : original[1] & 0x0f;
	int64_t rel;
	uintptr_t target;
	int32_t rel32;

	if (len == 2) {
		rel = (int8_t)original[1];
	} else {
		memcpy(&rel32, original + 2, sizeof(rel32));
		rel = rel32;
	}
	target = addr + len + (uintptr_t)rel;
	if (!x86_rel32_reaches(b->addr + b->len + 6, target))
		return -ERANGE;
	rel32 = (int32_t)(target - (b->addr + b->len + 6));
	x86_bytes(b, (const uint8_t[]){ 0x0f, (uint8_t)(0x80 | cc) }, 2);
	x86_bytes(b, (const uint8_t *)&rel32, sizeof(rel32));
	return 0;
}

/* One borrowed instruction from addr, moved into b (a RIP-relative operand or a jcc adjusted). */
static int emit_moved(struct x86_buf *b, const uint8_t *original, uint8_t len, int8_t rip_disp,
		      uintptr_t addr)
{
	uintptr_t at = b->addr + b->len;
	uint8_t bytes[16];
	int32_t disp;
	int64_t moved;

	if (rip_disp == DACCE_SCAN_PREV_JCC)
		return emit_moved_jcc(b, original, len, addr);
	memcpy(bytes, original, len);
	if (rip_disp >= 0) {
		memcpy(&disp, bytes + rip_disp, sizeof(disp));
		moved = (int64_t)disp + (int64_t)(addr - at);
		if (moved < INT32_MIN || moved > INT32_MAX)
			return -ERANGE;
		disp = (int32_t)moved;
		memcpy(bytes + rip_disp, &disp, sizeof(disp));
	}
	x86_bytes(b, bytes, len);
	return 0;
}

/* The instructions a borrowed site took its bytes from (P0 then P1, or P), moved into b. */
static int emit_borrowed(struct x86_buf *b, const struct rt_site *site)
{
	const struct dacce_scan_site *s = &site->scan;
	int err;

	if (site->hopped)
		return 0; /* P was not taken */
	if (site->borrowed_two &&
	    (err = emit_moved(b, site->bytes->prev2, s->prev2_len, s->prev2_rip_disp, s->prev2)))
		return err;
	return emit_moved(b, site->bytes->prev, s->prev_len, s->prev_rip_disp, s->prev);
}

/*
 * Dispatch code for an indirect call site of 5 bytes or more, which jumps
 * here: load the target into %r11 (kept in the red zone), compare it with the
 * targets the site has met, go to the trampoline of the one it is; a new
 * target enters the slow path (on_dispatch_miss), which builds the next
 * version of this code with that target added.  A jump's new target traps.
 */
/* Back to the program's state after jump dispatch code used the stack below the red zone. */
static void leave_jump_frame(struct x86_buf *b)
{
	x86_restore_flags(b);
	x86_load_r11_from_rsp0(b);
	x86_lea_rsp(b, JUMP_SAVE);
}

/*
 * Dispatch code compares its targets in order, so a hot target late in the
 * chain costs a compare and a branch for each one before it (perl's op
 * dispatch met its ~70 ops in the order the program first ran them).  Hits
 * of the targets past the first few are counted (%r11 and the flags are free
 * there); the policy thread moves hot ones to the front (rt_reorder_dispatch).
 */
#define DISPATCH_UNCOUNTED 4
static void count_dispatch_hit(struct x86_buf *b, uint32_t position, uint32_t edge)
{
	if (position < DISPATCH_UNCOUNTED || !rt.dispatch_hits || edge >= RT_MAX_COUNTED_EDGES)
		return;
	/* Not atomic: a count lost between threads only blurs the order. */
	x86_movabs_r11(b, (uintptr_t)&rt.dispatch_hits[edge]);
	x86_inc64_at_r11(b);
}

/* Per-target scratch of the dispatch code builders: off the stack, which may be a small sigaltstack. */
static int dispatch_arrays(uint32_t n, uintptr_t **literal, x86_label **hit)
{
	*literal = calloc(n ? n : 1, sizeof(**literal));
	*hit = calloc(n ? n : 1, sizeof(**hit));
	return *literal && *hit ? 0 : -ENOMEM;
}

static int finish_dispatch(const struct x86_buf *b, uint32_t index, uintptr_t entry,
			   uintptr_t trap_at)
{
	int err;

	if (b->overflow)
		return -ENOSPC;
	dacce_codecache_trim(&rt.cache, b->addr, b->cap, b->len);
	rt.n_trampolines++;
	name_code("dispatch", b, rt.sites[index].scan.addr);
	err = note_entry(entry, index);
	/*
	 * A call's dispatch code keeps to the red zone; a jump's moves %rsp
	 * (build_jump_dispatch): its caller is not at one address.
	 */
	if (!err)
		err = dacce_debug_returns_add_range(b->addr, b->addr + b->len,
						    dacce_site_kind_is_tail(rt.sites[index].scan.kind)
							    ? 0
							    : rt.sites[index].scan.addr +
								      rt.sites[index].scan.len);
	if (err || !trap_at)
		return err;
	return dacce_hashmap_put(&rt.trapped_at, trap_at, index);
}

/*
 * A jump's first targets (the hottest, once reordered) are compared
 * without the flags: %rcx = target + (-literal), jrcxz.  A hit then goes to
 * its trampoline with neither the flags saved nor the function's bounds
 * compared: a target the site met as a tail call lies outside its function.
 * Hits of these are not counted (DISPATCH_UNCOUNTED): the count's incq
 * would write the flags.  %rcx waits in the slot below the saved %r11, which
 * the kernel's signal frames skip (they leave 128 bytes below %rsp alone).
 */
#define FLAGLESS_TARGETS DISPATCH_UNCOUNTED

/*
 * How many targets a jump compares that way.  None for a jump through a
 * register or a table (a switch, mostly: its targets inside the function
 * would pay for every compare before the bounds); through a pointer in
 * memory (`jmp *0x80(%rax)`, `jmp *slot(%rip)`) it is a tail call.
 */
static uint32_t flagless_targets(const struct rt_site *site, uint32_t n)
{
	if (site->scan.flags & (DACCE_SCAN_REG | DACCE_SCAN_INDEXED))
		return 0;
	return n < FLAGLESS_TARGETS ? n : FLAGLESS_TARGETS;
}
static void emit_flagless_hits(struct x86_buf *b, const struct branch_tramp *targets,
			       const uintptr_t *negated, uint32_t k)
{
	x86_label quick[FLAGLESS_TARGETS], past;

	if (k == 0)
		return;
	x86_store_rcx_at_rsp8(b, -8);
	for (uint32_t i = 0; i < k; i++) {
		x86_load_rcx_from_rip_slot(b, negated[i]);
		x86_lea_rcx_r11_plus_rcx(b);
		quick[i] = x86_jrcxz(b);
	}
	x86_load_rcx_from_rsp8(b, -8);
	past = x86_jmp_short(b);
	for (uint32_t i = 0; i < k; i++) {
		x86_bind(b, quick[i]);
		x86_load_rcx_from_rsp8(b, -8);
		x86_load_r11_from_rsp0(b);
		x86_lea_rsp(b, JUMP_SAVE);
		x86_jmp(b, targets[i].tramp);
	}
	x86_bind(b, past);
}

/*
 * Dispatch code for an indirect jump (a switch, or a tail call: only its
 * target tells).  A jump has no dead red zone (a frameless function may keep
 * data there) and may have live flags, so the code saves %r11 below the red
 * zone, moves %rsp past it and keeps the flags.  A target inside the function
 * is reached by the jump itself, run here as it was; a tail target the site
 * has met goes to its trampoline; a new one traps.
 */
static int build_jump_dispatch(uint32_t index, const struct branch_tramp *targets,
			       uint32_t n_targets, uintptr_t *entry)
{
	struct rt_site *site = &rt.sites[index];
	uint32_t n = n_targets < DISPATCH_TARGETS ? n_targets : DISPATCH_TARGETS;
	uint32_t k = flagless_targets(site, n);
	uintptr_t exec, *literal = NULL, negated[FLAGLESS_TARGETS], lit_lo, lit_hi, trap_at;
	x86_label *hit = NULL, below, above;
	struct x86_buf b;
	uint8_t *write;
	int err;

	err = dispatch_arrays(n, &literal, &hit);
	if (!err)
		err = dacce_codecache_alloc(&rt.cache, site->scan.addr, site->scan.addr + 16,
					    DISPATCH_LEN(n), 16, &exec, &write);
	if (err)
		goto cleanup;
	x86_init(&b, write, DISPATCH_LEN(n), exec);
	lit_lo = x86_literal64(&b, site->fn_start);
	lit_hi = x86_literal64(&b, site->fn_end);
	for (uint32_t i = 0; i < n; i++)
		literal[i] = x86_literal64(&b, targets[i].target);
	for (uint32_t i = 0; i < k; i++)
		negated[i] = x86_literal64(&b, -(uint64_t)targets[i].target);
	*entry = b.addr + b.len;
	if (site->borrowed && (err = emit_borrowed(&b, site)))
		goto cleanup;
	/*
	 * A direct jump too short for a jump of our own (`jmp rel8`, reached
	 * through a hop) has one target, met already: its trampoline is entered
	 * as a 5-byte site's would be, with nothing to compare or keep.
	 */
	if (site->scan.kind == DACCE_SITE_TAIL_DIRECT && n_targets == 1 &&
	    targets[0].target == site->scan.target) {
		x86_jmp(&b, targets[0].tramp);
		err = finish_dispatch(&b, index, *entry, 0);
		goto cleanup;
	}
	/* %rsp moves first: a signal in between must not overwrite what is saved below the red zone. */
	x86_lea_rsp(&b, -JUMP_SAVE);
	x86_store_r11_at_rsp32(&b, 0);
	x86_bytes(&b, site->bytes->reload, site->bytes->reload_len); /* never %rsp-relative: see add_site */
	emit_flagless_hits(&b, targets, negated, k);
	x86_save_flags(&b);
	x86_cmp_r11_with_rip_slot(&b, lit_lo);
	below = x86_jcc_near(&b, X86_JB);
	x86_cmp_r11_with_rip_slot(&b, lit_hi);
	above = x86_jcc_near(&b, X86_JAE);
	leave_jump_frame(&b);
	if (site->scan.kind == DACCE_SITE_TAIL_DIRECT)
		x86_trap(&b); /* a constant target outside the function: never here */
	else
		x86_bytes(&b, site->original, site->scan.len); /* inside the function: as natively */
	x86_bind_near(&b, below);
	x86_bind_near(&b, above);
	for (uint32_t i = k; i < n; i++) {
		x86_cmp_r11_with_rip_slot(&b, literal[i]);
		hit[i] = x86_jcc_near(&b, X86_JE);
	}
	leave_jump_frame(&b);
	if (site->table) {
		/*
		 * Past the compared targets the jump leaves the function, whose red
		 * zone and flags are dead from here: the table's lookup may use them.
		 */
		x86_spill_r11(&b, DISPATCH_R11_SLOT);
		x86_bytes(&b, site->bytes->reload, site->bytes->reload_len);
		dacce_emit_lookup(&b, site->table, DISPATCH_R11_SLOT, NULL, &trap_at);
	} else {
		trap_at = b.addr + b.len;
		x86_trap(&b);
	}
	for (uint32_t i = k; i < n; i++) {
		x86_bind_near(&b, hit[i]);
		count_dispatch_hit(&b, i, targets[i].edge);
		leave_jump_frame(&b);
		x86_jmp(&b, targets[i].tramp);
	}
	err = finish_dispatch(&b, index, *entry, trap_at);
cleanup:
	free(literal);
	free(hit);
	return err;
}

static int build_dispatch(uint32_t index, const struct branch_tramp *targets, uint32_t n_targets,
			  uintptr_t *entry)
{
	struct rt_site *site = &rt.sites[index];
	uint32_t n = n_targets < DISPATCH_TARGETS ? n_targets : DISPATCH_TARGETS;
	uintptr_t exec, *literal = NULL, trap_at;
	x86_label *hit = NULL;
	struct dacce_lookup_miss miss;
	struct x86_buf b;
	uint8_t *write;
	int err;

	if (dacce_site_kind_is_tail(site->scan.kind))
		return build_jump_dispatch(index, targets, n_targets, entry);
	miss = (struct dacce_lookup_miss){ (uintptr_t)dacce_rt_slow_entry, SLOW_DISPATCH_MISS | index };
	err = dispatch_arrays(n, &literal, &hit);
	if (!err)
		err = dacce_codecache_alloc(&rt.cache, site->scan.addr, site->scan.addr + 16,
					    DISPATCH_LEN(n), 16, &exec, &write);
	if (err)
		goto cleanup;
	x86_init(&b, write, DISPATCH_LEN(n), exec);
	for (uint32_t i = 0; i < n; i++)
		literal[i] = x86_literal64(&b, targets[i].target);
	*entry = b.addr + b.len;
	if (site->borrowed) {
		err = emit_borrowed(&b, site);
		if (err)
			goto cleanup;
	}
	x86_spill_r11(&b, DISPATCH_R11_SLOT);
	x86_bytes(&b, site->bytes->reload, site->bytes->reload_len);
	for (uint32_t i = 0; i < n; i++) {
		x86_cmp_r11_with_rip_slot(&b, literal[i]);
		hit[i] = x86_jcc_near(&b, X86_JE);
	}
	/*
	 * A new target, past the compared ones (and the table's): the slow path,
	 * entered as from a first-call stub (the program's %r11 is in the stub's
	 * slot already), not a trap: a signal costs about 10 us, and CPython's
	 * start-up met 977 new targets here.  No trap byte: trap_at names nothing.
	 */
	_Static_assert(DISPATCH_R11_SLOT == DACCE_RT_STUB_R11_SLOT, "one slot for %r11");
	if (site->table) {
		dacce_emit_lookup(&b, site->table, DISPATCH_R11_SLOT, &miss, &trap_at);
	} else {
		trap_at = 0;
		x86_movabs_r11(&b, miss.token);
		x86_jmp_abs_indirect(&b, miss.entry);
	}
	for (uint32_t i = 0; i < n; i++) {
		x86_bind_near(&b, hit[i]);
		count_dispatch_hit(&b, i, targets[i].edge);
		x86_reload_r11(&b, DISPATCH_R11_SLOT);
		x86_jmp(&b, targets[i].tramp);
	}
	err = finish_dispatch(&b, index, *entry, trap_at);
cleanup:
	free(literal);
	free(hit);
	return err;
}

/*
 * A short indirect call (`call *%rax`, `call *0x10(%rax)`) borrows the bytes
 * of the instruction before it, P, for a `jmp rel32` to a landing.  When P is
 * under 5 bytes the jump runs into the site, whose first byte must stay the
 * trap byte (a jump from elsewhere straight to the site, or a thread
 * interrupted between P and the site, still traps): so the rel32 byte that
 * falls on it must be DACCE_TRAP_BYTE, which fixes part of the landing's address (the punning of
 * E9Patch).  The bytes after the site, the callee's return address, are
 * never touched.
 */
static bool can_borrow(const struct dacce_scan_site *s)
{
	return (s->kind == DACCE_SITE_INDIRECT || s->kind == DACCE_SITE_TAIL_INDIRECT) &&
	       s->len < 5 && s->prev &&
	       s->prev + s->prev_len == s->addr && s->prev_len + s->len >= 5 &&
	       s->prev_len <= 15;
}

#define LANDING_LEN 24 /* jmp *slot(%rip), then the 8-byte slot, aligned */
#define LANDING_TRIES 32

/*
 * The window of landing addresses for try k of a jump whose next instruction
 * is at next: rel32 = landing - next must have byte `byte` equal to
 * DACCE_TRAP_BYTE.
 * Such windows repeat every 256^(byte + 1) bytes; tries go outward from the
 * code of the site's module mod, alternately above and below it.
 */
static bool landing_window(const struct dacce_module_info *mod, uintptr_t next, unsigned byte,
			   int k, uintptr_t *lo, uintptr_t *hi)
{
	unsigned shift = 8 * byte;
	int64_t width = (int64_t)1 << shift, step = width << 8;
	int64_t base = (int64_t)DACCE_TRAP_BYTE << shift, rel, j;
	int64_t above = (int64_t)mod->end - (int64_t)next - base;
	int64_t below = (int64_t)mod->start - width - (int64_t)next - base;

	if (byte == 3) {
		/* The top byte: one window, 656 to 672 MiB below. */
		if (k > 0)
			return false;
		rel = (int64_t)(int32_t)((uint32_t)DACCE_TRAP_BYTE << 24);
	} else {
		/* The first window clear of the program above it, and below it. */
		j = k % 2 ? (below >= 0 ? below / step : -((-below + step - 1) / step)) - k / 2
			  : (above <= 0 ? -(-above / step) : (above + step - 1) / step) + k / 2;
		rel = base + j * step;
	}
	if (rel < INT32_MIN || rel + width - 1 > INT32_MAX)
		return false;
	if ((int64_t)next + rel < (1 << 16) || (int64_t)next + rel + width > ((int64_t)1 << 47))
		return false;
	*lo = next + (uintptr_t)rel;
	*hi = *lo + (uintptr_t)width;
	return true;
}

/*
 * Redundant prefixes (REX.W, then CS) in front of the jmp move its rel32 so
 * that a byte with wide windows falls on the site: byte 2 (64 KiB windows
 * every 16 MiB) when the borrowed instruction is 3 or 4 bytes long, never
 * the top byte, whose single window may not exist at all (below a non-PIE
 * program).  The jump must still end within the site.
 */
static unsigned jump_prefixes(const struct dacce_scan_site *s)
{
	unsigned p = s->prev_len == 4 ? 1 : 0;

	while (p > 0 && 5 + p > (unsigned)s->prev_len + s->len)
		p--;
	return s->prev_len >= 5 ? 0 : p;
}

static int emit_landing(struct rt_site *site, uint32_t index, uint8_t *write);

static int make_landing(struct rt_site *site, uint32_t index)
{
	unsigned prefixes = jump_prefixes(&site->scan);
	uintptr_t from = site->scan.prev + prefixes, lo, hi;
	const struct dacce_module_info *mod = module_of(site->scan.addr)->info;
	uint8_t *write;
	int err = -ENOSPC;

	if (site->scan.prev_len >= 5) {
		/* The jump stays inside P: any landing in reach. */
		err = dacce_codecache_alloc(&rt.cache, from, from + 16, LANDING_LEN, 8,
					    &site->landing, &write);
	}
	for (int k = 0; k < LANDING_TRIES && err && site->scan.prev_len < 5; k++) {
		if (!landing_window(mod, from + 5, site->scan.prev_len - 1 - prefixes, k, &lo, &hi))
			continue;
		if (hi > mod->start && lo < mod->end)
			continue;
		err = dacce_codecache_alloc_window(&rt.cache, lo, hi, LANDING_LEN, &site->landing,
						   &write);
	}
	if (err)
		return err;
	return emit_landing(site, index, write);
}

/* The landing's code: `jmp *slot(%rip)`, the slot (set_landing) just after it. */
static int emit_landing(struct rt_site *site, uint32_t index, uint8_t *write)
{
	struct x86_buf b;
	uintptr_t slot;
	int err;

	slot = (site->landing + 6 + 7) & ~(uintptr_t)7;
	x86_init(&b, write, LANDING_LEN, site->landing);
	x86_jmp_rip_slot(&b, slot);
	site->landing_slot = slot;
	if (b.overflow)
		return -ENOSPC;
	name_code("landing", &b, site->scan.addr);
	/* Run on the caller's stack, as its dispatch code is: debuggers step through it too. */
	err = dacce_debug_returns_add_range(site->landing, site->landing + b.len,
					    dacce_site_kind_is_tail(site->scan.kind)
						    ? 0
						    : site->scan.addr + site->scan.len);
	return err ? err : note_entry(site->landing, index);
}

/* Points a borrowed site's landing at its dispatch code (an aligned 8-byte store: atomic). */
static void set_landing(const struct rt_site *site, uintptr_t dispatch)
{
	uint64_t *slot = (uint64_t *)dacce_codecache_writable(&rt.cache, site->landing_slot);

	dacce_patch_sync_cores(); /* the new code is seen whole before any thread can reach it */
	__atomic_store_n(slot, (uint64_t)dispatch, __ATOMIC_RELEASE);
}

/* P becomes `jmp landing`; the site keeps its trap byte (the rel32 byte over it is one). */
static int borrow(uint32_t index)
{
	static const uint8_t prefix[2] = { 0x2e, 0x48 }; /* CS, REX.W: both ignored by jmp */
	struct rt_site *site = &rt.sites[index];
	unsigned p = jump_prefixes(&site->scan);
	uint8_t jmp[7];
	uintptr_t entry;
	struct dacce_patch patch;
	int err;

	memcpy(site->bytes->prev, (const void *)site->scan.prev, site->scan.prev_len);
	site->borrowed = true;
	err = make_landing(site, index);
	if (!err)
		err = build_dispatch(index, NULL, 0, &entry);
	if (!err) {
		memcpy(jmp, prefix + 2 - p, p);
		err = dacce_tramp_jmp_bytes(site->scan.prev + p, site->landing, jmp + p);
	}
	if (err)
		return err;
	site = &rt.sites[index];
	if (site->scan.prev_len < 5 && jmp[site->scan.prev_len] != DACCE_TRAP_BYTE)
		return -EILSEQ; /* landing_window is wrong: never patch then */
	site->dispatch = entry;
	set_landing(site, entry);
	patch = (struct dacce_patch){
		.addr = site->scan.prev, .bytes = jmp, .len = 5 + p,
		.effect = DACCE_PATCH_JUMP, .target = site->landing,
	};
	return dacce_patch_submit(&patch);
}

/*
 * Two borrowed instructions, P0 and P1, when P1 and the site are too short
 * together: a jump written at P0 covers P1's start (and the site's, when
 * they are short too), and each start it covers must read as the trap byte,
 * so one or two rel32 bytes are DACCE_TRAP_BYTE.  A layout of the jump (redundant prefixes)
 * says which: *lo_byte and *hi_byte (the same when only one is fixed), or
 * false when every layout fixes the top byte or puts a start on an opcode
 * byte.  *prefixes says how many prefixes the layout has.  A P0 of 5 bytes
 * or more holds the whole jump: nothing is fixed (*lo_byte = *hi_byte =
 * -1), and P1 stays as it is (a thread that comes to it runs it, then
 * meets the site's trap byte).
 */
static bool two_layout(const struct dacce_scan_site *s, unsigned *prefixes, int *lo_byte,
		       int *hi_byte)
{
	if (s->prev2_len >= 5) {
		*prefixes = 0;
		*lo_byte = *hi_byte = -1;
		return true;
	}
	for (unsigned p = 0; p <= 2; p++) {
		unsigned len = 5 + p, o1 = s->prev2_len, o2 = s->prev2_len + s->prev_len;
		int i1 = (int)o1 - (int)p - 1, i2 = (int)o2 - (int)p - 1;

		if (len > o2 + s->len || o1 < p + 1 || o1 >= len)
			continue; /* the jump runs past the site, or P1 starts on its opcode */
		if (o2 >= len)
			i2 = i1; /* the site starts after the jump: only P1's byte is fixed */
		if (i1 > 2 || i2 > 2)
			continue; /* the top byte: one window, often below the program */
		*prefixes = p;
		*lo_byte = i1;
		*hi_byte = i2;
		return true;
	}
	return false;
}

static bool can_borrow_two(const struct dacce_scan_site *s)
{
	unsigned p;
	int lo, hi;

	return (s->kind == DACCE_SITE_INDIRECT || s->kind == DACCE_SITE_TAIL_INDIRECT) &&
	       s->len < 5 && s->prev && s->prev2 && s->prev2 + s->prev2_len == s->prev &&
	       s->prev + s->prev_len == s->addr && s->prev_len + s->len < 5 && s->prev2_len <= 15 &&
	       two_layout(s, &p, &lo, &hi);
}

/*
 * A landing for a jump whose next instruction is at next, with rel32 bytes
 * lo_byte and hi_byte (lo_byte <= hi_byte <= 2) equal to DACCE_TRAP_BYTE: in the windows
 * of hi_byte, then the addresses there with lo_byte right too.
 */
static int landing_for_two(struct rt_site *site, uintptr_t next, int lo_byte, int hi_byte)
{
	const struct dacce_module_info *mod = module_of(site->scan.addr)->info;
	uint8_t *write;
	int err = -ENOSPC;

	if (hi_byte < 0) {
		/* The jump stays inside P0: any landing in reach. */
		err = dacce_codecache_alloc(&rt.cache, next - 5, next + 11, LANDING_LEN, 8,
					    &site->landing, &write);
	}
	for (int k = 0; k < LANDING_TRIES && err && hi_byte >= 0; k++) {
		uintptr_t lo, hi, at;

		if (!landing_window(mod, next, (unsigned)hi_byte, k, &lo, &hi))
			continue;
		if (hi > mod->start && lo < mod->end)
			continue;
		if (lo_byte == hi_byte) {
			err = dacce_codecache_alloc_window(&rt.cache, lo, hi, LANDING_LEN,
							   &site->landing, &write);
			continue;
		}
		if (lo_byte == 1) {
			/* hi_byte 2: the 256 addresses whose byte 1 is the trap byte too */
			at = lo + ((uintptr_t)DACCE_TRAP_BYTE << 8);
			err = dacce_codecache_alloc_window(&rt.cache, at, at + 256, LANDING_LEN,
							   &site->landing, &write);
			continue;
		}
		/* lo_byte 0: one address in each 256 */
		at = lo + ((DACCE_TRAP_BYTE - (lo - next)) & 0xff);
		for (int tries = 0; at < hi && tries < 16 && err; tries++, at += 256)
			err = dacce_codecache_alloc_window(&rt.cache, at, at + 1, LANDING_LEN,
							   &site->landing, &write);
	}
	return err ? err : emit_landing(site, (uint32_t)(site - rt.sites), write);
}

/*
 * P0 becomes a jump to the landing over P0, P1 and perhaps the site's
 * start; P1's start (and the site's) keep reading as the trap byte.  P1's start goes
 * into trapped_at first: a thread that ran P0 before the jump was written
 * traps there and goes on in the dispatch code's copy of P1 (handle_trap).
 */
static int borrow_two(uint32_t index)
{
	static const uint8_t prefix[2] = { 0x2e, 0x48 }; /* CS, REX.W: both ignored by jmp */
	struct rt_site *site = &rt.sites[index];
	const struct dacce_scan_site *s = &site->scan;
	unsigned p;
	int lo_byte, hi_byte, err;
	uint8_t jmp[7];
	uintptr_t entry;
	struct dacce_patch patch;

	if (!two_layout(s, &p, &lo_byte, &hi_byte))
		return -ENOSPC;
	memcpy(site->bytes->prev2, (const void *)s->prev2, s->prev2_len);
	memcpy(site->bytes->prev, (const void *)s->prev, s->prev_len);
	site->borrowed = site->borrowed_two = true;
	err = landing_for_two(site, s->prev2 + 5 + p, lo_byte, hi_byte);
	if (!err)
		err = build_dispatch(index, NULL, 0, &entry);
	site = &rt.sites[index];
	s = &site->scan;
	if (!err) {
		memcpy(jmp, prefix + 2 - p, p);
		err = dacce_tramp_jmp_bytes(s->prev2 + p, site->landing, jmp + p);
	}
	if (err)
		return err;
	if (hi_byte >= 0) {
		if (jmp[s->prev2_len] != DACCE_TRAP_BYTE ||
		    (s->prev2_len + s->prev_len < 5 + p &&
		     jmp[s->prev2_len + s->prev_len] != DACCE_TRAP_BYTE))
			return -EILSEQ; /* the layout is wrong: never patch then */
		err = dacce_hashmap_put(&rt.trapped_at, s->prev, index);
		if (err)
			return err;
	}
	site->dispatch = entry;
	set_landing(site, entry);
	patch = (struct dacce_patch){
		.addr = s->prev2, .bytes = jmp, .len = 5 + p,
		.effect = DACCE_PATCH_JUMP, .target = site->landing,
	};
	return dacce_patch_submit(&patch);
}

#define HOP_LEN 5 /* jmp rel32 */

/* len bytes of padding inside the function being decoded (scan.h), starting in [lo, hi]; or 0. */
static uintptr_t take_inner_padding(uintptr_t lo, uintptr_t hi, size_t len)
{
	const struct dacce_scan *scan = rt.decoding;

	for (size_t i = 0; scan && i < scan->n_pads; i++) {
		struct dacce_scan_pad *run = &scan->pads[i];
		uintptr_t at = run->start + run->used;

		if (at < lo)
			at = lo; /* the bytes skipped stay padding: nothing runs there */
		if (at > hi || at + len > run->start + run->len)
			continue;
		run->used = (uint8_t)(at + len - run->start);
		return at;
	}
	return 0;
}

/*
 * The site becomes `jmp rel8` to 5 bytes of padding holding `jmp landing`
 * (padding.h); the landing goes on to the dispatch code, as for a borrowed
 * site.  -ENOSPC when no padding is in reach (nothing written then).
 */
static int hop(uint32_t index)
{
	struct rt_site *site = &rt.sites[index];
	uintptr_t next = site->scan.addr + 2, pad, entry;
	uint8_t jmp[5], short_jmp[2];
	struct dacce_patch patch;
	uint8_t *write;
	int err;

	pad = take_inner_padding(next - 128, next + 127, HOP_LEN);
	if (!pad)
		pad = dacce_padding_take(&module_of(site->scan.addr)->padding, next - 128,
					 next + 127, HOP_LEN);
	if (!pad)
		return -ENOSPC;
	site->borrowed = site->hopped = true;
	err = dacce_codecache_alloc(&rt.cache, pad, pad + HOP_LEN, LANDING_LEN, 8, &site->landing,
				    &write);
	if (!err)
		err = emit_landing(site, index, write);
	if (!err)
		err = build_dispatch(index, NULL, 0, &entry);
	site = &rt.sites[index];
	if (!err)
		err = dacce_tramp_jmp_bytes(pad, site->landing, jmp);
	if (err)
		return err == -ERANGE ? -ENOSPC : err;
	site->dispatch = entry;
	set_landing(site, entry);
	/* Nothing runs in the padding: written as is, then made visible before the site leads there. */
	err = dacce_patch_write_quiet(pad, jmp, sizeof(jmp));
	if (err)
		return err;
	dacce_patch_sync_cores();
	err = note_entry(pad, index);
	if (!err) /* on the caller's stack, as the landing is */
		err = dacce_debug_returns_add_range(pad, pad + sizeof(jmp),
						    dacce_site_kind_is_tail(site->scan.kind)
							    ? 0
							    : site->scan.addr + site->scan.len);
	if (err)
		return err;
	short_jmp[0] = 0xeb;
	short_jmp[1] = (uint8_t)(int8_t)(pad - next);
	patch = (struct dacce_patch){
		.addr = site->scan.addr, .bytes = short_jmp, .len = 2,
		.effect = DACCE_PATCH_JUMP, .target = pad,
	};
	err = dacce_patch_submit(&patch);
	if (!err)
		rt.n_hops++;
	return err;
}

static int add_site(const struct dacce_scan_site *s, const struct dacce_func *fn, uint32_t caller)
{
	struct rt_site *site;
	uint32_t index;
	int err;

	const struct rt_module *m = module_of(s->addr);

	err = dacce_graph_add_site(rt.graph, caller, m->graph_module, s->addr - m->info->bias,
				   (enum dacce_site_kind)s->kind, &index);
	if (!err)
		err = reserve_sites(index + 1);
	if (err)
		return err;
	site = &rt.sites[index];
	memset(site, 0, sizeof(*site));
	site->scan = *s;
	memcpy(site->original, (const void *)s->addr, s->len);
	site->fn_start = fn->start;
	site->fn_end = fn->end;
	site->trapped = !site_is_patchable(s, site->original);
	if (site->trapped) {
		site->bytes = calloc(1, sizeof(*site->bytes));
		if (!site->bytes)
			return -ENOMEM;
	}
	if (site->trapped && (s->kind == DACCE_SITE_INDIRECT || s->kind == DACCE_SITE_TAIL_INDIRECT) &&
	    s->len >= 2 &&
	    /* Jump dispatch code loads the target with %rsp moved: no stack operands there. */
	    !(s->kind == DACCE_SITE_TAIL_INDIRECT &&
	      dacce_branch_addresses_stack(site->original, s->len))) {
		size_t n;

		site->dispatched = dacce_reload_from_call(site->original, s->len, site->bytes->reload, &n) == 0;
		site->bytes->reload_len = (uint8_t)n;
		if (!site->dispatched && s->slot) {
			/* RIP-relative (`jmp *hook(%rip)`): the slot's absolute address, then the target. */
			struct x86_buf reload;

			x86_init(&reload, site->bytes->reload, sizeof(site->bytes->reload), 0);
			x86_movabs_r11(&reload, s->slot);
			x86_load_r11_from_r11(&reload);
			site->bytes->reload_len = (uint8_t)reload.len;
			site->dispatched = !reload.overflow;
		}
	}
	if (site->trapped && s->kind == DACCE_SITE_TAIL_DIRECT && s->len == 2 &&
	    site->original[0] == 0xeb && s->target) {
		/* `jmp rel8` to another function: dispatched on its one target, reached by a hop. */
		struct x86_buf reload;

		x86_init(&reload, site->bytes->reload, sizeof(site->bytes->reload), 0);
		x86_movabs_r11(&reload, s->target);
		site->bytes->reload_len = (uint8_t)reload.len;
		site->dispatched = !reload.overflow;
	}
	/* A short jump followed by padding has room for a jmp rel32 all the same (scan.h). */
	if (site->dispatched && s->len + s->pad < 5) {
		/* The trap byte first: the jump written over P runs into it. */
		err = dacce_hashmap_put(&rt.trapped_at, s->addr, index);
		if (!err)
			err = dacce_patch_trap(s->addr);
		/*
		 * A site a branch lands on: a jump over P would serve only the
		 * threads falling through, a hop serves all.
		 */
		if (!err && (s->flags & DACCE_SCAN_TARGETED)) {
			err = hop(index);
			if (err == -ENOSPC || err == -ERANGE)
				rt.sites[index].borrowed = rt.sites[index].hopped = false;
			else if (!err)
				goto counted;
		}
		if (!err || err == -ENOSPC || err == -ERANGE)
			err = can_borrow(s) ? borrow(index) : -ENOSPC;
		if ((err == -ENOSPC || err == -ERANGE) && !(s->flags & DACCE_SCAN_TARGETED)) {
			/* No landing in reach for a jump over P: a hop through padding, if any. */
			rt.sites[index].borrowed = false;
			err = hop(index);
		}
		if ((err == -ENOSPC || err == -ERANGE) && can_borrow_two(s)) {
			rt.sites[index].borrowed = rt.sites[index].hopped = false;
			err = borrow_two(index);
			if (err)
				rt.sites[index].borrowed_two = false;
		}
		if (err == -ENOSPC || err == -ERANGE) {
			/* No way to its code: the site just traps. */
			rt.sites[index].dispatched = rt.sites[index].borrowed = false;
			rt.sites[index].hopped = rt.sites[index].borrowed_two = false;
			err = 0;
		}
counted:
		if (rt.sites[index].dispatched)
			rt.n_patched++;
		else
			rt.n_trapped++;
		return err;
	}
	if (site->trapped && !site->dispatched)
		rt.n_trapped++;
	else
		rt.n_patched++;
	if (site->dispatched) {
		uintptr_t entry;

		err = build_dispatch(index, NULL, 0, &entry);
		if (!err)
			err = redirect_site(s->addr, entry);
		site = &rt.sites[index];
		site->dispatch = entry;
		return err;
	}
	if (site->trapped) {
		err = dacce_hashmap_put(&rt.trapped_at, s->addr, index);
		if (!err)
			err = dacce_patch_trap(s->addr);
		return err;
	}
	err = make_stub(index, s->addr, &site->stub);
	return err ? err : redirect_site(s->addr, site->stub);
}

static int decode_function(const struct dacce_func *fn, uint32_t node);

/* Code of node's function that does not start it (foo.cold): tracers map its addresses to node. */
static void announce_fragment(const struct dacce_func *fn, uint32_t node)
{
	const struct rt_module *m = module_of(fn->start);
	uint64_t offset = fn->start - m->info->bias, size = fn->end - fn->start;
	uint32_t module = m->graph_module;

	if (node >= rt.graph->n_nodes || rt.graph->nodes[node].offset == offset)
		return;
	/* In registers: tracers cannot read an indexed memory operand. */
	__asm__("" : "+r"(node), "+r"(module), "+r"(offset), "+r"(size));
	DACCE_PROBE(fragment, node, module, offset, size);
}

/*
 * Whether the CFA at a site of the function being decoded is %rsp + 8
 * (cfa.h): through *walk, made at the function's first tail site, since
 * sites come in address order; asked afresh when it cannot be made.
 */
static int frameless_at(const struct rt_module *m, struct dacce_eh_frame_walk **walk,
			uintptr_t addr)
{
	if (!*walk)
		*walk = dacce_cfa_walk_new(m->cfa);
	return *walk ? dacce_cfa_walk_is_frameless_at(*walk, addr)
		     : dacce_cfa_is_frameless_at(m->cfa, addr);
}

/*
 * A site found by the scan: jumps that stay in the function are left alone
 * (fragments they reach are decoded as part of it); the rest are redirected.
 */
static int consider_site(const struct dacce_scan_site *s, const struct dacce_func *fn,
			 uint32_t node, struct dacce_eh_frame_walk **walk)
{
	const struct rt_module *m = module_of(s->addr);
	const struct dacce_func *fragment;

	if (!dacce_site_kind_is_tail((enum dacce_site_kind)s->kind))
		return add_site(s, fn, node);
	/*
	 * A jump from inside a live frame (the CFA there is not %rsp + 8) is no
	 * tail call, whatever it reaches: left alone, and a function start it
	 * reaches is a fragment of this one.
	 */
	if (frameless_at(m, walk, s->addr) == 0) {
		const struct dacce_func *f = s->target && rt_module_at(s->target) == m
						     ? dacce_funcs_find(&m->funcs, s->target)
						     : NULL;

		if (f && f != fn && f->start != s->target)
			return jump_stays_in_function(s->addr, s->target, &fragment) && fragment
				       ? decode_function(fragment, node)
				       : 0;
		return f && f->start == s->target && f != fn ? decode_function(f, node) : 0;
	}
	if (s->target && jump_stays_in_function(s->addr, s->target, &fragment))
		return fragment ? decode_function(fragment, node) : 0;
	/* A switch whose every case is in the function never leaves it: left alone. */
	if ((s->flags & DACCE_SCAN_JUMP_TABLE) &&
	    dacce_jump_table_stays_in(&s->jump_table, fn->start, fn->end) == 1) {
		rt.n_jump_tables++;
		return 0;
	}
	return add_site(s, fn, node);
}

/* Decodes a function of the program on its first entry and redirects its sites. */
/*
 * Padding the scan found inside a function whose end is a guess: what looks
 * like padding at its end may be the start of a function no symbol or FDE
 * announces.  None of it is used.
 */
static void forget_padding(struct dacce_scan *scan)
{
	for (size_t i = 0; i < scan->n; i++)
		scan->sites[i].pad = 0;
	scan->n_pads = 0;
}

/* Sites this close to a watched entry are patched after it is disarmed (see below). */
#define ENTRY_NEIGHBOURHOOD 16

/* A copy of a function whose entry is watched, with the entry's own byte; NULL otherwise. */
static uint8_t *copy_before_entry(const struct dacce_func *fn)
{
	uint8_t first, *copy;

	if (dacce_entries_original(&module_of(fn->start)->entries, fn, &first) != 1 ||
	    fn->end <= fn->start)
		return NULL;
	copy = malloc(fn->end - fn->start);
	if (!copy)
		return NULL;
	memcpy(copy, (const void *)fn->start, fn->end - fn->start);
	copy[0] = first;
	return copy;
}

/* Debugger breakpoints (int3) seen in one function's code: at most this many are minded. */
#define MAX_BREAKPOINTS 16

struct breakpoints {
	uintptr_t at[MAX_BREAKPOINTS];
	size_t n;
	bool overflow; /* more than MAX_BREAKPOINTS: every site is left alone */
};

/*
 * The function's code to scan: copy (made if needed) with each int3 of a
 * debugger replaced by the program's byte (pristine.h), their addresses in
 * *seen.
 */
static int see_past_breakpoints(const struct dacce_func *fn, uint8_t **copy,
				struct breakpoints *seen)
{
	size_t len = fn->end - fn->start, offsets[MAX_BREAKPOINTS];
	uint8_t *bytes = *copy;
	int mended;

	*seen = (struct breakpoints){ 0 };
	if (!memchr(bytes ? bytes : (const uint8_t *)fn->start, DACCE_INT3, len))
		return 0;
	if (!bytes) {
		bytes = malloc(len);
		if (!bytes)
			return -ENOMEM;
		memcpy(bytes, (const void *)fn->start, len);
		*copy = bytes;
	}
	mended = dacce_pristine_mend(fn->start, bytes, len, offsets, MAX_BREAKPOINTS);
	if (mended < 0)
		return mended;
	seen->overflow = mended > MAX_BREAKPOINTS;
	seen->n = seen->overflow ? MAX_BREAKPOINTS : (size_t)mended;
	for (size_t i = 0; i < seen->n; i++)
		seen->at[i] = fn->start + offsets[i];
	return 0;
}

/*
 * Whether patching site s would write over a debugger's breakpoint: the
 * debugger would then put back the byte it saw (a `call` opcode under our
 * `jmp`).  Such a site is left as it is: its calls run uninstrumented, and
 * what they reach reads as entered from outside (partial), never wrong.
 */
static bool under_breakpoint(const struct dacce_scan_site *s, const struct breakpoints *seen)
{
	uintptr_t lo = s->prev2 ? s->prev2 : s->prev ? s->prev : s->addr;

	if (seen->overflow)
		return true;
	for (size_t i = 0; i < seen->n; i++)
		if (seen->at[i] >= lo && seen->at[i] < s->addr + s->len)
			return true;
	return false;
}

/* The function's original bytes and its sites, for its copies (relocated.h). */
static int keep_for_moving(const struct dacce_func *fn, uint32_t node, const uint8_t *bytes,
			   const struct dacce_scan *scan)
{
	const struct rt_module *m = module_of(fn->start);
	uint32_t *sites = malloc((scan->n ? scan->n : 1) * sizeof(*sites)), n = 0;
	int err;

	if (!sites)
		return -ENOMEM;
	for (size_t i = 0; i < scan->n; i++) {
		uint32_t index = dacce_graph_find_site(rt.graph, m->graph_module,
						       scan->sites[i].addr - m->info->bias);

		if (index != DACCE_NONE && index < rt.cap_sites &&
		    rt.sites[index].scan.addr == scan->sites[i].addr)
			sites[n++] = index;
	}
	err = rt_relocate_keep(fn, node, bytes, sites, n);
	free(sites);
	return err;
}

static int decode_function(const struct dacce_func *fn, uint32_t node)
{
	struct rt_module *m = module_of(fn->start);
	struct dacce_eh_frame_walk *walk = NULL;
	struct dacce_scan scan, *outer;
	struct breakpoints breakpoints;
	uint32_t known;
	uint8_t *copy;
	bool armed;
	int err, close_err;

	if (dacce_hashmap_get(&rt.decoded, fn->start, &known) == 0)
		return 0;
	if (left_alone(m, fn))
		return dacce_entries_disarm(&m->entries, fn) < 0 ? -EIO : 0;
	/* Marked first: a failure leaves it alone rather than half-patched twice. */
	err = dacce_hashmap_put(&rt.decoded, fn->start, node);
	if (err)
		return err;
	rt.n_decoded++;
	announce_fragment(fn, node);
	/*
	 * A watched entry keeps its trap byte until the sites are patched: another
	 * thread that gets there meanwhile waits for the lock, rather than run
	 * calls not patched yet.  The scan reads a copy with the entry's byte.
	 */
	copy = copy_before_entry(fn);
	armed = copy != NULL;
	if (!armed) {
		err = dacce_entries_disarm(&m->entries, fn);
		if (err < 0)
			return err;
	}
	err = see_past_breakpoints(fn, &copy, &breakpoints);
	if (err) {
		free(copy);
		return err;
	}
	err = dacce_scan_cached(m->scans, copy ? copy : (const uint8_t *)fn->start, fn->start,
				fn->end, m->funcs.plt, m->funcs.n_plt, &scan);
	if (err) {
		dacce_rt_log(false, "function at %#lx left uninstrumented: scan failed (%s)",
			     (unsigned long)fn->start, strerror(-err));
		free(copy);
		return dacce_entries_disarm(&m->entries, fn) < 0 ? -EIO : 0;
	}
	/* Code that patches a site reads its bytes, or the previous instruction's, in memory. */
	if (armed && scan.n > 0 && scan.sites[0].addr < fn->start + ENTRY_NEIGHBOURHOOD) {
		err = dacce_entries_disarm(&m->entries, fn);
		if (err < 0)
			goto cleanup;
		err = 0;
	}
	if (fn->flags & DACCE_FUNC_END_GUESSED)
		forget_padding(&scan); /* code nobody announced may follow the guess */
	/* Its sites patched together (patch.h): a few core serialisations, not three per site. */
	dacce_patch_queue_open();
	outer = rt.decoding; /* consider_site may decode a fragment first */
	rt.decoding = &scan;
	for (size_t i = 0; i < scan.n && !err; i++)
		if (!under_breakpoint(&scan.sites[i], &breakpoints))
			err = consider_site(&scan.sites[i], fn, node, &walk);
	rt.decoding = outer;
	if (!err && rt_relocate_wanted())
		err = keep_for_moving(fn, node, copy ? copy : (const uint8_t *)fn->start, &scan);
	/* Its entry's byte too, in the same write as the sites near it, when nobody else runs. */
	if (!err && armed) {
		int queued = dacce_entries_queue_disarm(&m->entries, fn);

		err = queued < 0 ? queued : 0;
	}
	close_err = dacce_patch_queue_close();
	if (!err)
		err = close_err;
	if (!err && armed)
		err = dacce_entries_disarm(&m->entries, fn) < 0 ? -EIO : 0;
cleanup:
	dacce_cfa_walk_free(walk);
	dacce_scan_fini(&scan);
	free(copy);
	return err;
}

int rt_decode_fragment(uintptr_t pc, uint32_t node)
{
	const struct rt_module *m = rt_module_at(pc);
	const struct dacce_func *f = m ? dacce_funcs_find(&m->funcs, pc) : NULL, *fragment;

	if (!f || !jump_stays_in_function(f->start, f->start, &fragment) || !fragment)
		return 0;
	return decode_function(fragment, node);
}

static uintptr_t plt_entry_slot(uintptr_t entry);

/* Whether a call out from site to target calls a libc function that cannot call back (leaves.h). */
static bool is_leaf_call(uint32_t site, uintptr_t target)
{
	uintptr_t slot = plt_entry_slot(target);

	if (!slot && site < rt.cap_sites &&
	    dacce_funcs_in_got(&module_of(rt.sites[site].scan.addr)->funcs, rt.sites[site].scan.slot))
		slot = rt.sites[site].scan.slot;
	return dacce_leaves_is_leaf_call(&rt.leaves, slot, target);
}

/*
 * The instrumented function a PLT entry leads to, or 0 (a call out).  The
 * site keeps calling through the entry or its slot (lazy binding and IFUNC
 * work as natively); only the edge is named after the function reached.
 */
static uintptr_t plt_callee(uintptr_t entry)
{
	uintptr_t slot = plt_entry_slot(entry), callee;
	const struct rt_module *m, *to;
	const struct dacce_func *f;

	if (!slot)
		return 0;
	m = rt_module_at(entry);
	memcpy(&callee, (const void *)slot, sizeof(callee));
	if (dacce_funcs_in_plt(&m->funcs, callee)) /* not bound yet: plt.h */
		callee = dacce_plt_names_callee(&m->plt_names, slot);
	to = callee ? rt_module_at(callee) : NULL;
	f = to ? dacce_funcs_find(&to->funcs, callee) : NULL;
	return f && f->start == callee && !dacce_funcs_in_plt(&to->funcs, callee) ? callee : 0;
}

/* The edge from a site to target, decoding the callee when it is new. */
static int edge_to(uint32_t site, uintptr_t target, uint32_t *edge)
{
	uintptr_t callee = plt_callee(target);
	const struct dacce_func *fn;
	uint32_t node, before;
	int err;

	err = node_at(callee ? callee : target, &node, &fn);
	if (!err && fn)
		err = decode_function(fn, node);
	before = rt.graph->n_edges;
	if (!err)
		err = dacce_graph_add_edge(rt.graph, site, node, edge);
	/*
	 * A call out of instrumented code stays on the ccStack in every epoch
	 * (graph.h), unless it calls a leaf: then it is encoded in the leaf id space.
	 */
	if (!err && !fn && *edge >= before)
		err = is_leaf_call(site, target) ? dacce_graph_leaf_edge(rt.graph, *edge)
						 : dacce_graph_pin_edge(rt.graph, *edge);
	if (!err && *edge >= before && dacce_site_kind_is_tail(rt.graph->edges[*edge].kind))
		err = dacce_hashmap_put(&rt.tail_called, node, *edge);
	if (!err && *edge >= before)
		announce_edge(*edge);
	if (!err)
		dacce_epoch_new_edge();
	return err;
}

/* ------------------------------------------------------------------ trampolines */

static bool may_call_natively(const struct rt_site *site);

/*
 * A direct call that may yet get the program's own call back
 * (restore_native_calls): encoded at 0, into a function no other call holds
 * the free place of for good.  Calls into a function some tail call enters
 * are counted too: the stop weighs them against the tail calls
 * (rt_tail_calls_cold).  Its calls are counted until then, and it is
 * given back only once it has made GIVE_BACK_CALLS of them: lua5.4's sort
 * comparator called lua_pushvalue a million times a second through an edge
 * that cost an add for the whole run, because a call made a few times before
 * the sort had taken the free place, for good, at the first epoch.  Calls
 * that cost an add are not counted (the pushes before their first encoding
 * order them): counting them cost cc1 2 to 4 %, more than it won.
 */
static bool may_be_given_back(const struct dacce_edge *e, const struct dacce_rt_op *op)
{
	uint32_t kept;

	return rt.native_calls && op->kind == DACCE_RT_OP_NONE &&
	       (e->kind == DACCE_SITE_DIRECT || e->kind == DACCE_SITE_PLT) &&
	       !(e->flags & (DACCE_EDGE_PINNED | DACCE_EDGE_LEAF | DACCE_EDGE_KEEP_FREE)) &&
	       e->site < rt.graph->n_sites && e->site < rt.cap_sites &&
	       rt.sites[e->site].edge == (uint32_t)(e - rt.graph->edges) &&
	       may_call_natively(&rt.sites[e->site]) &&
	       dacce_hashmap_get(&rt.kept_free_into, e->callee, &kept) != 0;
}

/*
 * The operation of edge in the current epoch; pushes of edges that could be
 * encoded are counted.  Not a function's call to itself: every encoding
 * pushes it (a cycle of one edge), and gcc's recursive walkers make most of
 * its pushes.
 */
static int op_for_edge_in(const struct dacce_dict *dict, uint32_t edge, struct dacce_rt_op *op)
{
	int err = dacce_rt_op_for_edge(dict, rt.graph, edge, op);
	const struct dacce_edge *e = &rt.graph->edges[edge];
	bool counted = (op->kind == DACCE_RT_OP_PUSH && e->caller != e->callee) ||
		       /*
			* a tail call that costs something: the policy may make it free
			* (epoch.c); not one to a leaf, which costs something in every
			* epoch (sqlite3's mutex wrappers made 25 million, counted for nothing)
			*/
		       (op->kind == DACCE_RT_OP_ADD && dacce_site_kind_is_tail(e->kind) &&
			!(e->flags & DACCE_EDGE_LEAF)) ||
		       may_be_given_back(e, op);

	if (!err && counted && edge < RT_MAX_COUNTED_EDGES && rt.edge_hits &&
	    !(rt.graph->edges[edge].flags & DACCE_EDGE_PINNED))
		op->hits = &rt.edge_hits[edge];
	op->count = rt.counting;
	return err;
}

static int op_for_edge(uint32_t edge, struct dacce_rt_op *op)
{
	return op_for_edge_in(rt.dict, edge, op);
}

/*
 * The code of edge, entered at entry, now returns to after (0: a tail jump,
 * which returns through the tail stub, or to its own return point when it
 * calls on: tail.h).
 */
static void set_edge_return(uint32_t edge, uintptr_t entry, uintptr_t after)
{
	uintptr_t tail_after = 0;
	uint32_t offset;

	if (edge >= RT_MAX_COUNTED_EDGES)
		return;
	if (!after && dacce_hashmap_get(&rt.tail_return_of, entry, &offset) == 0)
		tail_after = entry + offset;
	__atomic_store_n(&rt.edge_returns[edge], after ? after : rt.tail_stub, __ATOMIC_RELEASE);
	__atomic_store_n(&rt.edge_tail_returns[edge], tail_after, __ATOMIC_RELEASE);
}

/*
 * The code for one edge of a site in the current epoch: *entry is where the
 * site jumps, *after where the callee returns (0 for a tail jump).  near is
 * an address the code must also be within rel32 reach of (an older
 * trampoline whose return point will jump to this one's), or 0.
 */
/*
 * The GOT slot a PLT entry jumps through (`[endbr64] [bnd] jmp *slot(%rip)`,
 * the first instruction of .plt, .plt.sec and .plt.got entries), or 0.
 */
static uintptr_t plt_entry_slot(uintptr_t entry)
{
	const struct rt_module *m = rt_module_at(entry);
	const uint8_t *p = (const uint8_t *)entry;
	int32_t disp;

	if (!m || !dacce_funcs_in_plt(&m->funcs, entry))
		return 0;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4;
	if (p[0] == 0xf2)
		p++;
	if (p[0] != 0xff || p[1] != 0x25)
		return 0;
	memcpy(&disp, p + 2, sizeof(disp));
	return (uintptr_t)(p + 6) + (intptr_t)disp;
}

/*
 * The slot a site's code calls or jumps through, or 0 (to the target): a
 * call's own `call *slot(%rip)`, or for a call or tail jump to a PLT entry the
 * entry's GOT slot, which is all the entry does (one jump less per call into
 * a library; lazy binding and IFUNC work as through the entry).
 */
static uintptr_t through_slot(const struct rt_site *site, uintptr_t target, uintptr_t code,
			      size_t max)
{
	bool tail = dacce_site_kind_is_tail(site->scan.kind);
	uintptr_t slot = 0;

	if (!tail && site->trapped)
		return 0;
	if (!tail && calls_through_slot(site))
		return site->scan.slot;
	if ((site->scan.kind == DACCE_SITE_PLT && site->scan.len == 5) ||
	    site->scan.kind == DACCE_SITE_TAIL_DIRECT)
		slot = plt_entry_slot(target);
	return slot && x86_rel32_reaches(code + max, slot) && x86_rel32_reaches(code, slot) ? slot
											      : 0;
}

/*
 * A leaf tail jump's return point (tail.h): the stack walkers take it for the
 * tail stub (returns.c, user/dacce-gdb.py with native 0, a tracer's
 * validator), and gdb gets the stub's unwind rules from the call's last
 * byte (it looks a return address up one byte back).  [start, end) is the
 * trampoline.
 */
static int note_tail_return(uint32_t edge, uintptr_t start, uintptr_t at, uintptr_t end,
			    uintptr_t site)
{
	size_t n_rules;
	const uint8_t *rules = dacce_tail_stub_unwind_rules(&n_rules);
	int err = dacce_hashmap_put(&rt.tail_returns, at, edge);

	if (!err)
		err = dacce_debug_returns_add(at, 0);
	if (err)
		return err;
	rt_code_named("tail", start, at - 1 - start, site);
	rt_code_returned_to_rules("tail_return", at - 1, end - (at - 1), rules, n_rules);
	dacce_entry_note(at, DACCE_CODE_TAIL_STUB, 0); /* as announce_code_of_no_site */
	return 0;
}

static int build_trampoline_with(uint32_t site_index, uint32_t edge, uintptr_t target,
				 uintptr_t near, const struct dacce_rt_op *with, uintptr_t *entry,
				 uintptr_t *after, struct dacce_rt_op *built)
{
	const struct rt_site *site = &rt.sites[site_index];
	uintptr_t lo = site->scan.addr, hi = site->scan.addr + 16, start, slot, tail_return = 0;
	struct dacce_rt_op op = *with;
	struct x86_buf b;
	uint8_t *write;
	bool tail = dacce_site_kind_is_tail(site->scan.kind), leaf;
	size_t max = tail ? DACCE_TAIL_TRAMP_MAX : DACCE_TRAMP_CALL_MAX;
	int err;

	if (near && near < lo)
		lo = near;
	if (near && near + 16 > hi)
		hi = near + 16;
	err = dacce_codecache_alloc(&rt.cache, lo, hi, max, 16, &start, &write);
	if (err)
		return err;
	x86_init(&b, write, max, start);
	rt.n_trampolines++;
	*after = 0;
	slot = through_slot(site, target, start, max);
	leaf = (rt.graph->edges[edge].flags & DACCE_EDGE_LEAF) != 0;
	if (tail && op.kind != DACCE_RT_OP_NONE && (leaf || rt.tail_call_shape)) {
		err = dacce_tail_emit_call_trampoline(&b, rt.tpoff, &op, leaf, target, slot, entry,
						      &tail_return);
	} else if (tail) {
		err = dacce_tail_emit_trampoline(&b, rt.tpoff, &op, rt.tail_stub, target, slot, entry);
	} else if (slot) {
		/* Keep calling through the slot (lazy binding, IFUNC). */
		*entry = start;
		dacce_emit_call_hit(&b, &op);
		dacce_emit_before(&b, rt.tpoff, &op);
		x86_call_rip_slot(&b, slot);
		*after = b.addr + b.len;
		dacce_emit_after(&b, rt.tpoff, &op);
		x86_jmp(&b, site->scan.addr + site->scan.len);
		err = b.overflow ? -ENOSPC : 0;
	} else {
		err = dacce_tramp_build_call(&b, rt.tpoff, &op, target,
					     site->scan.addr + site->scan.len, entry, after);
	}
	*built = op;
	if (!err)
		dacce_codecache_trim(&rt.cache, start, max, b.len);
	if (!err && *after)
		err = dacce_hashmap_put(&rt.return_edge, *after, edge);
	if (!err && *after)
		err = dacce_debug_returns_add(*after, site->scan.addr + site->scan.len);
	if (!err)
		err = dacce_debug_returns_add_range(start, start + b.len,
						    *after ? site->scan.addr + site->scan.len : 0);
	if (err)
		return err;
	if (tail_return) {
		err = dacce_hashmap_put(&rt.tail_return_of, *entry, (uint32_t)(tail_return - *entry));
		if (!err)
			err = note_tail_return(edge, start, tail_return, b.addr + b.len, site->scan.addr);
		if (err)
			return err;
	} else if (tail)
		name_code("tail", &b, site->scan.addr);
	else /* on the caller's frame, as at the call */
		rt_code_returned_to("call", b.addr, b.len, site->scan.addr, site->scan.addr);
	/* A thread stopped on the entry is at the site, in its function. */
	return note_entry(*entry, site_index);
}

static int build_trampoline(uint32_t site_index, uint32_t edge, uintptr_t target, uintptr_t near,
			    uintptr_t *entry, uintptr_t *after, struct dacce_rt_op *built)
{
	struct dacce_rt_op op;
	int err = op_for_edge(edge, &op);

	return err ? err
		   : build_trampoline_with(site_index, edge, target, near, &op, entry, after,
					   built);
}

/* A jcc rel32 (0f 8x rel32): it can jump to a trampoline itself, the condition evaluated natively. */
static bool is_jcc_rel32(const struct rt_site *site)
{
	return site->scan.len == 6 && site->original[0] == 0x0f &&
	       (site->original[1] & 0xf0) == 0x80 && dacce_site_kind_is_tail(site->scan.kind);
}

/* The rel32 of a jcc at site that reaches dest. */
static int jcc_rel32(const struct rt_site *site, uintptr_t dest, uint8_t out[4])
{
	uintptr_t end = site->scan.addr + 6;
	int32_t rel;

	if (!x86_rel32_reaches(end, dest))
		return -ERANGE;
	rel = (int32_t)(dest - end);
	memcpy(out, &rel, sizeof(rel));
	return 0;
}

/*
 * A trapped conditional tail jump stops trapping once its target has a
 * trampoline: the jcc is pointed at it.  Its trap byte is already there, so
 * the kernel's protocol is what is left of it: the new rel32 behind the trap
 * byte, then the opcode byte back.  A thread meeting the trap byte meanwhile is
 * emulated with the original bytes, which go to the same trampoline.
 */
static int promote_jcc(struct rt_site *site, uintptr_t tramp)
{
	uint8_t rel[4];
	int err = jcc_rel32(site, tramp, rel);

	if (!err)
		err = dacce_patch_write_quiet(site->scan.addr + 2, rel, sizeof(rel));
	if (err)
		return err;
	dacce_patch_sync_cores();
	err = dacce_patch_write_quiet(site->scan.addr, site->original, 1);
	dacce_patch_sync_cores();
	if (!err)
		site->promoted = true;
	return err;
}

/* First call of a patched site (from the slow entry). */
static uintptr_t on_first_call(uint64_t token, struct dacce_rt_regs *regs)
{
	struct rt_site *site;
	uintptr_t target, tramp, after;
	struct dacce_rt_op op;
	uint32_t edge;
	sigset_t saved;
	int err = 0, saved_errno = errno; /* the program may be between a call and its errno check */

	(void)regs;
	rt_lock(&saved);
	if (token >= rt.cap_sites || rt.sites[token].scan.addr == 0)
		rt_fatal("slow path entered with an unknown site", EINVAL);
	site = &rt.sites[token];
	rt.n_first_calls++;
	if (!site->tramp) {
		target = calls_through_slot(site) ? *(const uintptr_t *)site->scan.slot : site->scan.target;
		err = edge_to((uint32_t)token, target, &edge);
		if (!err)
			err = build_trampoline((uint32_t)token, edge, target, 0, &tramp, &after, &op);
		site = &rt.sites[token]; /* decoding the callee may have moved the array */
		if (!err)
			err = forward_stub(site->stub, tramp);
		if (err == -ERANGE)
			err = redirect_site(site->scan.addr, tramp);
		if (err)
			rt_fatal("instrumenting a call site", err);
		site->tramp = tramp;
		site->tramp_after = after;
		site->edge = edge;
		site->op = op;
		set_edge_return(edge, tramp, after);
	}
	tramp = site->tramp;
	errno = saved_errno; /* before leaving runtime code: __errno_location is libc's */
	rt_unlock(&saved);
	return tramp;
}

static void note_reorder_candidate(uint32_t index)
{
	if (rt.n_reorder_candidates == rt.cap_reorder_candidates) {
		uint32_t cap = rt.cap_reorder_candidates ? rt.cap_reorder_candidates * 2 : 64;
		uint32_t *grown = realloc(rt.reorder_candidates, cap * sizeof(*grown));

		if (!grown)
			return;
		rt.reorder_candidates = grown;
		rt.cap_reorder_candidates = cap;
	}
	rt.reorder_candidates[rt.n_reorder_candidates++] = index;
}

static int trampoline_for_target(uint32_t index, uintptr_t target, uintptr_t *tramp)
{
	struct rt_site *site = &rt.sites[index];
	struct branch_tramp *grown;
	struct dacce_rt_op op;
	uintptr_t after;
	uint32_t edge;
	int err;

	for (uint32_t i = 0; i < site->n_by_target; i++) {
		if (site->by_target[i].target == target) {
			*tramp = site->by_target[i].tramp;
			return 0;
		}
	}
	err = edge_to(index, target, &edge);
	if (!err)
		err = build_trampoline(index, edge, target, 0, tramp, &after, &op);
	if (err)
		return err;
	site = &rt.sites[index]; /* decoding the callee may have moved the array */
	if (site->n_by_target == site->cap_by_target) {
		uint32_t cap = site->cap_by_target ? site->cap_by_target * 2 : 4;

		grown = realloc(site->by_target, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		site->by_target = grown;
		site->cap_by_target = cap;
	}
	site->by_target[site->n_by_target++] = (struct branch_tramp){
		.target = target, .tramp = *tramp, .after = after, .edge = edge, .op = op,
	};
	set_edge_return(edge, *tramp, after);
	/* From now on its counted targets may get hot: rt_reorder_dispatch looks at it. */
	if (site->dispatched && site->n_by_target == DISPATCH_UNCOUNTED + 1)
		note_reorder_candidate(index); /* without memory, its code keeps its order */
	return 0;
}

/* A dispatched site met a new target: new dispatch code that knows it. */
static int redispatch(uint32_t index)
{
	uintptr_t entry;
	struct rt_site *site = &rt.sites[index];
	int err = build_dispatch(index, site->by_target, site->n_by_target, &entry);

	if (!err && site->borrowed)
		set_landing(site, entry);
	else if (!err)
		err = redirect_site(site->scan.addr, entry);
	if (!err)
		site->dispatch = entry;
	return err;
}

/*
 * A dispatched site met a new target: compared directly while there are
 * few, looked up in the site's table past that (the table is created, and
 * the dispatch code rebuilt to use it, when the first one overflows).  A
 * target the table has no room for keeps trapping.
 */
static int dispatch_new_target(uint32_t index, uintptr_t target, uintptr_t tramp)
{
	struct rt_site *site = &rt.sites[index];
	int err;

	if (site->n_by_target <= DISPATCH_TARGETS)
		return redispatch(index);
	if (site->table) {
		err = dacce_lookup_set(site->table, target, tramp);
		return err == -ENOSPC ? 0 : err;
	}
	site->table = dacce_lookup_new();
	if (!site->table)
		return -ENOMEM;
	for (uint32_t i = DISPATCH_TARGETS; i < site->n_by_target; i++)
		dacce_lookup_set(site->table, site->by_target[i].target, site->by_target[i].tramp);
	return redispatch(index);
}

/* Hits of a target since the site's last reordering (0 when not counted). */
static uint64_t dispatch_hits_of(const struct branch_tramp *t)
{
	return rt.dispatch_hits && t->edge < RT_MAX_COUNTED_EDGES ? rt.dispatch_hits[t->edge] : 0;
}

/*
 * The compared targets with at least min hits go first, hottest first; the
 * others keep their order after them.  Only the compared ones move: a target
 * past DISPATCH_TARGETS stays in the site's table.
 */
static void hot_targets_first(struct rt_site *site, uint32_t n, uint64_t min)
{
	struct branch_tramp *t = site->by_target;

	for (uint32_t i = 1; i < n; i++) {
		struct branch_tramp moving = t[i];
		uint64_t h = dispatch_hits_of(&moving);
		uint32_t j = i;

		if (h < min)
			continue;
		while (j > 0 && dispatch_hits_of(&t[j - 1]) < h)
			j--;
		memmove(&t[j + 1], &t[j], (i - j) * sizeof(*t));
		t[j] = moving;
	}
	for (uint32_t i = 0; i < n; i++)
		if (rt.dispatch_hits && t[i].edge < RT_MAX_COUNTED_EDGES)
			rt.dispatch_hits[t[i].edge] = 0;
}

/*
 * Reorders the dispatch code of sites whose counted targets (past the first
 * DISPATCH_UNCOUNTED) were hit often since the last look.  A site is
 * reordered DISPATCH_REORDERS times at most, so targets that trade places
 * cannot make it build code for ever.  rt.lock held.
 */
#define DISPATCH_REORDERS 4
#define DISPATCH_HOT_HITS 1000
void rt_reorder_dispatch(void)
{
	uint32_t kept = 0, c;

	/* The program runs on meanwhile: a site pointed at new code must take the int3 steps. */
	dacce_patch_foreign_begin();
	/*
	 * Only the candidates (rt.reorder_candidates): walking every site at
	 * each wake-up touched megabytes under the lock (CPython: 25,000 sites,
	 * 3 % of its samples).
	 */
	for (c = 0; c < rt.n_reorder_candidates; c++) {
		uint32_t i = rt.reorder_candidates[c];
		struct rt_site *site = &rt.sites[i];
		uint32_t n = site->n_by_target < DISPATCH_TARGETS ? site->n_by_target
								   : DISPATCH_TARGETS;
		bool hot = false;

		if (!site->dispatched || site->reorders >= DISPATCH_REORDERS ||
		    n <= DISPATCH_UNCOUNTED)
			continue; /* done with, or forgotten with its module */
		rt.reorder_candidates[kept++] = i;
		for (uint32_t k = DISPATCH_UNCOUNTED; k < n && !hot; k++)
			hot = dispatch_hits_of(&site->by_target[k]) >= DISPATCH_HOT_HITS;
		if (!hot)
			continue;
		hot_targets_first(site, n, DISPATCH_HOT_HITS);
		site->reorders++;
		rt.n_reorders++;
		if (redispatch(i)) {
			c++;
			break; /* no room for code: the old code stays, in the old order, and works */
		}
	}
	while (c < rt.n_reorder_candidates)
		rt.reorder_candidates[kept++] = rt.reorder_candidates[c++];
	rt.n_reorder_candidates = kept;
	dacce_patch_foreign_end();
}

/*
 * A trapped site met from runtime work (in_runtime_work): its branch carried
 * out as it was, a call's return address pushed here.  The lock may be ours.
 */
static int trap_natively(ucontext_t *uc, uintptr_t at)
{
	greg_t *gregs = uc->uc_mcontext.gregs;
	bool locked = !holding_lock();
	const struct rt_site *site;
	struct dacce_branch br;
	uint32_t index;
	int err = 0, saved_errno = errno;

	if (locked)
		hold_lock();
	if (dacce_hashmap_get(&rt.trapped_at, at, &index)) {
		err = -ENOENT;
	} else {
		site = &rt.sites[index];
		if (site->borrowed_two && at == site->scan.prev) {
			/* P1's start, inside the jump over P0: on in the dispatch code's copy of P1. */
			br = (struct dacce_branch){ .target = site->dispatch + site->scan.prev2_len };
			gregs[REG_RIP] = (greg_t)br.target;
		} else if (!(err = dacce_emulate_branch(site->original, site->scan.len,
							site->scan.addr, &uc->uc_mcontext, &br))) {
			if (br.taken && br.is_call) {
				gregs[REG_RSP] -= 8;
				*(uint64_t *)(uintptr_t)gregs[REG_RSP] = site->scan.addr + br.len;
			}
			gregs[REG_RIP] = (greg_t)(br.taken ? br.target : site->scan.addr + br.len);
		}
	}
	if (locked)
		pthread_setcancelstate(release_lock(), NULL);
	if (err && err != -ENOENT)
		rt_fatal("carrying out a trapped branch met from runtime work", err);
	errno = saved_errno;
	return !err;
}

/* A thread met the trap byte of a trapped site: send it where the instruction would go. */
static int handle_trap(void *uc_void, uintptr_t at)
{
	ucontext_t *uc = uc_void;
	const struct dacce_func *fragment;
	struct dacce_branch br;
	struct rt_site *site;
	uintptr_t next;
	uint32_t index;
	int err, saved_errno = errno; /* a signal handler must leave errno as it found it */

	/* Every signal is already blocked in the trap signal's handler. */
	hold_lock();
	if (dacce_hashmap_get(&rt.trapped_at, at, &index)) {
		pthread_setcancelstate(release_lock(), NULL);
		errno = saved_errno;
		return 0;
	}
	site = &rt.sites[index];
	rt.n_traps++;
	site->traps++;
	if (site->borrowed_two && at == site->scan.prev) {
		/* P1's start, inside the jump over P0: on in the dispatch code's copy of P1. */
		pthread_setcancelstate(release_lock(), NULL);
		errno = saved_errno;
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(site->dispatch + site->scan.prev2_len);
		return 1;
	}
	/* The instruction as it was at the site (a dispatched site traps in its dispatch code). */
	at = site->scan.addr;
	err = dacce_emulate_branch(site->original, site->scan.len, at, &uc->uc_mcontext, &br);
	if (err)
		rt_fatal("emulating a trapped site", err);
	/* Most of these are seldom taken: pointed at their trampoline on the first trap, taken or not. */
	if (is_jcc_rel32(site) && !site->promoted && site->scan.target &&
	    !jump_stays_in_function(at, site->scan.target, &fragment)) {
		err = trampoline_for_target(index, site->scan.target, &next);
		site = &rt.sites[index]; /* decoding the target may have moved the array */
		if (!err)
			err = promote_jcc(site, next);
		if (err)
			rt_fatal("pointing a conditional tail jump at its trampoline", err);
	}
	if (!br.taken)
		next = at + br.len;
	else if (!br.is_call && br.target >= site->fn_start && br.target < site->fn_end)
		next = br.target; /* a jump within the function (a switch): no edge */
	else if (!br.is_call && jump_stays_in_function(at, br.target, &fragment)) {
		next = br.target; /* into a fragment of it (foo.cold), decoded first */
		err = fragment ? decode_function(fragment, rt.graph->sites[index].caller) : 0;
		if (err)
			rt_fatal("instrumenting a fragment a trapped jump reaches", err);
	} else if ((err = trampoline_for_target(index, br.target, &next)))
		rt_fatal("instrumenting a trapped site", err);
	else if (rt.sites[index].dispatched && (err = dispatch_new_target(index, br.target, next)))
		rt_fatal("updating dispatch code", err);
	pthread_setcancelstate(release_lock(), NULL);
	errno = saved_errno;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)next;
	return 1;
}

/* The registers at a site as the trap hook sees them, from the slow path's save area. */
static void regs_to_mcontext(const struct dacce_rt_regs *r, uintptr_t pc, mcontext_t *mc)
{
	memset(mc, 0, sizeof(*mc));
	mc->gregs[REG_RAX] = (greg_t)r->rax;
	mc->gregs[REG_RBX] = (greg_t)r->rbx;
	mc->gregs[REG_RCX] = (greg_t)r->rcx;
	mc->gregs[REG_RDX] = (greg_t)r->rdx;
	mc->gregs[REG_RSI] = (greg_t)r->rsi;
	mc->gregs[REG_RDI] = (greg_t)r->rdi;
	mc->gregs[REG_RBP] = (greg_t)r->rbp;
	mc->gregs[REG_RSP] = (greg_t)r->rsp;
	mc->gregs[REG_R8] = (greg_t)r->r8;
	mc->gregs[REG_R9] = (greg_t)r->r9;
	mc->gregs[REG_R10] = (greg_t)r->r10;
	mc->gregs[REG_R11] = (greg_t)r->r11;
	mc->gregs[REG_R12] = (greg_t)r->r12;
	mc->gregs[REG_R13] = (greg_t)r->r13;
	mc->gregs[REG_R14] = (greg_t)r->r14;
	mc->gregs[REG_R15] = (greg_t)r->r15;
	mc->gregs[REG_RIP] = (greg_t)pc;
}

/*
 * A call's dispatch code met a target it does not compare (build_dispatch):
 * the target is computed from the registers at the site, as the trap hook
 * does for a trapped site, and the thread goes on in its trampoline, which
 * the next version of the dispatch code compares too.
 */
static uintptr_t on_dispatch_miss(uint64_t index, const struct dacce_rt_regs *regs)
{
	struct dacce_branch br;
	struct rt_site *site;
	mcontext_t mc;
	uintptr_t next;
	sigset_t saved;
	int err, saved_errno = errno;

	rt_lock(&saved);
	if (index >= rt.cap_sites || !rt.sites[index].dispatched)
		rt_fatal("slow path entered from dispatch code of an unknown site", EINVAL);
	site = &rt.sites[index];
	rt.n_dispatch_misses++;
	regs_to_mcontext(regs, site->scan.addr, &mc);
	err = dacce_emulate_branch(site->original, site->scan.len, site->scan.addr, &mc, &br);
	if (!err && !br.is_call)
		err = -EILSEQ;
	if (!err)
		err = trampoline_for_target((uint32_t)index, br.target, &next);
	if (!err)
		err = dispatch_new_target((uint32_t)index, br.target, next);
	if (err)
		rt_fatal("dispatching a call to a new target", err);
	errno = saved_errno; /* before leaving runtime code: __errno_location is libc's */
	rt_unlock(&saved);
	return next;
}

/*
 * The slow path met from runtime work: the site's branch carried out as it
 * was, with no edge, no code built and the site left as it is.  A call is
 * made through dacce_rt_slow_call (entry.h), a jump goes straight on.
 */
static uintptr_t branch_natively(uint64_t token, struct dacce_rt_regs *regs)
{
	uint64_t index = token & ~SLOW_DISPATCH_MISS;
	bool locked = !holding_lock();
	const struct rt_site *site;
	struct dacce_branch br;
	sigset_t saved;
	mcontext_t mc;
	int err, saved_errno = errno;

	if (locked)
		rt_lock(&saved);
	if (index >= rt.cap_sites || rt.sites[index].scan.addr == 0)
		rt_fatal("slow path entered with an unknown site", EINVAL);
	site = &rt.sites[index];
	regs_to_mcontext(regs, site->scan.addr, &mc);
	err = dacce_emulate_branch(site->original, site->scan.len, site->scan.addr, &mc, &br);
	if (err)
		rt_fatal("carrying out a branch met from runtime work", err);
	regs->call_target = br.target;
	regs->call_return = site->scan.addr + br.len;
	if (locked)
		rt_unlock(&saved);
	errno = saved_errno;
	/* Taken, whatever the saved flags say: only a taken branch reaches a stub or a miss. */
	return br.is_call ? (uintptr_t)dacce_rt_slow_call : br.target;
}

/* Both ways into the slow path: a site's first call, a call's dispatch code meeting a new target. */
static uintptr_t on_slow_path(uint64_t token, struct dacce_rt_regs *regs)
{
	if (in_runtime_work())
		return branch_natively(token, regs);
	if (token & SLOW_DISPATCH_MISS)
		return on_dispatch_miss(token & ~SLOW_DISPATCH_MISS, regs);
	return on_first_call(token, regs);
}

/*
 * The trap hook: runtime work (decoding, building code) on the trapping
 * thread, which a sampler must see as such: its pc is in the runtime or the
 * libraries it uses, and its context is being changed.
 */
/*
 * A thread the runtime did not start (made before it, or by a raw clone)
 * that is about to run instrumented code: stacks, a partial context, and
 * its end noticed through a thread-specific key.  rt.lock held.
 */
static void adopt_thread(void)
{
	dacce_rt_thread_partial();
	if (rt.adopted_key_made)
		pthread_setspecific(rt.adopted_key, &rt);
}

static void adopted_thread_ends(void *unused)
{
	(void)unused;
	dacce_rt_thread_end();
}

/*
 * The armed entry of a function nobody decoded yet (entries.h): decoded now,
 * before its first instruction runs, and the thread sent back to it.  Met
 * from inside runtime work (a library the runtime called, calling a function
 * of the program that replaces it, such as malloc), the lock may be ours:
 * the byte is only put back, and the function is decoded when instrumented
 * code first calls it.
 */
static int handle_entry_trap(ucontext_t *uc, uintptr_t at, bool nested)
{
	struct rt_module *m = rt_module_at(at);
	const struct dacce_func *fn = m ? dacce_entries_armed_at(&m->entries, at) : NULL, *f;
	struct dacce_thread *self = dacce_thread_self();
	int err, saved_errno = errno;
	bool adopt;
	uint32_t node;

	if (!fn)
		return 0;
	adopt = !dacce_tls_self()->cc_base;
	if (nested || (adopt && self->runtime_own)) {
		err = dacce_entries_disarm(&m->entries, fn);
	} else {
		/* Registered before the lock, as every thread (threads.h). */
		if (adopt)
			dacce_thread_register();
		hold_lock();
		if (adopt)
			adopt_thread();
		rt.n_entry_traps++;
		err = node_at(at, &node, &f);
		if (!err && f == fn)
			err = decode_function(fn, node);
		else if (!err)
			err = dacce_entries_disarm(&m->entries, fn);
		pthread_setcancelstate(release_lock(), NULL);
	}
	if (err < 0)
		rt_fatal("instrumenting a function entered from outside instrumented code", err);
	errno = saved_errno;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)at;
	return 1;
}

/* A trap byte a debugger put back over an entry already disarmed (entries.h). */
static int handle_stray_entry(ucontext_t *uc, uintptr_t at)
{
	struct rt_module *m = rt_module_at(at);
	int saved_errno = errno, restored = m ? dacce_entries_restore_stray(&m->entries, at) : 0;

	if (restored < 0)
		rt_fatal("putting back the first byte of a function", restored);
	errno = saved_errno;
	if (restored)
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)at;
	return restored;
}

static int on_trap(void *uc_void, uintptr_t at)
{
	bool nested = in_runtime_work();
	int handled;

	dacce_runtime_enter();
	handled = handle_entry_trap(uc_void, at, nested);
	if (!handled)
		handled = handle_stray_entry(uc_void, at);
	/* A site's trap only while its byte is there (patch.h). */
	if (!handled && *(const volatile uint8_t *)at == DACCE_TRAP_BYTE)
		handled = nested ? trap_natively(uc_void, at) : handle_trap(uc_void, at);
	dacce_runtime_leave();
	return handled;
}

/* ------------------------------------------------------------------ re-encoding */

/* What a planned piece of code replaces: a site's trampoline, one of its targets', its dispatch. */
#define PLAN_TRAMP (-1)
#define PLAN_DISPATCH (-2)

struct planned {
	uint32_t site;
	int32_t slot; /* PLAN_TRAMP, PLAN_DISPATCH or an index in by_target */
	uintptr_t entry, after;
	struct dacce_rt_op op;
};

struct rt_code_plan {
	struct planned *items;
	size_t n, cap;
};

static int plan_add(struct rt_code_plan *plan, struct planned item)
{
	if (plan->n == plan->cap) {
		size_t cap = plan->cap ? plan->cap * 2 : 256;
		struct planned *grown = realloc(plan->items, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		plan->items = grown;
		plan->cap = cap;
	}
	plan->items[plan->n++] = item;
	return 0;
}

void rt_plan_free(struct rt_code_plan *plan)
{
	if (!plan)
		return;
	free(plan->items);
	free(plan);
}

/*
 * New code for one edge of a site, within reach of the old code's return
 * point, unless the edge's operation is the same in the new epoch (then the
 * old code stays: push code reads maxID + 1 from the thread's block).
 * *entry is the code the site's edge runs in the new epoch.
 */
static int plan_edge(struct rt_code_plan *plan, uint32_t index, int32_t slot, uint32_t edge,
		     uintptr_t target, uintptr_t old_entry, const struct dacce_rt_op *old_op,
		     uintptr_t *entry)
{
	struct planned item = { .site = index, .slot = slot };
	struct dacce_prebuilt ready;
	struct dacce_rt_op op;
	int err = op_for_edge(edge, &op);

	*entry = old_entry;
	if (err || dacce_rt_op_same_code(&op, old_op))
		return err;
	if (old_entry && dacce_prebuilt_take(old_entry, edge, target, &op, &ready)) {
		item.entry = ready.entry;
		item.after = ready.after;
		item.op = ready.op;
		rt.n_prebuilt_used++;
	} else {
		err = build_trampoline_with(index, edge, target, old_entry, &op, &item.entry,
					    &item.after, &item.op);
	}
	if (!err)
		err = plan_add(plan, item);
	if (!err)
		*entry = item.entry;
	return err;
}

static int plan_site(struct rt_code_plan *plan, uint32_t index)
{
	struct rt_site *site = &rt.sites[index];
	struct branch_tramp *fresh = NULL;
	size_t before = plan->n;
	uintptr_t entry;
	int err = 0;

	if (site->native)
		return 0; /* free in every epoch: the encoder keeps it so (graph.h) */
	if (site->tramp)
		return plan_edge(plan, index, PLAN_TRAMP, site->edge,
				 calls_through_slot(site) ? 0 : site->scan.target, site->tramp, &site->op,
				 &entry);
	if (site->dispatched) {
		fresh = malloc(sizeof(*fresh) * (site->n_by_target ? site->n_by_target : 1));
		if (!fresh)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < site->n_by_target && !err; i++) {
		err = plan_edge(plan, index, (int32_t)i, site->by_target[i].edge,
				site->by_target[i].target, site->by_target[i].tramp,
				&site->by_target[i].op, &entry);
		if (fresh) {
			fresh[i] = site->by_target[i];
			fresh[i].tramp = entry;
		}
	}
	/* Dispatch code that goes to the new trampolines, when there are any. */
	if (!err && fresh && plan->n > before) {
		struct planned item = { .site = index, .slot = PLAN_DISPATCH };

		err = build_dispatch(index, fresh, site->n_by_target, &item.entry);
		if (!err)
			err = plan_add(plan, item);
	}
	free(fresh);
	return err;
}

/*
 * A bit per site that some edge goes through (every trampoline and every
 * target a site dispatches to is an edge of it): the sites an epoch builds
 * code for, ahead (rt_prebuild_code) and in the stop (rt_plan_code), walked
 * in site order so that a function's trampolines lie together, as its code
 * does.  Most sites never made a call (gcc's cc1: 33,000 of 451,000);
 * walking all of them touched 112 MB of records per epoch, holding the
 * lock, and took 2 ms of each 20 ms stop.  Roots' edges have no site of
 * the table.  NULL on ENOMEM; *words is its length.
 */
static uint64_t *mark_sites_of_edges(size_t *words)
{
	uint64_t *marks;

	*words = rt.graph->n_sites / 64 + 1;
	marks = calloc(*words, sizeof(*marks));
	if (!marks)
		return NULL;
	for (uint32_t e = 0; e < rt.graph->n_edges; e++) {
		uint32_t i = rt.graph->edges[e].site;

		if (i < rt.graph->n_sites)
			marks[i / 64] |= (uint64_t)1 << (i % 64);
	}
	return marks;
}

/* The first marked bit at from or after, or words * 64. */
static size_t next_marked(const uint64_t *marks, size_t words, size_t from)
{
	for (size_t w = from / 64; w < words; w++) {
		uint64_t bits = marks[w] & (w == from / 64 ? ~(uint64_t)0 << (from % 64) : ~(uint64_t)0);

		if (bits)
			return w * 64 + (size_t)__builtin_ctzll(bits);
	}
	return words * 64;
}

int rt_plan_code(struct rt_code_plan **out)
{
	struct rt_code_plan *plan = calloc(1, sizeof(*plan));
	size_t words = 0;
	uint64_t *marks = plan ? mark_sites_of_edges(&words) : NULL;
	int err = 0;

	if (!plan || !marks) {
		free(plan);
		free(marks);
		return -ENOMEM;
	}
	for (size_t i = next_marked(marks, words, 0);
	     !err && i < rt.graph->n_sites && i < rt.cap_sites; i = next_marked(marks, words, i + 1))
		if (rt.sites[i].scan.addr)
			err = plan_site(plan, (uint32_t)i);
	free(marks);
	if (err) {
		rt_plan_free(plan);
		return err;
	}
	*out = plan;
	return 0;
}

/* Sites whose code is built ahead per hold of the lock: short holds, so first calls go on. */
#define PREBUILD_SITES 256

static int prebuild_edge(const struct dacce_dict *next, uint32_t index, uint32_t edge,
			 uintptr_t target, uintptr_t old_entry, const struct dacce_rt_op *old_op)
{
	struct dacce_prebuilt code = { .edge = edge, .target = target }, ready;
	struct dacce_rt_op op;
	int err = op_for_edge_in(next, edge, &op);

	/* Built already for an attempt put off (epoch.c keeps it for the next one). */
	if (err || !old_entry || dacce_rt_op_same_code(&op, old_op) ||
	    dacce_prebuilt_take(old_entry, edge, target, &op, &ready))
		return err;
	err = build_trampoline_with(index, edge, target, old_entry, &op, &code.entry, &code.after,
				    &code.op);
	return err ? err : dacce_prebuilt_put(old_entry, &code);
}

static int prebuild_site(const struct dacce_dict *next, uint32_t index)
{
	const struct rt_site *site = &rt.sites[index];
	int err = 0;

	if (!site->scan.addr || site->native)
		return 0;
	if (site->tramp)
		return prebuild_edge(next, index, site->edge,
				     calls_through_slot(site) ? 0 : site->scan.target, site->tramp,
				     &site->op);
	for (uint32_t i = 0; i < site->n_by_target && !err; i++) {
		site = &rt.sites[index];
		err = prebuild_edge(next, index, site->by_target[i].edge, site->by_target[i].target,
				    site->by_target[i].tramp, &site->by_target[i].op);
	}
	return err;
}

int rt_prebuild_code(const struct dacce_dict *next)
{
	uint64_t *marks = NULL;
	size_t words = 0, index = 0;
	sigset_t saved;
	int err = 0;

	for (bool more = true; more && !err;) {
		rt_lock(&saved);
		/*
		 * Not while a dlclose is under way (as reencode_stopped): building a
		 * call's code reads its target's bytes (a PLT entry's), and the module
		 * being closed may be unmapped at any moment between two holds of
		 * the lock.  dlunload.c's policy thread died there now and then.
		 * What is not built ahead is built in the epoch, if it goes in.
		 */
		if (rt.loader_busy) {
			rt_unlock(&saved);
			break;
		}
		/* Edges found from here on get their code in the epoch. */
		if (!marks) {
			marks = mark_sites_of_edges(&words);
			if (!marks) {
				rt_unlock(&saved);
				err = -ENOMEM;
				break;
			}
		}
		/*
		 * In site order, a function's sites together as their code was.  A
		 * program thread waiting (for a first call) ends the hold early;
		 * one site at least each time, so threads that always wait do not
		 * keep the epoch from being built.
		 */
		for (uint32_t n = 0; n < PREBUILD_SITES && !err &&
				     (n == 0 || !dacce_lock_waited_for(&rt.lock));
		     n++) {
			index = next_marked(marks, words, index);
			if (index >= rt.graph->n_sites || index >= rt.cap_sites)
				break;
			err = prebuild_site(next, (uint32_t)index++);
		}
		more = next_marked(marks, words, index) < words * 64 &&
		       index < rt.graph->n_sites && index < rt.cap_sites;
		rt_unlock(&saved);
	}
	free(marks);
	/* Copies of functions for next's operations, once the sites' code is ready (relocated.h). */
	return err ? err : rt_relocate_prebuild(next, op_for_edge_in);
}

void rt_prebuilt_drop(void)
{
	sigset_t saved;

	rt_lock(&saved);
	dacce_prebuilt_drop();
	rt_unlock(&saved);
}

/* The old return point jumps to the new one: frames entered through old code return through it. */
static int forward_return(uintptr_t old_after, uintptr_t new_after)
{
	uint8_t *write = dacce_codecache_writable(&rt.cache, old_after);
	uint8_t jmp[5];
	int err;

	if (!old_after)
		return 0;
	if (!write)
		return -EFAULT;
	err = dacce_tramp_jmp_bytes(old_after, new_after, jmp);
	if (!err)
		memcpy(write, jmp, sizeof(jmp));
	return err;
}

/*
 * A site whose edge costs something, or may in a later epoch, goes through
 * its trampoline: a frame entered by the original call returns straight to
 * the caller, where no code of ours could undo a later epoch's operation for
 * it.  (Free edges of direct calls get the original call back once the
 * encoder promises to keep them free: rt_restore_native_calls.)
 */
static int point_site(struct dacce_patch_runs *writes, const struct rt_site *site, uintptr_t dest)
{
	uint8_t jmp[5];
	int err;

	err = dacce_tramp_jmp_bytes(site->scan.addr, dest, jmp);
	return err ? err : dacce_patch_runs_add(writes, site->scan.addr, jmp, sizeof(jmp));
}

/*
 * A direct `call rel32` of the program whose trampoline does nothing, or a
 * call through the PLT or a GOT slot (`call foo@plt`, `call *foo@GOTPCREL`):
 * the only kinds whose original bytes run as well as the trampoline (a short
 * site's or a dispatched one's code does more than its call).  A PLT call's
 * trampoline calls through the slot too, so the original call reaches what
 * it reached.  libsqlite3 calls its own exported functions that way
 * (sqlite3_mutex_enter, sqlite3_free), as does any library built without
 * -fvisibility or -Bsymbolic.
 */
static bool may_call_natively(const struct rt_site *site)
{
	return site->scan.addr && !site->native && site->tramp &&
	       (site->scan.kind == DACCE_SITE_DIRECT || site->scan.kind == DACCE_SITE_PLT) &&
	       site_is_patchable(&site->scan, site->original) && !site->trapped &&
	       !site->dispatched && !site->borrowed && !site->promoted;
}

/*
 * Whether a PLT or GOT call still reaches the callee its edge names (its
 * slot is read at each call, as the trampoline reads it): a slot the program
 * rewrote since keeps the trampoline, whose calls then stay as wrong as
 * before, but no call is given back on a name that no longer holds.
 */
static bool site_reaches(const struct rt_site *site, uint32_t callee)
{
	const struct dacce_node *n = &rt.graph->nodes[callee];
	const struct rt_module *m;
	uintptr_t to;

	if (site->scan.kind != DACCE_SITE_PLT)
		return true;
	to = calls_through_slot(site) ? *(const uintptr_t *)site->scan.slot
				      : plt_callee(site->scan.target);
	m = to ? rt_module_at(to) : NULL;
	return m && !m->closed && n->module == m->graph_module && n->offset == to - m->info->bias;
}

uint64_t rt_edge_calls_seen(uint32_t e)
{
	uint64_t hits = e < RT_MAX_COUNTED_EDGES && rt.edge_hits ? rt.edge_hits[e] : 0;

	return hits > rt.graph->edges[e].freq ? hits : rt.graph->edges[e].freq;
}

/* Per node, the calls of the busiest tail call into it (0 where none enters), or NULL. */
static uint64_t *tail_calls_into(void)
{
	uint64_t *busiest = calloc(rt.graph->n_nodes ? rt.graph->n_nodes : 1, sizeof(*busiest));

	if (!busiest)
		return NULL;
	for (uint32_t e = 0; e < rt.graph->n_edges; e++) {
		const struct dacce_edge *edge = &rt.graph->edges[e];
		uint64_t calls;

		if (!dacce_site_kind_is_tail(edge->kind) || edge->callee >= rt.graph->n_nodes)
			continue;
		/* A tail call never counted still counts as one: it exists. */
		calls = rt_edge_calls_seen(e);
		calls = calls ? calls : 1;
		if (calls > busiest[edge->callee])
			busiest[edge->callee] = calls;
	}
	return busiest;
}

bool rt_tail_calls_cold(uint64_t **tail_calls, uint32_t node, uint64_t calls)
{
	uint32_t tail_edge;

	if (dacce_hashmap_get(&rt.tail_called, node, &tail_edge) != 0)
		return true;
	if (!*tail_calls)
		*tail_calls = tail_calls_into();
	return *tail_calls && node < rt.graph->n_nodes &&
	       (*tail_calls)[node] <= calls / TAIL_COLD_RATIO;
}

uint32_t rt_given_back_into(uint32_t node)
{
	uint32_t edge;

	return dacce_hashmap_get(&rt.kept_free_into, node, &edge) == 0 ? edge : DACCE_NONE;
}

/* The site of a given-back call's edge, or NULL. */
static struct rt_site *given_back_site(uint32_t edge)
{
	uint32_t i = edge < rt.graph->n_edges ? rt.graph->edges[edge].site : UINT32_MAX;
	struct rt_site *site = i < rt.graph->n_sites && i < rt.cap_sites ? &rt.sites[i] : NULL;

	return site && site->edge == edge ? site : NULL;
}

int rt_take_back_call(uint32_t edge)
{
	struct rt_site *site = given_back_site(edge);
	int err;

	if (!site || !site->native || rt_given_back_into(rt.graph->edges[edge].callee) != edge)
		return -ENOENT;
	err = dacce_hashmap_remove(&rt.kept_free_into, rt.graph->edges[edge].callee);
	if (!err)
		err = dacce_graph_unkeep_free_edge(rt.graph, edge);
	if (err)
		return err;
	site->native = false; /* the next epoch's plan points it at code of the runtime's */
	return 0;
}

void rt_give_back_again(uint32_t edge)
{
	struct rt_site *site = given_back_site(edge);

	if (!site || site->native)
		return;
	/* The put back cannot fail for want of memory: the entry was removed, the slot is there. */
	(void)dacce_hashmap_put(&rt.kept_free_into, rt.graph->edges[edge].callee, edge);
	(void)dacce_graph_keep_free_edge(rt.graph, edge);
	site->native = true;
}

/* Counted GIVE_BACK_CALLS times while encoded (take_frequencies in epoch.c). */
static bool edge_proven_hot(uint32_t e)
{
	return e < RT_MAX_COUNTED_EDGES && rt.edge_counts &&
	       rt.edge_counts[e].encoded >= GIVE_BACK_CALLS;
}

/*
 * With the world stopped, after the epoch's code is in place: every direct
 * call whose edge the new epoch encodes at 0 runs the program's own call
 * from now on, and its edge is marked free for good, which every later
 * encoding keeps (encode.c; it fails rather than break that).  Frames the
 * original call enters return to the caller directly, with nothing to undo
 * in any epoch; frames that entered through the trampoline still return
 * through its code, which no epoch changes again.  The call costs what it
 * costs natively: bash spent a fifth of its samples in call trampolines,
 * most of them free.
 */
static int restore_native_calls(struct dacce_patch_runs *writes)
{
	const struct dacce_dict *d = rt.dict;
	uint64_t *tail_calls = NULL;
	int err = 0;

	if (!rt.native_calls)
		return 0;
	/* A direct site's edge is the one it calls through: each such site is met once. */
	for (uint32_t e = 0; e < rt.graph->n_edges && !err; e++) {
		uint32_t i = rt.graph->edges[e].site;
		struct rt_site *site = i < rt.graph->n_sites && i < rt.cap_sites ? &rt.sites[i] : NULL;

		/*
		 * Into a function some tail call enters, only when those are cold
		 * beside it: a hot tail call is worth the free place more (epoch.c,
		 * hot_tail_edge), which takes the call back then.
		 */
		if (!site || site->edge != e || !may_call_natively(site) ||
		    site->op.kind != DACCE_RT_OP_NONE || e >= d->n_edges ||
		    d->edge_class[e] != DACCE_EDGE_ENCODED || d->en[e] != 0 ||
		    (rt.graph->edges[e].flags & (DACCE_EDGE_PINNED | DACCE_EDGE_LEAF)) ||
		    !edge_proven_hot(e) ||
		    !rt_tail_calls_cold(&tail_calls, rt.graph->edges[e].callee,
					rt.edge_counts[e].encoded) ||
		    !site_reaches(site, rt.graph->edges[e].callee))
			continue;
		err = dacce_graph_keep_free_edge(rt.graph, e);
		if (!err)
			err = dacce_hashmap_put(&rt.kept_free_into, rt.graph->edges[e].callee, e);
		if (!err)
			err = dacce_patch_runs_add(writes, site->scan.addr, site->original,
						   site->scan.len);
		if (!err) {
			site->native = true;
			rt.n_native_calls++;
		}
	}
	free(tail_calls);
	return err;
}

int rt_apply_code(struct rt_code_plan *plan, void (*moved)(uintptr_t from, uintptr_t to, void *ctx),
		  void *ctx)
{
	int mem = dacce_patch_mem_open();
	int err = mem < -1 ? mem : 0;
	struct dacce_patch_runs writes = { 0 };

	for (size_t i = 0; i < plan->n && !err; i++) {
		const struct planned *p = &plan->items[i];
		struct rt_site *site = &rt.sites[p->site];

		if (p->slot == PLAN_TRAMP) {
			err = forward_return(site->tramp_after, p->after);
			if (site->stub && site->tramp) {
				/* A thread parked in the stub goes on to the new code; nothing else enters it now. */
				moved(site->stub, p->entry, ctx);
				moved(site->stub + STUB_JMP, p->entry, ctx);
				forward_stub(site->stub, p->entry); /* out of reach: harmless, unused */
			}
			moved(site->tramp, p->entry, ctx);
			site->tramp = p->entry;
			site->tramp_after = p->after;
			site->op = p->op;
			set_edge_return(site->edge, p->entry, p->after);
			if (!err)
				err = point_site(&writes, site, p->entry);
		} else if (p->slot == PLAN_DISPATCH) {
			moved(site->dispatch, p->entry, ctx);
			site->dispatch = p->entry;
			if (site->borrowed)
				set_landing(site, p->entry);
			else
				err = point_site(&writes, site, p->entry);
		} else {
			struct branch_tramp *t = &site->by_target[p->slot];

			uint8_t rel[4];

			err = forward_return(t->after, p->after);
			moved(t->tramp, p->entry, ctx);
			t->tramp = p->entry;
			t->after = p->after;
			t->op = p->op;
			set_edge_return(t->edge, p->entry, p->after);
			if (site->table && dacce_lookup_get(site->table, t->target))
				dacce_lookup_set(site->table, t->target, p->entry);
			if (!err && site->promoted)
				err = jcc_rel32(site, p->entry, rel);
			if (!err && site->promoted)
				err = dacce_patch_runs_add(&writes, site->scan.addr + 2, rel,
							   sizeof(rel));
		}
	}
	if (!err)
		err = restore_native_calls(&writes);
	if (!err)
		err = rt_relocate_epoch(&writes, moved, ctx);
	/* The world is stopped: the sites change together, in runs of nearby ones. */
	if (!err)
		err = dacce_patch_runs_write(&writes, mem);
	dacce_patch_runs_fini(&writes);
	if (mem >= 0)
		close(mem);
	return err;
}

/* ------------------------------------------------------------------ threads */

int dacce_rt_root_edge(int root_kind, uintptr_t fn, uint32_t *edge)
{
	const struct dacce_func *f;
	uint32_t node, before;
	sigset_t saved;
	int err;

	rt_lock(&saved);
	err = node_at(fn, &node, &f);
	if (!err && f)
		err = decode_function(f, node);
	before = rt.graph->n_edges;
	if (!err)
		err = dacce_graph_add_root_edge(rt.graph, (enum dacce_root_site)root_kind, node, edge);
	/* A root in code we leave alone: what it calls back is partial, never encoded. */
	if (!err && !f)
		err = dacce_graph_pin_edge(rt.graph, *edge);
	if (!err && *edge >= before)
		announce_edge(*edge);
	rt_unlock(&saved);
	return err;
}

/* machine.h's thread start on the thread's stacks: an empty state, then the root edge's "before". */
static int begin_root(struct dacce_tls *tls, uint32_t root_edge)
{
	struct dacce_rt_op op;
	sigset_t saved;
	int err;

	rt_lock(&saved);
	err = dacce_rt_op_for_edge(rt.dict, rt.graph, root_edge, &op);
	if (!err) {
		tls->epoch = rt.dict->epoch;
		tls->reset_id = rt.dict->max_id + 1;
		tls->cc_top = tls->cc_base;
		tls->tc_top = tls->tc_base;
		tls->id = 0;
		if (op.kind == DACCE_RT_OP_ADD) {
			tls->id = op.en;
		} else if (op.kind == DACCE_RT_OP_PUSH) {
			*tls->cc_top++ = (struct dacce_cc_entry){ .id = 0, .edge = root_edge, .aux = 0 };
			tls->id = op.reset_id;
		}
		DACCE_PROBE(thread, root_edge);
	}
	rt_unlock(&saved);
	return err;
}

int dacce_rt_thread_begin(uint32_t root_edge)
{
	struct dacce_tls *tls = dacce_tls_self();
	int err;

	dacce_runtime_enter();
	/* Registered before its context exists: no re-encoding can miss it. */
	dacce_thread_register();
	err = dacce_thread_stacks_get(tls);
	if (!err)
		err = begin_root(tls, root_edge);
	dacce_runtime_leave();
	return err;
}

int dacce_rt_context_begin(uint32_t root_edge)
{
	struct dacce_tls *tls = dacce_tls_self();

	return tls->cc_base && tls->tc_base ? begin_root(tls, root_edge) : -EINVAL;
}

void dacce_rt_thread_outside(void)
{
	struct dacce_tls *tls = dacce_tls_self();

	/* Outside already (pthread_exit, then its forced unwinding: cancel.h). */
	if (!tls->cc_base ||
	    (tls->cc_top > tls->cc_base && tls->cc_top[-1].edge == OUTSIDE_EDGE))
		return;
	dacce_runtime_enter();
	*tls->cc_top = (struct dacce_cc_entry){ .id = tls->id, .edge = OUTSIDE_EDGE, .aux = 0 };
	tls->cc_top++;
	dacce_runtime_leave();
}

bool dacce_rt_thread_inside_again(void)
{
	struct dacce_tls *tls = dacce_tls_self();

	if (!tls->cc_base || tls->cc_top == tls->cc_base || tls->cc_top[-1].edge != OUTSIDE_EDGE)
		return false;
	dacce_runtime_enter();
	tls->id = tls->cc_top[-1].id;
	tls->cc_top--;
	dacce_runtime_leave();
	return true;
}

/*
 * Whether the code that called a runtime entry point, returning to ret, is
 * the call the thread's context ends with: the call through the top entry's
 * edge, whose code pushed that entry just before calling us (calls out of
 * the program are always pushed), or a tail jump's, returning through the
 * tail stub.  Code the runtime never instrumented (a callback nobody
 * decoded, a library) calls us with the top entry still naming the
 * boundary call it was entered from: decoding that would name the wrong
 * caller, so its context is partial.
 */
static bool called_through_top(const struct dacce_tls *tls, uintptr_t ret)
{
	uint32_t edge;

	if (tls->cc_top == tls->cc_base)
		return false;
	edge = tls->cc_top[-1].edge;
	if (edge < RT_MAX_COUNTED_EDGES &&
	    __atomic_load_n(&rt.edge_returns[edge], __ATOMIC_ACQUIRE) == ret)
		return true;
	/* A tail call that called on returns to its trampoline's return point (tail.h). */
	return edge < RT_MAX_COUNTED_EDGES &&
	       __atomic_load_n(&rt.edge_tail_returns[edge], __ATOMIC_ACQUIRE) == ret;
}

/* Marks are also found by where their setjmp returns: the return address and the stack pointer. */
static uint64_t return_key(uintptr_t ret, uintptr_t sp)
{
	return sp ^ dacce_hash64(ret);
}

/*
 * Where setjmp returns instead of ret: `test %eax, %eax`, straight on to
 * ret when it is 0 (the first return), else to the runtime's landing with
 * ret in %r11 (a longjmp came back, maybe glibc's own, which the runtime
 * does not see: the landing rewinds the context first).  One per return
 * point, built on first use.
 */
/*
 * Tells tracers that generated code starts at entry that stands for no call
 * site: a stack walker meeting its address stops there instead of taking it
 * for the end of the site code before it.
 */
static void announce_code_of_no_site(uintptr_t entry, uint32_t kind)
{
	dacce_entry_note(entry, kind, 0);
}

/*
 * getcontext's thunk goes to the landing on every return: setcontext makes
 * it return 0 again.  The first return finds the mark just taken, the
 * state it still has.  Its key in the thunk caches is tagged apart.
 */
#define CONTEXT_THUNK_TAG (1ull << 63)

static int setjmp_thunk(uintptr_t ret, bool context, uintptr_t *thunk)
{
	static const uint8_t test_eax[] = { 0x85, 0xc0 };
	uint64_t key = context ? ret | CONTEXT_THUNK_TAG : ret;
	uint32_t index;
	struct x86_buf b;
	x86_label again;
	uint8_t *write;
	int err;

	if (dacce_hashmap_get(&rt.thunk_at, key, &index) == 0) {
		*thunk = rt.thunks[index];
		return 0;
	}
	if (rt.n_thunks == rt.cap_thunks) {
		uint32_t cap = rt.cap_thunks ? rt.cap_thunks * 2 : 16;
		uintptr_t *grown = realloc(rt.thunks, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		rt.thunks = grown;
		rt.cap_thunks = cap;
	}
	err = dacce_codecache_alloc(&rt.cache, ret, ret + 1, SETJMP_THUNK_LEN, 16, thunk, &write);
	if (err)
		return err;
	x86_init(&b, write, SETJMP_THUNK_LEN, *thunk);
	x86_trap(&b); /* a byte before it, for debuggers (see build_tail_stub) */
	*thunk = b.addr + b.len;
	x86_endbr64(&b); /* longjmp enters by an indirect jump */
	if (!context) {
		x86_bytes(&b, test_eax, sizeof(test_eax));
		again = x86_jcc_short(&b, X86_JNE);
		x86_jmp_abs_indirect(&b, ret);
		x86_bind(&b, again);
	}
	x86_movabs_r11(&b, ret);
	x86_jmp_abs_indirect(&b, (uintptr_t)dacce_setjmp_again);
	if (b.overflow)
		return -ENOSPC;
	/* In the slot of a return address: the frame is the caller's just after its call. */
	rt_code_returned_to("setjmp_return", b.addr, b.len, ret, ret - 1);
	/*
	 * It sits in the return-address slot of a setjmp call while libc's
	 * setjmp runs.  Told from the trap byte before it: a stack walker looks a
	 * return address up one byte back, and found that byte in the code
	 * allocated just before, taking the thunk for a return into that code's
	 * call site (validate-programs, jmpsignals.c at -O0, now and then).
	 */
	announce_code_of_no_site(*thunk - 1, DACCE_CODE_NO_SITE);
	err = dacce_hashmap_put(&rt.thunk_at, key, rt.n_thunks);
	if (!err)
		rt.thunks[rt.n_thunks++] = *thunk;
	return err;
}

/* The thunk this thread's setjmp (or getcontext) returning to ret went through before, or 0. */
static uintptr_t cached_thunk(const struct dacce_thread *self, uintptr_t ret, bool context)
{
	uint64_t key = context ? ret | CONTEXT_THUNK_TAG : ret;
	unsigned i = (unsigned)(dacce_hash64(key) % DACCE_THUNK_CACHE);

	return self->thunk_ret[i] == key ? self->thunk[i] : 0;
}

/*
 * Records mark for env, and by where setjmp returns when the call came
 * through the top entry (then setjmp returns through the thunk).  Without
 * may_grow nothing is allocated or built: -EAGAIN when that is needed
 * (a table full, a return point without a thunk yet), with nothing written.
 */
static int record_mark(struct dacce_thread *self, const void *env, uintptr_t *ret_slot,
		       struct jump_mark *mark, bool may_grow)
{
	uintptr_t ret = *ret_slot, sp = (uintptr_t)(ret_slot + 1);
	bool by_return = called_through_top(mark->thread, ret);
	uintptr_t thunk = by_return ? cached_thunk(self, ret, mark->context) : 0;
	int err;

	if (!may_grow && (!dacce_marks_have_room(&self->marks_at) ||
			  (by_return && (!thunk || !dacce_marks_have_room(&self->marks_by_return)))))
		return -EAGAIN;
	if (may_grow) {
		if (!dacce_marks_have_room(&self->marks_at) && (err = dacce_marks_grow(&self->marks_at)))
			return err;
		if (by_return && !thunk && setjmp_thunk(ret, mark->context, &thunk) == 0) {
			uint64_t key = mark->context ? ret | CONTEXT_THUNK_TAG : ret;
			unsigned i = (unsigned)(dacce_hash64(key) % DACCE_THUNK_CACHE);

			self->thunk_ret[i] = key;
			self->thunk[i] = thunk;
		}
		by_return = by_return && thunk &&
			    (dacce_marks_have_room(&self->marks_by_return) ||
			     dacce_marks_grow(&self->marks_by_return) == 0);
	}
	err = dacce_marks_put(&self->marks_at, (uintptr_t)env, mark);
	/*
	 * Called by instrumented code: setjmp returns through a thunk, so that
	 * a jump the runtime does not interpose (glibc's to a cleanup handler of
	 * pthread_exit or a cancellation) rewinds the context too.  That mark
	 * is kept apart, by where the jump lands: programs copy jmp_bufs (bash
	 * saves and restores its top level one), and the mark of env may then
	 * be another setjmp's.
	 */
	if (!err && by_return) {
		mark->ret = ret;
		mark->sp = sp;
		if (dacce_marks_put(&self->marks_by_return, return_key(ret, sp), mark) == 0)
			*ret_slot = thunk;
	}
	return err;
}

/*
 * No lock, no signal blocked: the thread's own tables (marks.h).  A program
 * handler for a signal arriving meanwhile is put off until the mark is
 * written (signals.c).  Only a full table or a return point without its
 * thunk takes the runtime's lock, once.
 */
void dacce_rt_mark_save(const void *env, uintptr_t *ret_slot, bool context)
{
	struct dacce_tls *tls = dacce_tls_self();
	struct dacce_thread *self = dacce_thread_self();
	struct jump_mark mark;
	sigset_t saved;
	int err;

	if (!rt.enabled || !tls->cc_base)
		return;
	mark = (struct jump_mark){
		.thread = tls,
		.id = tls->id,
		.cc_depth = (uint32_t)(tls->cc_top - tls->cc_base),
		.top = tls->cc_top > tls->cc_base ? tls->cc_top[-1] : (struct dacce_cc_entry){ 0 },
		.tc_depth = (uint32_t)(tls->tc_top - tls->tc_base),
		.handlers_over_code = self->handlers_over_code,
		.caller_sp = (uintptr_t)(ret_slot + 1),
		.context = context,
	};
	dacce_runtime_enter();
	if (self->marking) {
		/* A handler that could not wait, inside a mark being written: trust none. */
		self->marks_lost = true;
		goto leave;
	}
	self->marking = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (self->marks_lost) {
		dacce_marks_clear(&self->marks_at);
		dacce_marks_clear(&self->marks_by_return);
		self->marks_lost = false;
	}
	err = record_mark(self, env, ret_slot, &mark, false);
	atomic_signal_fence(memory_order_seq_cst);
	self->marking = 0;
	atomic_signal_fence(memory_order_seq_cst);
	dacce_thread_release_deferred(self);
	if (err == -EAGAIN) {
		/* Signals blocked: growing allocates, and a handler may call setjmp too. */
		rt_lock(&saved);
		record_mark(self, env, ret_slot, &mark, true);
		rt_unlock(&saved);
	}
leave:
	dacce_runtime_leave();
}

/*
 * The thread's mark under key in marks, copied, or false.  A jump made by
 * a handler that interrupted a mark being written (one that could not
 * wait) finds none, and leaves that writing behind for good.
 */
static bool find_mark(struct dacce_thread *self, struct dacce_marks *marks, uint64_t key,
		      struct jump_mark *out)
{
	const struct jump_mark *found;

	if (self->marking) {
		self->marking = 0;
		self->marks_lost = true;
	}
	if (self->marks_lost || !(found = dacce_marks_find(marks, key)))
		return false;
	*out = *found;
	return true;
}

/* Back to mark, when it is this thread's and outward from here; else the context is partial. */
static void rewind_to(struct dacce_tls *tls, bool found, const struct jump_mark *mark)
{
	if (!found || mark->thread != tls ||
	    mark->cc_depth > (uint32_t)(tls->cc_top - tls->cc_base) ||
	    mark->tc_depth > (uint32_t)(tls->tc_top - tls->tc_base)) {
		/* Partial from here on: handlers it may have left cannot spoil it further. */
		dacce_thread_self()->handlers_over_code = 0;
		dacce_rt_thread_outside();
		return;
	}
	tls->id = mark->id;
	/* A jump out of handlers leaves them: as many as when setjmp ran are still running. */
	dacce_thread_self()->handlers_over_code = mark->handlers_over_code;
	tls->cc_top = tls->cc_base + mark->cc_depth;
	if (mark->cc_depth)
		tls->cc_top[-1] = mark->top; /* the slot may hold a later call's entry by now */
	tls->tc_top = tls->tc_base + mark->tc_depth;
}

void dacce_rt_mark_rewind(const void *env)
{
	struct dacce_tls *tls = dacce_tls_self();
	struct dacce_thread *self = dacce_thread_self();
	struct jump_mark mark = { 0 };
	bool found;

	if (!rt.enabled || !tls->cc_base)
		return;
	dacce_runtime_enter();
	found = find_mark(self, &self->marks_at, (uintptr_t)env, &mark);
	rewind_to(tls, found, &mark);
	dacce_runtime_leave();
}

bool dacce_rt_context_rewind(const void *ucp, uintptr_t saved_sp, uintptr_t jump_sp)
{
	struct dacce_tls *tls = dacce_tls_self();
	struct dacce_thread *self = dacce_thread_self();
	struct jump_mark mark = { 0 };
	bool found;

	if (!rt.enabled || !tls->cc_base)
		return false;
	dacce_runtime_enter();
	found = find_mark(self, &self->marks_at, (uintptr_t)ucp, &mark) && mark.context &&
		mark.caller_sp == saved_sp;
	if (found) {
		/* Before the rewind: from here the context is the landing's, the frames not yet. */
		__atomic_store_n(&tls->jump_sp, (uint64_t)jump_sp, __ATOMIC_RELAXED);
		atomic_signal_fence(memory_order_seq_cst);
		rewind_to(tls, true, &mark);
	}
	dacce_runtime_leave();
	return found;
}

uintptr_t dacce_rt_setjmp_again(uintptr_t ret, uintptr_t sp)
{
	struct dacce_tls *tls = dacce_tls_self();
	struct dacce_thread *self = dacce_thread_self();
	struct jump_mark mark = { 0 };
	int saved_errno = errno;
	bool found;

	if (!rt.enabled || !tls->cc_base)
		return ret;
	dacce_runtime_enter();
	tls->jump_sp = 0; /* landed */
	found = find_mark(self, &self->marks_by_return, return_key(ret, sp), &mark);
	/* The table is by hash: the latest setjmp here, or another one's. */
	rewind_to(tls, found && mark.ret == ret && mark.sp == sp, &mark);
	errno = saved_errno; /* before leaving runtime code: __errno_location is libc's */
	dacce_runtime_leave();
	return ret;
}

/* Whether node is a function of an instrumented module we decoded (not a boundary). */
static bool node_is_decoded(uint32_t node)
{
	const struct dacce_node *n = &rt.graph->nodes[node];
	uint32_t known;

	for (size_t i = 0; i < rt.n_mods; i++)
		if (n->module == rt.mods[i].graph_module)
			return dacce_hashmap_get(&rt.decoded, rt.mods[i].info->bias + n->offset,
						 &known) == 0;
	return false;
}

bool rt_entry_is_current(uintptr_t pc)
{
	const struct rt_site *s;
	uint32_t site;

	if (!dacce_codecache_contains(&rt.cache, pc) || stub_site_at(pc, &site))
		return true;
	if (dacce_hashmap_get(&rt.entry_site, pc, &site) != 0 || site >= rt.cap_sites)
		return true;
	s = &rt.sites[site];
	if (pc == s->tramp || pc == s->dispatch || pc == s->landing)
		return true;
	for (uint32_t i = 0; i < s->n_by_target; i++)
		if (pc == s->by_target[i].tramp)
			return true;
	return false;
}

/*
 * Where a thread at pc in generated code would be natively, when pc is the
 * entry of a site's first-call stub (or its jump) or of its trampoline: at
 * the site, nothing of the call or jump done yet.  0 for any other pc (a
 * borrowed site's landing and dispatch code run the borrowed instructions
 * first), whose native place is not claimed known.
 */
static uintptr_t native_pc_at_entry(uintptr_t pc)
{
	const struct rt_site *s;
	uint32_t index;

	if (stub_site_at(pc, &index))
		return rt.sites[index].scan.addr;
	if (dacce_hashmap_get(&rt.entry_site, pc, &index) != 0 || index >= rt.cap_sites)
		return 0;
	s = &rt.sites[index];
	return s->tramp && pc == s->tramp ? s->scan.addr : 0;
}

uint32_t rt_node_at(const struct dacce_tls *tls, uintptr_t pc)
{
	const struct rt_module *m = rt_module_at(pc);
	const struct dacce_func *f;
	struct dacce_edge_view top;
	uint32_t node, site;

	if (dacce_codecache_contains(&rt.cache, pc)) {
		uintptr_t original;

		/* In a function's copy: where it is in the original, unless inside an inline operation. */
		if (rt_relocated_at(pc, &original, &node))
			return original ? node : DACCE_NONE;
		/* On the entry of a site's code the thread has not left the site's function yet. */
		if ((dacce_hashmap_get(&rt.entry_site, pc, &site) == 0 || stub_site_at(pc, &site)) &&
		    site < rt.graph->n_sites)
			return rt.graph->sites[site].caller;
		return DACCE_NONE;
	}
	if (m && !dacce_funcs_in_plt(&m->funcs, pc)) {
		/* A hop in the padding (padding.h) is on its way from a site of its function. */
		if (dacce_hashmap_get(&rt.entry_site, pc, &site) == 0 && site < rt.graph->n_sites)
			return rt.graph->sites[site].caller;
		f = dacce_funcs_find(&m->funcs, pc);
		if (f && dacce_hashmap_get(&rt.decoded, f->start, &node) == 0)
			return node;
		return DACCE_NONE;
	}
	/*
	 * In a library: the state is that of the call out on top, when one was
	 * just pushed (id = maxID + 1); otherwise the thread is inside a leaf
	 * call, whose id is in the leaf id space (leaves.h).
	 */
	if (tls->cc_top > tls->cc_base && tls->id == tls->reset_id &&
	    dacce_dict_edge(rt.dict, rt.graph, tls->cc_top[-1].edge, &top) == 0 &&
	    top.callee < rt.graph->n_nodes && !node_is_decoded(top.callee))
		return top.callee;
	return rt.dict->n_leaf_range ? DACCE_IN_LEAF : DACCE_NONE;
}

_Static_assert(sizeof(((struct dacce_rt_signal_save *)0)->tc_slot) ==
		       sizeof(struct dacce_rt_tail_record), "a tail record fits the save");

/* Records where the handler whose root goes at cc_index interrupted the thread. */
static void note_handler_pc(struct dacce_thread *self, uint32_t cc_index, uintptr_t pc,
			    uintptr_t restorer)
{
	while (self->n_handler_pcs > 0 &&
	       self->handler_pcs[self->n_handler_pcs - 1].cc_index >= cc_index)
		self->n_handler_pcs--;
	if (self->n_handler_pcs < DACCE_HANDLER_PCS)
		self->handler_pcs[self->n_handler_pcs++] = (struct dacce_handler_pc){
			.cc_index = cc_index, .pc = pc, .restorer = restorer,
		};
}

int dacce_rt_signal_enter(uint32_t root_edge, uintptr_t *interrupted, uintptr_t restorer,
			  struct dacce_rt_signal_save *save)
{
	struct dacce_tls *tls = dacce_tls_self();
	uintptr_t pc = *interrupted, original;
	uint32_t node;
	sigset_t saved;

	if (!rt.enabled || !tls->cc_base)
		return 0;
	rt_lock(&saved);
	if (rt_relocated_at(pc, &original, &node) && original)
		*interrupted = pc = original;
	save->cc_slot = *tls->cc_top;
	memcpy(save->tc_slot, tls->tc_top, sizeof(save->tc_slot));
	/*
	 * A longjmp the handler interrupted (siglongjmp delivers pending signals
	 * when it restores the mask) is still under way when the handler returns,
	 * whatever jumps the handler makes and lands itself.
	 */
	save->jump_sp = tls->jump_sp;
	/*
	 * Half way through generated code, or on its entry: an epoch would not
	 * move this pc to the new code as it moves a parked thread's, and the
	 * old code would carry out the old operations (a push the new return
	 * path does not pop).
	 */
	save->over_code = dacce_codecache_contains(&rt.cache, pc);
	if (save->over_code)
		dacce_thread_self()->handlers_over_code++;
	note_handler_pc(dacce_thread_self(), (uint32_t)(tls->cc_top - tls->cc_base), pc, restorer);
	/* machine.h's nested root: push <id, edge, interrupted node>, id = maxID + 1. */
	*tls->cc_top = (struct dacce_cc_entry){
		.id = tls->id, .edge = root_edge, .aux = rt_node_at(tls, pc),
	};
	tls->cc_top++;
	tls->id = rt.dict->max_id + 1;
	rt_unlock(&saved);
	return 1;
}

void dacce_rt_signal_leave(uint32_t root_edge, const struct dacce_rt_signal_save *save)
{
	struct dacce_tls *tls = dacce_tls_self();

	dacce_runtime_enter();
	if (save->over_code)
		dacce_thread_self()->handlers_over_code--;
	if (tls->cc_top > tls->cc_base && tls->cc_top[-1].edge == root_edge) {
		tls->cc_top--;
		tls->id = tls->cc_top->id;
		/* What the interrupted code may have written there, not yet published. */
		*tls->cc_top = save->cc_slot;
		memcpy(tls->tc_top, save->tc_slot, sizeof(save->tc_slot));
	}
	tls->jump_sp = save->jump_sp;
	dacce_runtime_leave();
}

void dacce_rt_thread_before_main(void)
{
	dacce_thread_register();
	dacce_rt_thread_partial();
}

void dacce_rt_thread_partial(void)
{
	struct dacce_tls *tls = dacce_tls_self();

	if (dacce_thread_stacks_get(tls))
		return;
	tls->cc_top = tls->cc_base;
	tls->tc_top = tls->tc_base;
	tls->id = 0;
	tls->epoch = rt.dict->epoch;
	tls->reset_id = rt.dict->max_id + 1;
	dacce_rt_thread_outside();
}

void dacce_rt_thread_end(void)
{
	struct dacce_tls *tls = dacce_tls_self();

	/*
	 * Runtime work from here on, for good: the thread's frames are gone (it
	 * returned, or it was unwound by cancellation or pthread_exit), so its
	 * context names none of them, and a sampler must not decode it again.
	 */
	tls->runtime_depth++;
	/* Out of the registry first: nobody stops or translates it after this. */
	dacce_thread_unregister();
	dacce_patch_thread_exit();
	dacce_unwind_thread_end();
	dacce_epoch_nudge(); /* the last one out: the policy thread ends the process */
	if (!tls->cc_base)
		return;
	/*
	 * glibc may still run program code on this thread: C++ thread_local
	 * destructors, then pthread key and tss destructors.  Their calls push
	 * and pop on the same stacks, which stay with the TLS block
	 * (thread_stacks.c); freeing them here killed the thread at the first
	 * such call (tests/programs/c11threads.c).  Out of the registry, the
	 * thread is not translated by an epoch: a frame of theirs live across
	 * one returns through code that undoes the new epoch's operation, which
	 * may pop an entry it never pushed.  The ccStack starts above a cushion
	 * of entries for those pops to read, never below its mapping; what they
	 * read is never decoded (runtime_depth).
	 */
	tls->cc_top = tls->cc_base + ENDED_THREAD_CUSHION;
	tls->tc_top = tls->tc_base;
	tls->id = 0;
}

/* ------------------------------------------------------------------ backtrace */

/*
 * Below a handler's frames, glibc's backtrace() shows the signal trampoline
 * and the pc the signal interrupted (a fault's own instruction): so does the
 * thread's live context, from what its handlers recorded (threads.h).  The
 * roots are met from the top of the ccStack down, as the decoder pops them;
 * *cursor is the index below which to look for the next one.  -ENODATA when
 * the pc lies in generated code where its native place is not known.
 */
static int handler_frames(const struct dacce_dict *dict, const struct dacce_thread *self,
			  const struct dacce_snapshot *snap, uint32_t *cursor, void **buffer,
			  int count, int size)
{
	while (*cursor > 0) {
		struct dacce_edge_view v;
		uint32_t at = --*cursor;

		if (dacce_dict_edge(dict, rt.graph, snap->cc[at].edge, &v) ||
		    !dacce_site_kind_is_nested_root(v.kind))
			continue;
		for (uint32_t i = 0; i < self->n_handler_pcs; i++) {
			const struct dacce_handler_pc *h = &self->handler_pcs[i];
			uintptr_t pc = h->pc;

			if (h->cc_index != at)
				continue;
			/*
			 * In generated code the native place is known only on a site's
			 * entry: elsewhere no answer, rather than frames left out.
			 */
			if (dacce_codecache_contains(&rt.cache, pc) && !(pc = native_pc_at_entry(pc)))
				return -ENODATA;
			if (count < size)
				buffer[count++] = (void *)h->restorer;
			if (count < size)
				buffer[count++] = (void *)pc;
		}
		break;
	}
	return count;
}

/*
 * The return addresses of a snapshot in dict's epoch, innermost first.  A
 * snapshot taken in runtime code was reached through a boundary edge, always
 * pushed: its top entry names where it was.  With partial_ok, a snapshot
 * missing its outermost entries gives the frames decoded before they ran out.
 * With self (the thread's own live context), below each handler's frames
 * come the signal trampoline and the interrupted pc (handler_frames).
 */
static int return_addresses(const struct dacce_dict *dict, struct dacce_snapshot *snap,
			    const struct dacce_thread *self, bool partial_ok, void **buffer,
			    int size)
{
	struct dacce_decode_error why = { 0 };
	struct dacce_frame *frames;
	struct dacce_edge_view top;
	uint32_t cursor = snap->cc_depth;
	int n, count = 0;

	if (size <= 0)
		return 0;
	if (snap->cc_depth == 0 ||
	    dacce_dict_edge(dict, rt.graph, snap->cc[snap->cc_depth - 1].edge, &top))
		return -ENODATA;
	frames = calloc((size_t)size + 1, sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	snap->node = top.callee;
	n = dacce_decode(dict, rt.graph, snap, frames, (size_t)size + 1, &why);
	if (n == -E2BIG)
		n = size + 1;
	else if (n < 0 && partial_ok)
		n = (int)why.frames_done;
	if (n < 0) {
		free(frames);
		return -ENODATA;
	}
	/* Frame i was entered by a call at some site: its return address is after that site. */
	for (int i = 0; i < n && count < size; i++) {
		struct dacce_edge_view v;

		if (dacce_dict_edge(dict, rt.graph, frames[i].edge, &v))
			break;
		/* A signal handler's frame returns into the kernel's trampoline: none of ours. */
		if (dacce_site_kind_is_nested_root(v.kind)) {
			if (self)
				count = handler_frames(dict, self, snap, &cursor, buffer, count,
						       size);
			if (count < 0) {
				free(frames);
				return count;
			}
			continue;
		}
		if (dacce_site_kind_is_root(v.kind))
			break;
		if (v.site >= rt.cap_sites || !rt.sites[v.site].scan.addr)
			break;
		/* A tail call leaves no return address of its own. */
		if (dacce_site_kind_is_tail(v.kind))
			continue;
		buffer[count++] = (void *)(rt.sites[v.site].scan.addr + rt.sites[v.site].scan.len);
	}
	free(frames);
	return count;
}

int dacce_rt_backtrace(void **buffer, int size, uintptr_t ret)
{
	struct dacce_tls *tls = dacce_tls_self();
	struct dacce_snapshot snap;
	sigset_t saved;
	int n;

	if (!rt.enabled || !tls->cc_base)
		return -ENODATA;
	rt_lock(&saved);
	if (!called_through_top(tls, ret)) {
		rt_unlock(&saved);
		return -ENODATA;
	}
	snap = (struct dacce_snapshot){
		.epoch = tls->epoch, .id = tls->id,
		.cc_depth = (uint32_t)(tls->cc_top - tls->cc_base), .cc = tls->cc_base,
	};
	n = return_addresses(rt.dict, &snap, dacce_thread_self(), false, buffer, size);
	rt_unlock(&saved);
	return n;
}

_Static_assert(sizeof(struct dacce_context_entry) == sizeof(struct dacce_cc_entry) &&
		       offsetof(struct dacce_context_entry, edge) == offsetof(struct dacce_cc_entry, edge) &&
		       offsetof(struct dacce_context_entry, aux) == offsetof(struct dacce_cc_entry, aux),
	       "a snapshot's entries are ccStack entries");

int dacce_rt_context_get(struct dacce_context *ctx, uintptr_t ret)
{
	const struct dacce_tls *tls = dacce_tls_self();
	uint32_t depth, kept;

	if (!rt.enabled || !tls->cc_base)
		return -ENODATA;
	/* No lock: only a re-encoding changes the block under us, and it waits for runtime code. */
	dacce_runtime_enter();
	if (!called_through_top(tls, ret)) {
		dacce_runtime_leave();
		return -ENODATA;
	}
	depth = (uint32_t)(tls->cc_top - tls->cc_base);
	kept = depth < DACCE_CONTEXT_ENTRIES ? depth : DACCE_CONTEXT_ENTRIES;
	ctx->epoch = tls->epoch;
	ctx->id = tls->id;
	ctx->depth = depth;
	ctx->n_entries = kept;
	memcpy(ctx->entries, tls->cc_top - kept, kept * sizeof(*ctx->entries));
	dacce_runtime_leave();
	return 0;
}

int dacce_rt_context_decode(const struct dacce_context *ctx, void **buffer, int size)
{
	const struct dacce_dict *dict;
	struct dacce_snapshot snap;
	sigset_t saved;
	int n;

	if (!rt.enabled)
		return -ENOSYS;
	rt_lock(&saved);
	dict = dacce_epoch_dict(ctx->epoch);
	if (!dict || ctx->n_entries > DACCE_CONTEXT_ENTRIES || ctx->n_entries > ctx->depth) {
		rt_unlock(&saved);
		return -EINVAL;
	}
	snap = (struct dacce_snapshot){
		.epoch = ctx->epoch, .id = ctx->id, .cc_depth = ctx->n_entries,
		.cc = (const struct dacce_cc_entry *)ctx->entries,
	};
	n = return_addresses(dict, &snap, NULL, ctx->depth > ctx->n_entries, buffer, size);
	rt_unlock(&saved);
	return n;
}

/* ------------------------------------------------------------------ start */

static size_t entries_armed(void)
{
	size_t n = 0;

	for (size_t i = 0; i < rt.n_mods; i++)
		n += rt.mods[i].entries.n_armed;
	return n;
}

/* Scans made by this process, kept for the next runs (scan_cache.h). */
__attribute__((destructor)) static void save_scans(void)
{
	sigset_t saved;

	if (!rt.enabled)
		return;
	rt_lock(&saved);
	dacce_scan_cache_save();
	rt_unlock(&saved);
}

/* The summary DACCE_LOG asks for, when the process ends. */
__attribute__((destructor)) static void log_summary(void)
{
	char epochs[160];
	unsigned long long leaf_edges = 0;
	unsigned long scans_found, scans_made, tables_found;
	sigset_t saved;

	/* Not even counted unless asked for: the site table's untouched pages would fault in. */
	if (!rt.enabled || !rt.verbose)
		return;
	/* After a flush under way, and before any code the policy thread would make next. */
	rt_lock(&saved);
	rt.summary_written = true;
	rt_unlock(&saved);
	for (uint32_t e = 0; e < rt.graph->n_edges; e++)
		leaf_edges += (rt.graph->edges[e].flags & DACCE_EDGE_LEAF) != 0;
	dacce_epoch_summary(epochs, sizeof(epochs));
	dacce_rt_log(false,
		     "pid %d: %llu functions decoded, %llu sites patched, %llu trapped, %llu edges "
		     "(%llu leaf calls), %llu trampolines, %llu first calls, %llu new targets of dispatched calls, %llu traps taken, %llu hops, %llu dispatch reorderings, %llu switch jumps left alone, %llu direct calls given back (%llu taken back), %llu of %zu watched entries "
		     "reached from outside, %llu unwindings through %llu patched frames, "
		     "code cache %zu regions, %llu code entries told to a tracer",
		     (int)getpid(), (unsigned long long)rt.n_decoded,
		     (unsigned long long)rt.n_patched,
		     (unsigned long long)rt.n_trapped, (unsigned long long)rt.graph->n_edges,
		     leaf_edges, (unsigned long long)rt.n_trampolines, (unsigned long long)rt.n_first_calls,
		     (unsigned long long)rt.n_dispatch_misses, (unsigned long long)rt.n_traps, (unsigned long long)rt.n_hops,
		     (unsigned long long)rt.n_reorders, (unsigned long long)rt.n_jump_tables,
		     (unsigned long long)rt.n_native_calls,
		     (unsigned long long)rt.n_taken_back, (unsigned long long)rt.n_entry_traps, entries_armed(),
		     (unsigned long long)rt.n_unwinds, (unsigned long long)rt.n_frames_shown,
		     rt.cache.n, (unsigned long long)dacce_entry_notes_count());
	/* A line of its own: the one above fills dacce_rt_log's line. */
	dacce_rt_log(false, "pid %d: %s", (int)getpid(), epochs);
	dacce_scan_cache_counts(&scans_found, &scans_made, &tables_found);
	if (scans_found || scans_made)
		dacce_rt_log(false, "pid %d: %lu scans read from the cache, %lu made; %lu function tables read from it",
			     (int)getpid(), scans_found, scans_made, tables_found);
	rt_log_hot_traps();
}

/*
 * fork: no re-encoding in progress (the registry lock), no runtime state
 * half changed (rt.lock, with signals blocked as rt_lock does it).
 */
static sigset_t fork_saved_mask;

static void before_fork(void)
{
	sigset_t all;

	dacce_runtime_enter();
	dacce_threads_lock();
	dacce_signals_but_trap(&all);
	pthread_sigmask(SIG_BLOCK, &all, &fork_saved_mask);
	hold_lock();
	dacce_alloc_before_fork();
	dacce_perfmap_before_fork();
}

/*
 * Both sides move to copies of the code regions (shared mappings)
 * before either can write to them again: whatever one writes later (new
 * trampolines, a re-encoding's forwarded return points) must not change the
 * other's code.
 */
static void after_fork(bool child)
{
	int err, cancel_state;

	dacce_alloc_after_fork();
	err = dacce_codecache_unshare(&rt.cache);
	if (err)
		rt_fatal("keeping the code cache apart across fork", err);
	cancel_state = release_lock();
	if (child) {
		dacce_perfmap_after_fork_child();
		dacce_scan_cache_after_fork_child();
	}
	if (child)
		dacce_threads_after_fork(); /* the registry holds only this thread now */
	if (child)
		dacce_patch_sole_thread(true); /* the runtime's own threads never run program code */
	else
		dacce_threads_unlock();
	pthread_sigmask(SIG_SETMASK, &fork_saved_mask, NULL);
	dacce_runtime_leave();
	if (child)
		dacce_epoch_after_fork();
	pthread_setcancelstate(cancel_state, NULL);
}

static void in_parent_after_fork(void)
{
	after_fork(false);
}

static void in_child_after_fork(void)
{
	after_fork(true);
}

/* Why the program is left alone (-ENOTSUP from dacce_rt_start). */
static char refusal[200];

const char *dacce_rt_refusal(void)
{
	return refusal;
}

/* DACCE_LEAF_CALLS=0 keeps every call out pushed, as before leaf calls were encoded. */
static bool leaf_calls_wanted(void)
{
	const char *v = dacce_env("DACCE_LEAF_CALLS");

	return !v || strcmp(v, "0") != 0;
}

/*
 * Refuses a module whose exceptions would not pass through the runtime
 * (traits.h): rather than risk std::terminate or landing pads run without
 * their frames' contexts.
 */
static int refuse_unwinding(const struct rt_module *m)
{
	uintptr_t known[DACCE_UNWIND_PERSONALITIES], foreign;
	int err = dacce_module_has_own_unwinder(m->info);

	if (err > 0) {
		snprintf(refusal, sizeof(refusal), "it carries its own exception unwinder "
			 "(-static-libgcc), which the runtime cannot stand in front of");
		return -ENOTSUP;
	}
	if (dacce_module_foreign_personality(m->info, known, dacce_unwind_personalities(known),
					     m->funcs.plt, m->funcs.n_plt, &foreign) > 0) {
		snprintf(refusal, sizeof(refusal), "its exceptions unwind through a personality "
			 "routine of its own (at %#lx), whose landing pads the runtime cannot follow",
			 (unsigned long)foreign);
		return -ENOTSUP;
	}
	return 0;
}

/* Reads what instrumenting info takes: 0, or -ENOTSUP for a module to leave alone (refusal). */
static int open_module(const struct dacce_module_info *info, struct rt_module *m)
{
	size_t with_fde = 0;
	int err;

	memset(m, 0, sizeof(*m));
	m->info = info;
	err = dacce_scan_cache_funcs(info, &m->funcs);
	if (!err)
		err = refuse_unwinding(m);
	if (err == -ENOTSUP && !info->is_main) {
		/* A library refused is left alone; the program goes on. */
		dacce_rt_log(false, "library %s left alone: %s", info->path, refusal);
		refusal[0] = '\0';
	}
	if (err) {
		dacce_funcs_fini(&m->funcs);
		return err;
	}
	dacce_padding_init(&m->padding, &m->funcs);
	for (size_t i = 0; i < m->funcs.n; i++)
		with_fde += (m->funcs.funcs[i].flags & DACCE_FUNC_FDE) != 0;
	m->has_fdes = with_fde * 2 >= m->funcs.n && with_fde > 0;
	m->cfa = dacce_cfa_open(info); /* optional: without it, tail calls are guessed */
	m->scans = dacce_scan_cache_for(info, &m->funcs); /* optional: scans of earlier runs */
	return add_module(info, &m->graph_module);
}

/* A lazily bound PLT slot's callee is worth knowing when it is instrumented code. */
static bool callee_instrumented(uintptr_t callee, void *ctx)
{
	(void)ctx;
	return rt_module_at(callee) != NULL;
}

/* The program, then the libraries loaded with it that libraries.h chooses. */
static int open_modules(void)
{
	bool *wanted = calloc(rt.at_start.n ? rt.at_start.n : 1, sizeof(*wanted));
	size_t n = 1;
	int err;

	rt.cap_mods = rt.at_start.n + 1 + RT_LATER_MODULES;
	rt.mods = mmap(NULL, rt.cap_mods * sizeof(*rt.mods), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rt.mods == MAP_FAILED)
		rt.mods = NULL;
	if (!wanted || !rt.mods) {
		free(wanted);
		return -ENOMEM;
	}
	err = dacce_libraries_choose(&rt.at_start, (uintptr_t)&open_modules, wanted);
	if (err)
		dacce_rt_log(true, "instrumenting the program alone: %s", strerror(-err));
	err = open_module(rt.exe, &rt.mods[0]);
	rt.n_mods = err ? 0 : 1;
	for (size_t i = 0; i < rt.at_start.n && !err; i++) {
		int lib_err;

		if (!wanted[i])
			continue;
		lib_err = open_module(&rt.at_start.mods[i], &rt.mods[n]);
		if (lib_err == 0)
			rt.n_mods = ++n;
		else if (lib_err != -ENOTSUP)
			dacce_rt_log(true, "library %s left alone: %s", rt.at_start.mods[i].path,
				     strerror(-lib_err));
	}
	free(wanted);
	/*
	 * Calls between modules: who a lazily bound slot will call (plt.h).  Not
	 * with an audit module, which may bind a slot elsewhere (la_symbind64):
	 * such calls stay calls out until their slot is bound.
	 */
	for (size_t i = 0; i < rt.n_mods && rt.n_mods > 1 && !err && !dacce_env("LD_AUDIT"); i++) {
		int plt_err = dacce_plt_names_load(rt.mods[i].info, &rt.mods[i].funcs,
						   callee_instrumented, NULL, &rt.mods[i].plt_names);

		if (plt_err)
			dacce_rt_log(true, "calls through %s's lazily bound PLT slots stay calls out: %s",
				     rt.mods[i].info->path, strerror(-plt_err));
	}
	return err;
}

static int load_program(void)
{
	const struct dacce_module_info **infos;
	int err = dacce_modules_scan(&rt.at_start), leaf_err;

	if (!err)
		err = dacce_modules_scan(&rt.modules);
	if (err)
		return err;
	for (size_t i = 0; i < rt.at_start.n; i++)
		if (rt.at_start.mods[i].is_main)
			rt.exe = &rt.at_start.mods[i];
	if (!rt.exe)
		return -ENOENT;
	{
		/* In a register: tracers cannot read a RIP-relative probe argument. */
		int64_t tpoff = rt.tpoff;

		__asm__("" : "+r"(tpoff));
		DACCE_PROBE(start, tpoff, DACCE_TLS_LAYOUT_VERSION, rt.exe->path);
	}
	announce_scan(&rt.modules);
	dacce_scan_cache_setup(dacce_modules_find(&rt.at_start, (uintptr_t)&load_program));
	err = open_modules();
	if (err)
		return err;
	rt.exe_module = rt.mods[0].graph_module;
	/* Optional: without it, code under a debugger's breakpoints is read as it is. */
	(void)dacce_pristine_open(rt.exe);
	infos = calloc(rt.n_mods, sizeof(*infos));
	if (!infos)
		return -ENOMEM;
	for (size_t i = 0; i < rt.n_mods; i++)
		infos[i] = rt.mods[i].info;
	if (leaf_calls_wanted() && (leaf_err = dacce_leaves_load(infos, rt.n_mods, &rt.leaves)))
		dacce_rt_log(false, "every call out stays pushed: %s", strerror(-leaf_err));
	free(infos);
	return 0;
}

static int build_tail_stub(void)
{
	const uint8_t *stub_rules;
	size_t stub_rules_len;
	struct x86_buf b;
	uintptr_t exec;
	uint8_t *write;
	int err;

	err = dacce_codecache_alloc(&rt.cache, rt.exe->start, rt.exe->start + 16,
				    DACCE_TAIL_STUB_MAX, 16, &exec, &write);
	if (err)
		return err;
	x86_init(&b, write, DACCE_TAIL_STUB_MAX, exec);
	/*
	 * A byte before the stub: debuggers look a return address up one byte
	 * back (a call's return address may start the next function), and
	 * the stub is only ever reached as one.
	 */
	x86_trap(&b);
	rt.tail_stub = dacce_tail_emit_return_stub(&b, rt.tpoff);
	if (!rt.tail_stub)
		return -ENOSPC;
	dacce_debug_returns_start(rt.tail_stub, rt.tpoff);
	err = dacce_debug_returns_add_range(b.addr, b.addr + b.len, 0);
	if (err)
		return err;
	stub_rules = dacce_tail_stub_unwind_rules(&stub_rules_len);
	rt_code_returned_to_rules("tail_call_return", b.addr, b.len, stub_rules, stub_rules_len);
	/* Stack walkers meet it in the return-address slots of frames that made tail calls. */
	announce_code_of_no_site(rt.tail_stub, DACCE_CODE_TAIL_STUB);
	return 0;
}

static int reserve_edge_returns(void)
{
	size_t size = RT_MAX_COUNTED_EDGES * sizeof(*rt.edge_returns);
	void *p = mmap(NULL, 2 * size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	rt.edge_returns = p;
	rt.edge_tail_returns = (uintptr_t *)((uint8_t *)p + size);
	return 0;
}

/* Whether a debugger traces the process (TracerPid in /proc/self/status). */
static bool traced(void)
{
	char line[128];
	bool yes = false;
	FILE *status = fopen("/proc/self/status", "re");

	if (!status)
		return false;
	while (fgets(line, sizeof(line), status))
		if (strncmp(line, "TracerPid:", 10) == 0) {
			yes = strtol(line + 10, NULL, 10) != 0;
			break;
		}
	fclose(status);
	return yes;
}

/*
 * Under a debugger every function is decoded at start, and no entry is
 * watched (entries.h): a debugger's breakpoint on a watched entry saves its
 * trap byte and writes it back each time the program stops, after the
 * runtime put the function's own byte there; and gdb, stepping into such an
 * entry, puts a breakpoint on it that the runtime's write removes, so the
 * step runs away.  DACCE_DECODE_ALL=1 or 0 decides instead.
 */
static bool decode_all_wanted(void)
{
	const char *want = dacce_env("DACCE_DECODE_ALL");

	if (want && *want)
		return strcmp(want, "0") != 0;
	return traced();
}

/* Every function of m, with rt.lock held. */
static int decode_module(const struct rt_module *m)
{
	const struct dacce_funcs *funcs = &m->funcs;
	int err = 0;

	for (size_t i = 0; i < funcs->n && !err; i++) {
		const struct dacce_func *fn = &funcs->funcs[i], *f;
		uint32_t node;

		if (fn->end <= fn->start || (fn->flags & DACCE_FUNC_FRAGMENT) ||
		    dacce_funcs_in_plt(funcs, fn->start))
			continue;
		err = node_at(fn->start, &node, &f);
		if (!err && f == fn)
			err = decode_function(fn, node);
	}
	return err;
}

static int decode_all(void)
{
	sigset_t saved;
	int err = 0;

	rt_lock(&saved);
	rt.decode_everything = true;
	for (size_t m = 0; m < rt.n_mods && !err; m++)
		err = decode_module(&rt.mods[m]);
	rt_unlock(&saved);
	return err;
}

/* Entries not watched: functions decoded already, and those left alone (ctx: their module). */
static bool not_watched(const struct dacce_func *fn, void *ctx)
{
	uint32_t node;

	return dacce_hashmap_get(&rt.decoded, fn->start, &node) == 0 || left_alone(ctx, fn);
}

/* ------------------------------------------------------------------ modules loaded later */

/*
 * Drops site's targets in [start, end), an unloaded module's, and gives it
 * dispatch code without them: a library loaded there later has other
 * functions at those addresses.  The old code and lookup table stay (a
 * thread may be running them); with rt.lock held.
 */
static int forget_targets(uint32_t index, uintptr_t start, uintptr_t end)
{
	struct rt_site *site = &rt.sites[index];
	uint32_t kept = 0;

	for (uint32_t i = 0; i < site->n_by_target; i++)
		if (site->by_target[i].target < start || site->by_target[i].target >= end)
			site->by_target[kept++] = site->by_target[i];
	if (kept == site->n_by_target)
		return 0;
	site->n_by_target = kept;
	if (!site->dispatched)
		return 0; /* a trapped site looks its targets up in by_target */
	site->table = NULL;
	if (kept > DISPATCH_TARGETS) {
		site->table = dacce_lookup_new();
		if (!site->table)
			return -ENOMEM;
		for (uint32_t i = DISPATCH_TARGETS; i < kept; i++)
			dacce_lookup_set(site->table, site->by_target[i].target,
					 site->by_target[i].tramp);
	}
	return redispatch(index);
}

/*
 * Forgets m, unloaded: its sites (epochs must not write where it was), its
 * decoded functions, trapped addresses and setjmp return addresses, and the
 * targets in it of every other site.  Its graph nodes and edges stay: the
 * same library loaded again has the same ones.  With rt.lock held.
 */
static int close_module(struct rt_module *m)
{
	uintptr_t start = m->info->start, end = m->info->end;
	int err = 0;

	m->closed = true;
	for (uint32_t i = 0; i < rt.graph->n_sites && i < rt.cap_sites && !err; i++) {
		struct rt_site *site = &rt.sites[i];

		if (!site->scan.addr)
			continue;
		if (site->scan.addr >= start && site->scan.addr < end) {
			free(site->by_target);
			free(site->bytes);
			memset(site, 0, sizeof(*site));
		} else {
			err = forget_targets(i, start, end);
		}
	}
	if (!err && (dacce_hashmap_remove_range(&rt.decoded, start, end) < 0 ||
		     dacce_hashmap_remove_range(&rt.trapped_at, start, end) < 0 ||
		     dacce_hashmap_remove_range(&rt.entry_site, start, end) < 0 ||
		     dacce_hashmap_remove_range(&rt.thunk_at, start, end) < 0))
		err = -ENOMEM;
	dacce_entries_fini(&m->entries);
	dacce_padding_fini(&m->padding);
	dacce_plt_names_fini(&m->plt_names);
	dacce_cfa_close(m->cfa);
	m->cfa = NULL;
	m->scans = NULL; /* kept by scan_cache.c until the process ends */
	dacce_funcs_fini(&m->funcs);
	/* m->info stays: a thread may be reading it in rt_module_at, without the lock. */
	dacce_rt_log(false, "library %s unloaded: no longer instrumented", m->info->path);
	return err;
}

/*
 * Whether m's code is a new mapping of the same file at the same place
 * (unloaded and loaded again between two looks): every byte the runtime
 * wrote into it that is checked (its first sites, else its watched
 * entries) reads as the file's.
 */
static bool mapped_again(const struct rt_module *m)
{
	unsigned checked = 0, pristine = 0;
	bool sites_checked;

	for (uint32_t i = 0; i < rt.graph->n_sites && i < rt.cap_sites && checked < 16; i++) {
		const struct rt_site *site = &rt.sites[i];

		if (site->scan.addr < m->info->start || site->scan.addr >= m->info->end)
			continue;
		checked++;
		pristine += memcmp((const void *)site->scan.addr, site->original, site->scan.len) == 0;
	}
	sites_checked = checked > 0;
	for (size_t i = 0; i < m->funcs.n && checked < 16 && !sites_checked; i++) {
		uint8_t byte;

		if (dacce_entries_original(&m->entries, &m->funcs.funcs[i], &byte) != 1)
			continue;
		checked++;
		pristine += *(const volatile uint8_t *)m->funcs.funcs[i].start != DACCE_TRAP_BYTE;
	}
	return checked > 0 && pristine == checked;
}

static bool still_loaded(const struct rt_module *m, bool some_unloaded)
{
	for (size_t i = 0; i < rt.modules.n; i++)
		if (dacce_module_info_same(&rt.modules.mods[i], m->info))
			return !some_unloaded || !mapped_again(m);
	return false;
}

/* Instruments info, loaded after start, in the next place of rt.mods; 0 or a negative errno. */
static int open_later_module(const struct dacce_module_info *info)
{
	struct dacce_module_info *copy;
	struct rt_module *m;
	int err;

	static bool told;

	if (rt.n_mods == rt.cap_mods) {
		/* Once: a program loading and unloading plugins in a loop would fill stderr. */
		if (!told)
			dacce_rt_log(true, "libraries loaded from now on are left alone (%s the first): "
					   "%d were loaded after start",
				     info->path, RT_LATER_MODULES);
		told = true;
		return 0;
	}
	copy = malloc(sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	err = dacce_module_info_copy(copy, info);
	if (err) {
		free(copy);
		return err;
	}
	m = &rt.mods[rt.n_mods];
	err = open_module(copy, m);
	if (err) {
		dacce_module_info_fini(copy);
		free(copy);
		return err == -ENOTSUP ? 0 : err;
	}
	m->later = true;
	if (!dacce_env("LD_AUDIT") &&
	    (err = dacce_plt_names_load(m->info, &m->funcs, callee_instrumented, NULL, &m->plt_names)))
		dacce_rt_log(true, "calls through %s's lazily bound PLT slots stay calls out: %s",
			     info->path, strerror(-err));
	/* Found by rt_module_at from here on: entry traps look for it unlocked. */
	__atomic_store_n(&rt.n_mods, rt.n_mods + 1, __ATOMIC_RELEASE);
	if (rt.decode_everything)
		err = decode_module(m);
	else if ((err = dacce_entries_arm(&m->entries, &m->funcs, not_watched, m)))
		dacce_rt_log(true, "functions of %s first entered from code left alone are not "
			     "instrumented: %s", info->path, strerror(-err));
	dacce_rt_log(false, "instrumenting library %s (%zu functions), loaded after start",
		     info->path, m->funcs.n);
	return rt.decode_everything ? err : 0;
}

/* A module looked at once and left alone, named by its place and build-id. */
static uint64_t refusal_key(const struct dacce_module_info *info)
{
	uint64_t id = 0;

	memcpy(&id, info->build_id, info->build_id_len < sizeof(id) ? info->build_id_len : sizeof(id));
	return info->start ^ id;
}

static int refresh_modules_now(void)
{
	static struct dacce_hashmap left_alone; /* refusal_key -> 1 */
	unsigned long long subs_before = rt.modules.subs;
	bool *wanted = NULL, some_unloaded;
	int err;

	dacce_modules_fini(&rt.modules);
	err = dacce_modules_scan(&rt.modules);
	if (err)
		return err;
	announce_scan(&rt.modules);
	some_unloaded = rt.modules.subs != subs_before;
	for (size_t i = 0; i < rt.n_mods && !err; i++)
		if (rt.mods[i].later && !rt.mods[i].closed && !still_loaded(&rt.mods[i], some_unloaded))
			err = close_module(&rt.mods[i]);
	wanted = calloc(rt.modules.n ? rt.modules.n : 1, sizeof(*wanted));
	if (!err && !wanted)
		err = -ENOMEM;
	if (!err && dacce_libraries_choose(&rt.modules, (uintptr_t)&rt_modules_refresh, wanted))
		memset(wanted, 0, rt.modules.n * sizeof(*wanted));
	for (size_t i = 0; i < rt.modules.n && !err; i++) {
		const struct dacce_module_info *info = &rt.modules.mods[i];
		uint32_t seen;

		if (rt_module_at(info->start) ||
		    dacce_hashmap_get(&left_alone, refusal_key(info), &seen) == 0)
			continue;
		err = wanted[i] ? open_later_module(info) : 0;
		if (!err && !rt_module_at(info->start))
			err = dacce_hashmap_put(&left_alone, refusal_key(info), 1);
	}
	free(wanted);
	return err;
}

static int refresh_under_loader_lock(struct dl_phdr_info *info, size_t size, void *result)
{
	(void)info;
	(void)size;
	*(int *)result = refresh_modules_now();
	return 1; /* once, for the first module */
}

/*
 * The whole refresh runs inside a dl_iterate_phdr callback, holding the
 * loader's lock as libgcc's unwinder does while it reads a module's tables:
 * no dlclose on another thread can unmap a module between the scan that
 * lists it and the reads of its code and unwind tables that instrumenting
 * it (or checking it was mapped again) makes.  Nothing here takes the
 * loader's other lock (no dlopen, dlsym or dladdr): a thread in dlopen holds
 * that one and may wait for this.
 */
int rt_modules_refresh(void)
{
	int err = -ENOENT;

	if (!rt.mods || !dacce_modules_changed(&rt.modules))
		return 0;
	dl_iterate_phdr(refresh_under_loader_lock, &err);
	return err;
}

int dacce_rt_start(uintptr_t main_fn)
{
	struct dacce_encode_opts opts;
	uint32_t main_edge;
	const char *log = dacce_env("DACCE_LOG"), *count, *tail_calls, *native_calls;
	int err, perf_err;

	rt.verbose = log && *log && strcmp(log, "0") != 0;
	dacce_patch_set_verbose(rt.verbose);
	count = dacce_env("DACCE_COUNT");
	rt.counting = count && *count && strcmp(count, "0") != 0;
	tail_calls = dacce_env("DACCE_TAIL_CALLS");
	rt.tail_call_shape = !tail_calls || strcmp(tail_calls, "jump") != 0;
	rt_relocate_start(traced());
	native_calls = dacce_env("DACCE_NATIVE_CALLS");
	/* Counting needs every call through code of ours. */
	rt.native_calls = !rt.counting && (!native_calls || strcmp(native_calls, "0") != 0);
	rt.graph = dacce_graph_new();
	if (!rt.graph)
		return -ENOMEM;
	dacce_hashmap_init(&rt.trapped_at);
	dacce_hashmap_init(&rt.decoded);
	dacce_hashmap_init(&rt.kept_free_into);
	dacce_hashmap_init(&rt.tail_called);
	dacce_hashmap_init(&rt.thunk_at);
	dacce_hashmap_init(&rt.entry_site);
	dacce_hashmap_init(&rt.return_edge);
	dacce_hashmap_init(&rt.tail_returns);
	dacce_hashmap_init(&rt.tail_return_of);
	dacce_codecache_init(&rt.cache);
	rt.tpoff = dacce_tls_tpoff();
	/* Everything that may refuse the program comes before anything it could notice. */
	err = dacce_rt_entry_init();
	if (!err)
		err = load_program();
	if (!err)
		err = dacce_patch_init();
	/* Alone until the program creates a thread (start.c); none of ours has started yet. */
	if (!err)
		dacce_patch_sole_thread(dacce_threads_in_process() == 1);
	if (!err && (perf_err = dacce_perfmap_start()))
		dacce_rt_log(true, "no perf map: %s", strerror(-perf_err));
	rt_code_names_start();
	if (!err)
		err = build_tail_stub();
	if (!err)
		err = reserve_edge_returns();
	if (err)
		return err;
	/* C++ programs have libgcc_s already; others get it at their first thread (start.c). */
	dacce_cancel_hook_install(false);
	dacce_rt_set_slow_handler(on_slow_path);
	dacce_patch_set_trap_hook(on_trap);
	pthread_atfork(before_fork, in_parent_after_fork, in_child_after_fork);

	/* Epoch 0: the graph holds only the root; every edge found later is pushed. */
	err = dacce_rt_root_edge(DACCE_ROOT_SITE_MAIN, main_fn, &main_edge);
	if (err)
		return err;
	rt.adopted_key_made = pthread_key_create(&rt.adopted_key, adopted_thread_ends) == 0;
	if (decode_all_wanted()) {
		err = decode_all();
		if (err)
			return err;
		dacce_rt_log(false, "under a debugger: %llu functions decoded at start",
			     (unsigned long long)rt.n_decoded);
	}
	for (size_t i = 0; i < rt.n_mods; i++) {
		err = dacce_entries_arm(&rt.mods[i].entries, &rt.mods[i].funcs, not_watched,
					&rt.mods[i]);
		if (err)
			dacce_rt_log(true, "functions of %s first entered from code left alone are not "
				     "instrumented: %s", rt.mods[i].info->path, strerror(-err));
	}
	dacce_encode_opts_default(&opts);
	err = dacce_encode(rt.graph, &opts, &rt.dict);
	if (err)
		return err;
	dacce_epoch_announce(rt.dict, 0);
	/* Pages of counters are only touched for edges that get pushed. */
	rt.edge_hits = mmap(NULL, RT_MAX_COUNTED_EDGES * sizeof(*rt.edge_hits),
			    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rt.edge_hits == MAP_FAILED)
		rt.edge_hits = NULL;
	rt.edge_counts = mmap(NULL, RT_MAX_COUNTED_EDGES * sizeof(*rt.edge_counts),
			      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			      -1, 0);
	if (rt.edge_counts == MAP_FAILED) {
		rt.edge_counts = NULL;
		rt.native_calls = false; /* nothing would tell which call deserves it */
	}
	rt.dispatch_hits = mmap(NULL, RT_MAX_COUNTED_EDGES * sizeof(*rt.dispatch_hits),
				PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				-1, 0);
	if (rt.dispatch_hits == MAP_FAILED)
		rt.dispatch_hits = NULL; /* dispatch code then keeps its first order */
	/* Without re-encoding every edge stays pushed: slower, still exact. */
	err = rt.edge_hits ? dacce_epoch_start() : -ENOMEM;
	if (err)
		dacce_rt_log(true, "no re-encoding: %s", strerror(-err));
	rt.enabled = true;
	/* Handlers constructors installed become nested roots too. */
	dacce_signals_adopt_installed();
	dacce_entry_notes_flush();
	dacce_rt_log(false, "instrumenting %s (%zu functions)", rt.exe->path, rt.mods[0].funcs.n);
	for (size_t i = 1; i < rt.n_mods; i++)
		dacce_rt_log(false, "instrumenting library %s (%zu functions)", rt.mods[i].info->path,
			     rt.mods[i].funcs.n);
	return 0;
}
