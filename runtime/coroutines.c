// SPDX-License-Identifier: MIT
/*
 * Coroutines built on makecontext and swapcontext run on stacks of their
 * own and interleave on one thread.  Their calls all pushed onto the
 * thread's one ccStack and tail-record stack, each coroutine popping what
 * another pushed: contexts went wrong, and a tail stub that found no record
 * for its frame killed the program (SIGILL).
 *
 * So each context gets a state of its own: id, ccStack and tail-record
 * stack.  makecontext hands glibc a wrapper that starts the coroutine's
 * context with the program's function as its root (as a thread's start
 * routine is) on stacks of its own, and, when the function returns, moves
 * the thread to the state of uc_link before glibc resumes it.  swapcontext
 * saves the thread's state under the context it leaves and loads the one
 * saved under the context it enters; setcontext loads only.  The thread is
 * in runtime work while its block is switched (a stop answers busy, a
 * sampler does not decode it, a program's handler waits), until the code
 * the switch lands in (the other side's swapcontext, or the wrapper) says
 * it is done.
 *
 * A saved state is translated by no epoch, so epochs wait while any is
 * saved away (dacce_contexts_suspended): a program that leaves a coroutine
 * suspended for good runs on without re-encoding.  A context getcontext
 * took (setjmp's way) is entered as longjmp enters a jmp_buf: getcontext
 * marked it (jumps.c), and the mark is put back.  Any other context the
 * runtime never saw a state for (a signal handler's, one built by hand) is
 * entered with the thread's state as it is: code there may read a partial
 * context.
 */
#include "coroutines.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "graph.h"
#include "keyed.h"
#include "lock.h"
#include "rt.h"
#include "thread_registry.h"
#include "tls.h"

#define MAX_ARGS 16 /* makecontext arguments a wrapped function gets */
#define COROUTINE_CC_RESERVE (16u << 20)
#define COROUTINE_TC_RESERVE (4u << 20)

struct saved_state {
	uint64_t id, epoch, reset_id;
	struct dacce_cc_entry *cc_top, *cc_base;
	struct dacce_rt_tail_record *tc_top, *tc_base;
};

struct context_record {
	ucontext_t *context;
	enum { EMPTY, FRESH, SAVED, RUNNING } what;
	struct saved_state state; /* SAVED: what the context resumes with */
	/* FRESH and after: the coroutine makecontext made. */
	void (*function)(void);
	greg_t args[MAX_ARGS];
	int argc;
	uint32_t root_edge;
	struct dacce_cc_entry *own_cc; /* its stacks, or NULL */
	struct dacce_rt_tail_record *own_tc;
};

static struct dacce_lock records_lock = DACCE_LOCK_INIT;
static struct dacce_keyed records = DACCE_KEYED_INIT(sizeof(struct context_record));
static atomic_int suspended;

bool dacce_contexts_suspended(void)
{
	return atomic_load(&suspended) > 0;
}

/* The record of context, made empty when missing and make is set (with records_lock held). */
static struct context_record *record_of(ucontext_t *context, bool make)
{
	struct context_record *r = dacce_keyed_get(&records, (uintptr_t)context, make);

	if (r && !r->context)
		r->context = context;
	return r;
}

static void set_what(struct context_record *r, int what)
{
	if (r->what == SAVED)
		atomic_fetch_sub(&suspended, 1);
	if (what == SAVED)
		atomic_fetch_add(&suspended, 1);
	r->what = what;
}

static void free_own_stacks(struct context_record *r)
{
	if (r->own_cc)
		munmap(r->own_cc, COROUTINE_CC_RESERVE);
	if (r->own_tc)
		munmap(r->own_tc, COROUTINE_TC_RESERVE);
	r->own_cc = NULL;
	r->own_tc = NULL;
}

static void save_state(const struct dacce_tls *tls, struct saved_state *s)
{
	*s = (struct saved_state){ .id = tls->id, .epoch = tls->epoch, .reset_id = tls->reset_id,
				   .cc_top = tls->cc_top, .cc_base = tls->cc_base,
				   .tc_top = tls->tc_top, .tc_base = tls->tc_base };
}

static void load_state(struct dacce_tls *tls, const struct saved_state *s)
{
	tls->id = s->id;
	tls->epoch = s->epoch;
	tls->reset_id = s->reset_id;
	tls->cc_base = s->cc_base;
	tls->cc_top = s->cc_top;
	tls->tc_base = s->tc_base;
	tls->tc_top = s->tc_top;
}

/*
 * Begins switching this thread's block: runtime work, with a program's
 * handler put off (as while a setjmp mark is written).  false when the
 * thread is already in such work (a handler that could not wait): then
 * nothing is switched.
 */
static bool begin_switch(void)
{
	struct dacce_thread *self = dacce_thread_self();

	if (self->marking)
		return false;
	dacce_runtime_enter();
	self->marking = 1;
	atomic_signal_fence(memory_order_seq_cst);
	return true;
}

/*
 * Where a switch lands: the block holds this context's state.  Not
 * inlined: after glibc's switch the thread may be another one (a coroutine
 * resumed elsewhere), and its TLS is read afresh here.
 */
static __attribute__((noinline)) void end_switch(void)
{
	struct dacce_thread *self = dacce_thread_self();

	atomic_signal_fence(memory_order_seq_cst);
	self->marking = 0;
	atomic_signal_fence(memory_order_seq_cst);
	dacce_thread_release_deferred(self);
	dacce_runtime_leave();
}

/*
 * Moves the thread's block to the state of to, with records_lock held:
 * its saved state, or fresh stacks for a coroutine not started (the
 * wrapper starts its context).  false when to has no state the runtime
 * knows, or its stacks could not be had: the block is left as it is.
 */
static bool enter(struct dacce_tls *tls, struct context_record *to)
{
	if (!to)
		return false;
	if (to->what == SAVED) {
		load_state(tls, &to->state);
		set_what(to, RUNNING);
		return true;
	}
	if (to->what != FRESH)
		return false;
	free_own_stacks(to);
	to->own_cc = mmap(NULL, COROUTINE_CC_RESERVE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	to->own_tc = mmap(NULL, COROUTINE_TC_RESERVE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (to->own_cc == MAP_FAILED || to->own_tc == MAP_FAILED) {
		if (to->own_cc == MAP_FAILED)
			to->own_cc = NULL;
		if (to->own_tc == MAP_FAILED)
			to->own_tc = NULL;
		free_own_stacks(to);
		return false;
	}
	tls->cc_base = tls->cc_top = to->own_cc;
	tls->tc_base = tls->tc_top = to->own_tc;
	tls->id = 0;
	set_what(to, RUNNING);
	return true;
}

/* Runs the coroutine makecontext made in context (glibc passes it as the argument). */
static void run_coroutine(greg_t arg)
{
	ucontext_t *context = (ucontext_t *)(uintptr_t)arg, *link;
	void (*function)(greg_t, greg_t, greg_t, greg_t, greg_t, greg_t, greg_t, greg_t, greg_t,
			 greg_t, greg_t, greg_t, greg_t, greg_t, greg_t, greg_t) = NULL;
	struct context_record *r;
	uint32_t root_edge = DACCE_NONE;
	greg_t a[MAX_ARGS] = { 0 };
	bool switched;

	dacce_lock_acquire(&records_lock);
	r = record_of(context, false);
	if (r) {
		function = (void *)r->function;
		root_edge = r->root_edge;
		for (int i = 0; i < MAX_ARGS; i++)
			a[i] = r->args[i];
	}
	dacce_lock_release(&records_lock);
	if (!function)
		abort(); /* glibc runs only what makecontext was given, and it was recorded */
	/* Its root, or (a function the runtime does not instrument) a partial context. */
	if (root_edge == DACCE_NONE || dacce_rt_context_begin(root_edge))
		dacce_rt_thread_partial();
	end_switch();
	function(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12],
		 a[13], a[14], a[15]);
	/* Finished: glibc resumes uc_link next (or ends the thread when there is none). */
	link = context->uc_link;
	switched = begin_switch();
	dacce_lock_acquire(&records_lock);
	if (switched && link && enter(dacce_tls_self(), record_of(link, false))) {
		r = record_of(context, false);
		if (r) {
			set_what(r, EMPTY);
			free_own_stacks(r);
		}
		dacce_lock_release(&records_lock);
		return; /* the state of link is in the block: its side ends the switch */
	}
	dacce_lock_release(&records_lock);
	if (switched)
		end_switch();
	dacce_rt_thread_outside();
}

typedef void (*makecontext_fn)(ucontext_t *, void (*)(void), int, ...);
typedef int (*swapcontext_fn)(ucontext_t *, const ucontext_t *);
typedef int (*setcontext_fn)(const ucontext_t *);

static void *next(const char *name)
{
	void *real = dlsym(RTLD_NEXT, name);

	if (!real)
		abort(); /* libc defines it: nothing sensible to do without it */
	return real;
}

/*
 * Every context made here gets stacks of its own (run_coroutine), with the
 * program's function as its root when the runtime instruments it.  More
 * than MAX_ARGS arguments: glibc gets the first MAX_ARGS (POSIX passes a
 * handful of ints; glibc reads them as 64-bit words).
 */
__attribute__((visibility("default"))) void makecontext(ucontext_t *context, void (*function)(void),
							 int argc, ...)
{
	static makecontext_fn real;
	struct context_record *r = NULL;
	uint32_t root_edge = DACCE_NONE;
	greg_t a[MAX_ARGS] = { 0 };
	int n = argc < 0 ? 0 : argc < MAX_ARGS ? argc : MAX_ARGS;
	va_list ap;

	if (!real)
		real = (makecontext_fn)next("makecontext");
	va_start(ap, argc);
	for (int i = 0; i < n; i++)
		a[i] = va_arg(ap, greg_t);
	va_end(ap);
	if (argc > MAX_ARGS)
		dacce_rt_log(true, "makecontext with %d arguments: the function gets the first %d",
			     argc, MAX_ARGS);
	if (dacce_rt_enabled()) {
		if (dacce_rt_root_edge(DACCE_ROOT_SITE_THREAD, (uintptr_t)function, &root_edge))
			root_edge = DACCE_NONE;
		dacce_lock_acquire(&records_lock);
		r = record_of(context, true);
		if (r) {
			set_what(r, FRESH);
			r->function = function;
			r->argc = n;
			r->root_edge = root_edge;
			for (int i = 0; i < MAX_ARGS; i++)
				r->args[i] = a[i];
		}
		dacce_lock_release(&records_lock);
	}
	if (r) {
		real(context, (void (*)(void))run_coroutine, 1, (greg_t)(uintptr_t)context);
		return;
	}
	real(context, function, n, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9],
	     a[10], a[11], a[12], a[13], a[14], a[15]);
}

/*
 * A context getcontext took and no coroutine record knows, entered the
 * way longjmp enters a jmp_buf: its mark is put back (rt.h).  Any other
 * context keeps the thread's state as it is.  frame: the interposer's frame
 * address.  libc's code that makes the jump runs below the stack pointer of
 * the interposer's caller (frame + 16, past the saved %rbp and the return
 * address), but not always below frame: the interposers tail-call it, and it
 * then runs where the return address was.  With frame itself as the bound,
 * a sample there read the landing's context over the jumping frames
 * (validate-programs, getcontext.c at -O0, once in a few CI runs).
 */
static void enter_taken_context(const ucontext_t *to, void *frame)
{
	uintptr_t caller_sp = (uintptr_t)frame + 2 * sizeof(void *);

	dacce_rt_context_rewind(to, (uintptr_t)to->uc_mcontext.gregs[REG_RSP], caller_sp);
}

__attribute__((visibility("default"))) int swapcontext(ucontext_t *from, const ucontext_t *to)
{
	static swapcontext_fn real;
	struct dacce_tls *tls = dacce_tls_self();
	struct context_record *saved_under, *target;
	struct saved_state before;
	bool switched = false;
	int was = EMPTY, ret;

	if (!real)
		real = (swapcontext_fn)next("swapcontext");
	if (!dacce_rt_enabled() || !tls->cc_base || !begin_switch())
		return real(from, to);
	dacce_lock_acquire(&records_lock);
	target = record_of((ucontext_t *)to, false);
	was = target ? (int)target->what : EMPTY;
	if ((was == SAVED || was == FRESH) && (saved_under = record_of(from, true))) {
		target = record_of((ucontext_t *)to, false); /* the array may have moved */
		save_state(tls, &before);
		if (enter(tls, target)) {
			saved_under->state = before;
			set_what(saved_under, SAVED);
			switched = true;
		}
	}
	dacce_lock_release(&records_lock);
	if (!switched) {
		end_switch();
		if (was == EMPTY)
			enter_taken_context(to, __builtin_frame_address(0));
		return real(from, to);
	}
	ret = real(from, to);
	if (ret != 0) {
		/* glibc did not switch: from runs on with its own state, to keeps its own. */
		dacce_lock_acquire(&records_lock);
		target = record_of((ucontext_t *)to, false);
		saved_under = record_of(from, false);
		if (target)
			set_what(target, was);
		if (saved_under) {
			load_state(dacce_tls_self(), &saved_under->state);
			set_what(saved_under, RUNNING);
		}
		dacce_lock_release(&records_lock);
	}
	/* Back in from: whoever switched here loaded its state. */
	end_switch();
	return ret;
}

__attribute__((visibility("default"))) int setcontext(const ucontext_t *to)
{
	static setcontext_fn real;
	struct dacce_tls *tls = dacce_tls_self();
	bool switched = false;

	if (!real)
		real = (setcontext_fn)next("setcontext");
	if (!dacce_rt_enabled() || !tls->cc_base || !begin_switch())
		return real(to);
	dacce_lock_acquire(&records_lock);
	switched = enter(tls, record_of((ucontext_t *)to, false));
	dacce_lock_release(&records_lock);
	if (!switched) {
		end_switch();
		enter_taken_context(to, __builtin_frame_address(0));
	}
	return real(to);
}
