// SPDX-License-Identifier: MIT
#include "entries.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "patch.h"
#include "trap.h"

#define ENTRY_ARMED 0x100u
#define ENTRY_DISARMED 0x200u /* the original byte is kept: a debugger may put the trap back */
#define ENTRY_BYTE 0xffu

static size_t index_of(const struct dacce_entry_watch *w, const struct dacce_func *fn)
{
	return (size_t)(fn - w->funcs->funcs);
}

static bool watchable(const struct dacce_funcs *funcs, const struct dacce_func *fn)
{
	return fn->end > fn->start && !(fn->flags & DACCE_FUNC_FRAGMENT) &&
	       !dacce_funcs_in_plt(funcs, fn->start);
}

/*
 * Writes the trap bytes of the armed entries from funcs[first] on that share its
 * page, in one write of the bytes between them (the others rewritten with
 * their own values).  Returns the index after the last one written.
 */
static size_t write_page(struct dacce_entry_watch *w, int mem, size_t first, uintptr_t page_size,
			 int *err)
{
	const struct dacce_func *funcs = w->funcs->funcs;
	uintptr_t page = funcs[first].start & ~(page_size - 1);
	uint8_t buf[page_size];
	uintptr_t lo = funcs[first].start, hi = lo;
	size_t i;

	for (i = first; i < w->funcs->n && funcs[i].start < page + page_size; i++)
		if (w->state[i] & ENTRY_ARMED)
			hi = funcs[i].start;
	memcpy(buf, (const void *)lo, hi - lo + 1);
	for (size_t j = first; j < i; j++)
		if (w->state[j] & ENTRY_ARMED)
			buf[funcs[j].start - lo] = DACCE_TRAP_BYTE;
	*err = dacce_patch_mem_write(mem, lo, buf, hi - lo + 1);
	return i;
}

int dacce_entries_arm(struct dacce_entry_watch *w, const struct dacce_funcs *funcs,
		      bool (*skip)(const struct dacce_func *fn, void *ctx), void *ctx)
{
	uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	int mem = -1, err = 0;
	size_t i;

	if (!w || !funcs || !skip)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->funcs = funcs;
	w->state = calloc(funcs->n ? funcs->n : 1, sizeof(*w->state));
	if (!w->state)
		return -ENOMEM;
	for (i = 0; i < funcs->n; i++) {
		const struct dacce_func *fn = &funcs->funcs[i];

		if (!watchable(funcs, fn) || skip(fn, ctx))
			continue;
		/*
		 * The byte in memory, a debugger's breakpoint (int3) too: put back,
		 * it is the debugger's again (the scan reads past it, pristine.h).
		 */
		w->state[i] = (uint16_t)(ENTRY_ARMED | *(const uint8_t *)fn->start);
		w->n_armed++;
	}
	if (w->n_armed == 0)
		return 0;
	mem = dacce_patch_mem_open();
	if (mem < -1) {
		err = mem;
		goto cleanup;
	}
	for (i = 0; i < funcs->n && !err;) {
		if (!w->state[i]) {
			i++;
			continue;
		}
		i = write_page(w, mem, i, page_size, &err);
	}
	dacce_patch_sync_cores();
cleanup:
	if (mem >= 0)
		close(mem);
	if (err) {
		/* What was not written is not armed: its state must not claim otherwise. */
		for (; i < funcs->n; i++)
			w->state[i] = 0;
	}
	return err;
}

const struct dacce_func *dacce_entries_armed_at(const struct dacce_entry_watch *w, uintptr_t addr)
{
	const struct dacce_func *fn;

	if (!w || !w->state)
		return NULL;
	fn = dacce_funcs_find(w->funcs, addr);
	if (!fn || fn->start != addr)
		return NULL;
	return __atomic_load_n(&w->state[index_of(w, fn)], __ATOMIC_ACQUIRE) & ENTRY_ARMED ? fn
											  : NULL;
}

int dacce_entries_original(const struct dacce_entry_watch *w, const struct dacce_func *fn,
			   uint8_t *byte)
{
	uint16_t state;

	if (!w || !w->state || !fn || fn < w->funcs->funcs || fn >= w->funcs->funcs + w->funcs->n)
		return 0;
	state = __atomic_load_n(&w->state[index_of(w, fn)], __ATOMIC_ACQUIRE);
	if (!(state & ENTRY_ARMED))
		return 0;
	*byte = (uint8_t)(state & ENTRY_BYTE);
	return 1;
}

static int put_back(const struct dacce_func *fn, uint8_t original)
{
	int err = dacce_patch_write_quiet(fn->start, &original, 1);

	dacce_patch_sync_cores();
	return err;
}

/* A debugger's breakpoint over the trap byte stays (see dacce_entries_disarm). */
static bool under_debugger_breakpoint(const struct dacce_func *fn, uint8_t original)
{
	return *(const volatile uint8_t *)fn->start == DACCE_INT3 && original != DACCE_INT3;
}

int dacce_entries_queue_disarm(const struct dacce_entry_watch *w, const struct dacce_func *fn)
{
	uint8_t original;
	int err;

	/* Not over a site's patch there (a short site's hop over the instruction at the entry). */
	if (!dacce_patch_writes_whole() || dacce_entries_original(w, fn, &original) != 1 ||
	    under_debugger_breakpoint(fn, original) || dacce_patch_queue_covers(fn->start))
		return 0;
	err = dacce_patch_submit(&(struct dacce_patch){ .addr = fn->start, .bytes = &original,
							.len = 1 });
	return err ? err : 1;
}

int dacce_entries_disarm(struct dacce_entry_watch *w, const struct dacce_func *fn)
{
	uint8_t original;
	int err;

	if (dacce_entries_original(w, fn, &original) != 1)
		return 0;
	/*
	 * The byte first, then the state: a thread that traps meanwhile still
	 * finds it armed.  A debugger's breakpoint written over the trap stays:
	 * the thread stops there as the debugger expects, and the trap byte the
	 * debugger saved, written back, is a stray.
	 */
	err = under_debugger_breakpoint(fn, original) ||
			      *(const volatile uint8_t *)fn->start == original
		      ? 0
		      : put_back(fn, original);
	if (err)
		return err;
	__atomic_store_n(&w->state[index_of(w, fn)], (uint16_t)(ENTRY_DISARMED | original),
			 __ATOMIC_RELEASE);
	return 1;
}

int dacce_entries_restore_stray(struct dacce_entry_watch *w, uintptr_t addr)
{
	const struct dacce_func *fn;
	uint16_t state;
	uint8_t original;
	int err;

	if (!w || !w->state)
		return 0;
	fn = dacce_funcs_find(w->funcs, addr);
	if (!fn || fn->start != addr)
		return 0;
	state = __atomic_load_n(&w->state[index_of(w, fn)], __ATOMIC_ACQUIRE);
	original = (uint8_t)(state & ENTRY_BYTE);
	/* The function's own byte there: its own illegal instruction, not ours. */
	if (!(state & ENTRY_DISARMED) || *(const volatile uint8_t *)addr == original)
		return 0;
	err = put_back(fn, original);
	return err ? err : 1;
}

void dacce_entries_fini(struct dacce_entry_watch *w)
{
	if (!w)
		return;
	free(w->state);
	w->state = NULL;
	w->n_armed = 0;
}
