/* SPDX-License-Identifier: MIT */
/*
 * Where generated code begins, told to tracers in batches (probe
 * code_entries, runtime/probes.h): one probe per batch instead of one per
 * piece of code, since a probe a tracer watches costs the thread a trap.
 * Nothing is kept while no tracer watches.
 */
#ifndef DACCE_RT_ENTRY_NOTES_H
#define DACCE_RT_ENTRY_NOTES_H

#include <stdint.h>

/* Code for the site at site_offset of site_caller's function begins at address. */
void dacce_entry_note(uint64_t address, uint32_t site_caller, uint64_t site_offset);

/*
 * Fires the probe for what is noted.  Called before the runtime lets go of
 * its lock, so a tracer has the entries of code before other threads
 * return through it (and at the end of start-up).
 */
void dacce_entry_notes_flush(void);

/* Entries noted for a tracer so far in this process image (DACCE_LOG's summary). */
uint64_t dacce_entry_notes_count(void);

#endif
