// SPDX-License-Identifier: MIT
#include "entry_notes.h"

#include <pthread.h>

#include "dacce_events.h"
#include "probes.h"

static struct {
	pthread_mutex_t lock;
	struct dacce_code_entry_note batch[DACCE_CODE_ENTRY_BATCH];
	uint32_t n;
	uint64_t noted;
} notes = { .lock = PTHREAD_MUTEX_INITIALIZER };

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
	pthread_mutex_lock(&notes.lock);
	if (notes.n == DACCE_CODE_ENTRY_BATCH)
		flush_locked();
	notes.batch[notes.n++] = (struct dacce_code_entry_note){
		.address = address, .site_caller = site_caller, .site_offset = site_offset,
	};
	notes.noted++;
	pthread_mutex_unlock(&notes.lock);
}

void dacce_entry_notes_flush(void)
{
	if (!DACCE_PROBE_CODE_ENTRIES_WANTED())
		return;
	pthread_mutex_lock(&notes.lock);
	flush_locked();
	pthread_mutex_unlock(&notes.lock);
}

uint64_t dacce_entry_notes_count(void)
{
	uint64_t noted;

	pthread_mutex_lock(&notes.lock);
	noted = notes.noted;
	pthread_mutex_unlock(&notes.lock);
	return noted;
}
