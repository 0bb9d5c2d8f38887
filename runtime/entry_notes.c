// SPDX-License-Identifier: MIT
#include "entry_notes.h"

#include <pthread.h>

#include "dacce_events.h"
#include "lock.h"
#include "probes.h"

static struct {
	struct dacce_lock lock;
	struct dacce_code_entry_note batch[DACCE_CODE_ENTRY_BATCH];
	uint32_t n;
	uint64_t noted;
} notes = { .lock = DACCE_LOCK_INIT };

/* With notes.lock held. */
static void flush_locked(void)
{
	uintptr_t batch = (uintptr_t)notes.batch;
	uint32_t n = notes.n;

	if (n == 0)
		return;
	/* In registers: tracers cannot read a RIP-relative probe argument. */
	__asm__("" : "+r"(batch), "+r"(n));
	DACCE_PROBE(code_entries, batch, n);
	notes.n = 0;
}

void dacce_entry_note(uint64_t address, uint32_t site_caller, uint64_t site_offset)
{
	if (!DACCE_PROBE_CODE_ENTRIES_WANTED())
		return;
	dacce_lock_acquire(&notes.lock);
	if (notes.n == DACCE_CODE_ENTRY_BATCH)
		flush_locked();
	notes.batch[notes.n++] = (struct dacce_code_entry_note){
		.address = address, .site_caller = site_caller, .site_offset = site_offset,
	};
	notes.noted++;
	dacce_lock_release(&notes.lock);
}

void dacce_entry_notes_flush(void)
{
	if (!DACCE_PROBE_CODE_ENTRIES_WANTED())
		return;
	dacce_lock_acquire(&notes.lock);
	flush_locked();
	dacce_lock_release(&notes.lock);
}

uint64_t dacce_entry_notes_count(void)
{
	uint64_t noted;

	dacce_lock_acquire(&notes.lock);
	noted = notes.noted;
	dacce_lock_release(&notes.lock);
	return noted;
}
