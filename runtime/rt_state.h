/* SPDX-License-Identifier: MIT */
/*
 * The runtime's process-wide state, shared by the files that implement it
 * (rt.c: discovery, slow paths, code for sites; epoch.c: re-encoding).
 * Everything here is guarded by rt.lock, taken with rt_lock().
 */
#ifndef DACCE_RT_STATE_H
#define DACCE_RT_STATE_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfa.h"
#include "codecache.h"
#include "dict.h"
#include "entries.h"
#include "funcs.h"
#include "leaves.h"
#include "graph.h"
#include "hashmap.h"
#include "lock.h"
#include "lookup.h"
#include "marks.h"
#include "modules.h"
#include "padding.h"
#include "plt.h"
#include "ops.h"
#include "reload.h"
#include "scan.h"
#include "scan_cache.h"
#include "tls.h"

/* A trampoline of a trapped or dispatched site, for one target. */
struct branch_tramp {
	uintptr_t target;
	uintptr_t tramp;
	uintptr_t after; /* where its callee returns (0: a tail jump has no "after") */
	uint32_t edge;
	struct dacce_rt_op op; /* what its code does */
};

/* What a trapped site's dispatch code runs in its place. */
struct rt_site_bytes {
	uint8_t prev2[16]; /* borrowed_two: P0 */
	uint8_t prev[16];  /* borrowed: P (P1 when borrowed_two) */
	uint8_t reload[DACCE_RELOAD_MAX]; /* its target, loaded into %r11 */
	uint8_t reload_len;
};

struct rt_site { /* wide fields first, bytes last: the site table is most of the runtime's memory */
	struct dacce_scan_site scan;
	uint8_t original[16];
	uintptr_t fn_start, fn_end;
	uint64_t traps; /* taken at its int3 (trap_report.c) */
	uintptr_t landing, landing_slot; /* borrowed: see borrowed below */
	uintptr_t stub;		/* patched site: its first-call stub (rt.c, make_stub) */
	uintptr_t tramp;	/* patched site: its trampoline once called */
	uintptr_t tramp_after;	/* ... and where its callee returns */
	struct dacce_rt_op op;	/* ... and what the trampoline does */
	uintptr_t dispatch;	/* dispatched site: entry of its dispatch code */
	struct branch_tramp *by_target; /* trapped site: one trampoline per target */
	struct dacce_lookup_entry *table; /* dispatched site past its compared targets */
	uint32_t edge;		/* patched site: its edge */
	uint32_t n_by_target, cap_by_target;
	struct rt_site_bytes *bytes; /* trapped sites only (most sites are calls never trapped) */
	uint8_t reorders; /* times its dispatch code put hot targets first (rt_reorder_dispatch) */
	bool trapped;
	bool dispatched;  /* an indirect call of 5+ bytes: through dispatch code, trap on a miss */
	bool promoted;	  /* a 6-byte conditional tail jump, now a jcc to its trampoline */
	/*
	 * A short indirect call whose previous instruction gave its bytes to a
	 * jump to the landing (`jmp *slot`), the slot holding the dispatch code,
	 * which runs that instruction first.  The site itself keeps its int3.
	 */
	bool borrowed;
	/*
	 * A short site with no instruction to borrow, reached instead through
	 * padding (padding.h): the site is `jmp rel8` to a `jmp rel32` in the
	 * padding, which goes to the landing, as for a borrowed site (borrowed
	 * is set too), but nothing of P is run.
	 */
	bool hopped;
	/*
	 * A borrowed site whose jump covers the two instructions before it,
	 * P0 (prev2) and P1 (prev): P1's first byte is an int3 inside the jump
	 * (punned, like the site's), and a thread meeting it goes on in the
	 * dispatch code's copy of P1.  P0 is in bytes->prev2, P1 in bytes->prev.
	 */
	bool borrowed_two;
	/*
	 * A direct call whose edge is free for good (DACCE_EDGE_KEEP_FREE): the
	 * site holds the program's own call again, and no epoch plans code for it.
	 */
	bool native;
};

/*
 * Code the runtime instruments: the program (rt.mods[0]), the libraries
 * loaded with it that libraries.h chooses, and those it chooses among the
 * ones loaded later (dlopen).  The array never moves once made (entries and
 * padding point into it); a module unloaded is closed, its place not reused.
 */
struct rt_module {
	const struct dacce_module_info *info;
	struct dacce_module_info own_info; /* a later module's info is this copy */
	bool later;  /* loaded after start */
	bool closed; /* unloaded: nothing of it is instrumented any more */
	struct dacce_funcs funcs;
	struct dacce_cfa *cfa;		  /* NULL: no unwind information */
	bool has_fdes;			  /* most functions of its table have an FDE (rt.c, left_alone) */
	struct dacce_entry_watch entries; /* its functions not decoded yet trap on entry */
	struct dacce_padding padding;	  /* room for hops to short sites' code (padding.h) */
	struct dacce_plt_names plt_names; /* who its lazily bound PLT slots will call (plt.h) */
	struct dacce_scan_cache *scans;	  /* its scans of earlier runs, or NULL (scan_cache.h) */
	uint32_t graph_module;
	uintptr_t stand_in_return; /* a `ret` written into its padding (dl_callers.h); 1: none */
};

struct rt_state {
	struct dacce_lock lock;
	struct dacce_scan *decoding; /* the function whose sites are being added (its padding) */
	int holder_cancel_state; /* the lock holder's, put back when it lets go (rt.c) */
	/* The thread holding the lock, or NULL: runtime work may call the program back (rt.c). */
	const struct dacce_thread *holder;
	bool enabled;
	bool verbose;
	bool counting; /* DACCE_COUNT: code counts calls and pushes in the TLS block */
	bool native_calls; /* free direct calls get the program's own call back; DACCE_NATIVE_CALLS=0: not */
	bool tail_call_shape; /* tail calls that cost something call on (tail.h); DACCE_TAIL_CALLS=jump: they jump */
	struct dacce_graph *graph;
	struct dacce_dict *dict; /* the current epoch */
	struct dacce_codecache cache;
	struct dacce_modules at_start;	/* holds *exe: never rescanned */
	struct dacce_modules modules;	/* rescanned after dlopen/dlclose */
	const struct dacce_module_info *exe;
	struct rt_module *mods; /* mods[0] is the program */
	size_t n_mods, cap_mods;
	bool decode_everything; /* under a debugger: modules loaded later are decoded whole too */
	/*
	 * Threads inside dlclose (dl_callers.c): their modules may be unmapped
	 * at any moment, so no epoch writes code until they are forgotten.
	 */
	unsigned loader_busy;
	/*
	 * DACCE_LOG's summary is written (the process is ending): the policy
	 * thread makes no more code, so the counts it gave stay the whole story.
	 */
	bool summary_written;
	struct dacce_leaves leaves;	/* calls out that are leaf calls (leaves.h) */
	pthread_key_t adopted_key;	  /* set in threads adopted at an entry trap */
	bool adopted_key_made;
	uint32_t exe_module;
	struct rt_site *sites; /* by graph site index */
	uint32_t cap_sites;
	/* Dispatched sites with counted targets, which rt_reorder_dispatch looks at. */
	uint32_t *reorder_candidates;
	uint32_t n_reorder_candidates, cap_reorder_candidates;
	struct dacce_hashmap trapped_at; /* address -> graph site */
	struct dacce_hashmap decoded;	 /* function start -> node */
	struct dacce_hashmap entry_site; /* entry of a site's trampoline or dispatch code -> site */
	/* every return point code was ever built with (old epochs' too) -> its edge (returns.c) */
	struct dacce_hashmap return_edge;
	/* return points of tail trampolines that call on (tail.h) -> edge: each works as the tail stub */
	struct dacce_hashmap tail_returns;
	/* entry of a tail trampoline that calls on -> its return point's offset from the entry */
	struct dacce_hashmap tail_return_of;
	struct dacce_hashmap thunk_at;	      /* setjmp's return address -> index in thunks */
	uintptr_t *thunks;
	uint32_t n_thunks, cap_thunks;
	uint64_t *edge_hits;		 /* calls of each edge counted by its trampoline (op_for_edge_in) */
	/*
	 * Per edge, beside edge_hits: its count when the last encoding took it
	 * in, and the calls counted while an encoding had it encoded: a direct
	 * call gets the program's own call back only once it has made
	 * GIVE_BACK_CALLS calls free (restore_native_calls in rt.c).
	 */
	struct rt_edge_counts {
		uint64_t taken, encoded;
	} *edge_counts;
	/* Nodes with an incoming edge free for good -> that edge: no other may take its place. */
	struct dacce_hashmap kept_free_into;
	struct dacce_hashmap tail_called; /* nodes some tail call enters -> one such edge */
	uint64_t *dispatch_hits;	 /* per edge: hits late in its site's dispatch code (rt.c) */
	/*
	 * Where a call through each edge returns now: its trampoline's return
	 * point, or the tail stub for a tail jump (0: no code yet).  Read
	 * without the lock (dacce_context_get); the array never moves.
	 */
	uintptr_t *edge_returns;
	/*
	 * Per edge: the return point of its tail trampoline in use when it calls
	 * on (tail.h), else 0.  Read without the lock too.
	 */
	uintptr_t *edge_tail_returns;
	uintptr_t tail_stub;
	int32_t tpoff;
	/* Counters for the exit summary. */
	uint64_t n_decoded, n_patched, n_trapped, n_first_calls, n_traps, n_trampolines, n_hops;
	uint64_t n_dispatch_misses; /* new targets met by calls' dispatch code (slow path) */
	uint64_t n_prebuilt_used;   /* trampolines an epoch took ready-made (prebuilt.h) */
	uint64_t n_reorders;	    /* dispatch code rebuilt with hot targets first */
	uint64_t n_native_calls;    /* calls given their own call back (rt_restore_native_calls) */
	uint64_t n_taken_back;	    /* of them, calls taken back for a hotter tail call (epoch.c) */
	uint64_t n_jump_tables;	    /* switch jumps left alone: their tables stay in the function */
	uint64_t n_entry_traps; /* entries of functions first reached from code we leave alone */
	uint64_t n_unwinds, n_frames_shown; /* walks of exceptions.c, and the slots they showed */
};

/* The one instance, internal to libdacce. */
extern struct rt_state rt __attribute__((visibility("hidden")));

/* Edges the hit counters and edge_returns cover (reserved once, touched on demand). */
#define RT_MAX_COUNTED_EDGES (1u << 22)

/* The instrumented module whose address range holds addr, or NULL. */
struct rt_module *rt_module_at(uintptr_t addr);

/*
 * Brings the instrumented modules in line with those loaded now: forgets
 * the ones unloaded since the last look, and instruments the new ones
 * libraries.h chooses.  rt.lock held; 0 or a negative errno.
 */
int rt_modules_refresh(void);

/* Locks with every signal blocked: a handler on this thread must not wait for us. */
void rt_lock(sigset_t *saved);
void rt_unlock(const sigset_t *saved);

_Noreturn void rt_fatal(const char *what, int err);

/*
 * Re-encoding, with the world stopped and rt.lock held, in two steps.
 * rt_plan_code builds the code of every instrumented site for rt.dict (set
 * to the new epoch's dictionary by the caller) without touching what runs;
 * it fails cleanly.  rt_apply_code then points the sites at it and turns the
 * old code's return points into jumps to the new ones (live frames return
 * through them), calling moved(old entry, new entry) for every entry a
 * parked thread may sit on.
 */
struct rt_code_plan;
int rt_plan_code(struct rt_code_plan **plan);
/*
 * Before the stop, without it: builds the trampolines next will need
 * (prebuilt.h), taking rt.lock for a few hundred sites at a time.  An error
 * only means the plan will build more itself.  rt_prebuilt_drop forgets them.
 */
int rt_prebuild_code(const struct dacce_dict *next);
void rt_prebuilt_drop(void);
/*
 * Calls a direct call's edge must make while encoded before it may be given
 * the program's own call back (rt.c, restore_native_calls).  One the program
 * made a few times at start-up, free then because it came first, would
 * otherwise hold its callee's free place for good.
 */
#define GIVE_BACK_CALLS 1000
/*
 * A free direct call into a function some tail call enters is given back
 * only when it made this many times the calls of the busiest such tail call
 * (rt_tail_calls_cold).  Should a tail call get hot later (hot_tail_edge in
 * epoch.c), the call is taken back (rt_take_back_call).
 */
#define TAIL_COLD_RATIO 16
/* An edge's counted calls so far: pushes while it was pushed, calls while counted otherwise. */
uint64_t rt_edge_calls_seen(uint32_t e);
/*
 * Whether a free direct call of calls calls into node may be given back
 * whatever tail calls enter node: none does, or all are cold beside it.
 * *tail_calls holds, per node, the calls of the busiest tail call into it,
 * counted at the first need (NULL before; the caller frees it): most calls
 * meet no tail call.  Without memory for it, not cold.  rt.lock held.
 */
bool rt_tail_calls_cold(uint64_t **tail_calls, uint32_t node, uint64_t calls);
/* The call given back into node (restore_native_calls in rt.c), or DACCE_NONE. */
uint32_t rt_given_back_into(uint32_t node);
/*
 * Takes a given-back call back before an encoding: its edge is no longer
 * kept free and its site gets code of the runtime's at the next epoch.  The
 * stop must find no live frame the native call entered (epoch.c); if the
 * epoch is not installed, rt_give_back_again undoes it.  rt.lock held.
 */
int rt_take_back_call(uint32_t edge);
void rt_give_back_again(uint32_t edge);
/* Puts the hot targets of dispatch code first (policy thread, rt.lock held). */
void rt_reorder_dispatch(void);
int rt_apply_code(struct rt_code_plan *plan, void (*moved)(uintptr_t from, uintptr_t to, void *ctx),
		  void *ctx);
void rt_plan_free(struct rt_code_plan *plan);

/*
 * Code at pc that runs in a frame of node without being reached by a jump
 * from it (a landing pad in foo.cold, entered by the unwinder): decodes the
 * fragment pc is in as part of node.  0 (also when pc is in no fragment, or
 * in one already decoded) or a negative errno.
 */
int rt_decode_fragment(uintptr_t pc, uint32_t node);

/*
 * The function whose context a thread's state describes when it is at pc
 * (outside runtime code): a decoded function of the program, the boundary
 * function the program called when pc is elsewhere, or the function of the
 * site whose trampoline or dispatch code starts at pc.  DACCE_NONE when
 * unknown (pc inside generated code, a callback nobody decoded).
 */
uint32_t rt_node_at(const struct dacce_tls *tls, uintptr_t pc);

/* With DACCE_LOG: the sites that took the most traps, and why each traps (trap_report.c). */
void rt_log_hot_traps(void);

/*
 * Whether pc, when it starts code of a site, starts the code the site uses
 * now (true for every other pc).  A thread can sit on the entry of code a
 * site has left behind: jumped to dispatch code just before another thread
 * rebuilt it for a new target.  An epoch moves threads from the entries it
 * replaces only; one left there would run the old epoch's operations.
 */
bool rt_entry_is_current(uintptr_t pc);

/*
 * The standalone policy (epoch.c): re-encodes as edges are found and get
 * hot.  Settings come from DACCE_EPOCH* variables (docs/runtime.md).
 */
int dacce_epoch_start(void);
void dacce_epoch_after_fork(void);
/* A new edge was found (wakes the policy in stress mode). */
void dacce_epoch_new_edge(void);
/* Wakes the policy thread (a thread ended: it checks whether it is the last one). */
void dacce_epoch_nudge(void);
/* Who made an epoch: the epoch probe's last argument. */
enum dacce_epoch_driver {
	DACCE_EPOCH_BY_START = 0,
	DACCE_EPOCH_BY_RUNTIME,	   /* the built-in policy */
	DACCE_EPOCH_BY_CONTROLLER, /* a request on the control channel */
};

/* Fires the epoch probe for dict (probes.h), serialising it only when a tracer listens. */
void dacce_epoch_announce(const struct dacce_dict *dict, long pause_ns);
/* The dictionary of an epoch of this process (rt.lock held), or NULL. */
const struct dacce_dict *dacce_epoch_dict(uint64_t epoch);
/* One line for the exit summary. */
void dacce_epoch_summary(char *buf, size_t len);

#endif
