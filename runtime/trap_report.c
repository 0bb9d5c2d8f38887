// SPDX-License-Identifier: MIT
/*
 * Which sites the traps were taken at, and why those sites trap: each trap
 * is a signal, the costliest thing the runtime does, and a handful of sites
 * usually take nearly all of them (gcc's cc1: two sites, 546,000 of 703,000
 * traps in one compilation).  Printed with the summary at exit (DACCE_LOG).
 */
#include <stdio.h>
#include <unistd.h>

#include "funcs.h"
#include "graph.h"
#include "rt.h"
#include "rt_state.h"

#define HOT_SITES 5

/* Why a trapped site could not be patched, from what the scanner saw. */
static const char *trap_reason(const struct rt_site *site)
{
	const struct dacce_scan_site *s = &site->scan;

	if (site->dispatched)
		return "dispatched, meeting targets its code does not know";
	if (s->kind == DACCE_SITE_TAIL_DIRECT || s->kind == DACCE_SITE_TAIL_INDIRECT) {
		if (s->len >= 5)
			return "an indirect jump the runtime cannot load the target of";
		if (!s->prev)
			return "a short tail jump after a branch target or an instruction it cannot move, no padding in reach";
		return "a short tail jump whose previous instruction is under 5 bytes with it, no padding in reach";
	}
	if (s->len >= 5)
		return "a call the runtime cannot rewrite";
	if (!s->prev)
		return "a short call after a branch target or an instruction it cannot move, no padding in reach";
	return "a short call whose previous instruction is under 5 bytes with it, no padding in reach";
}

void rt_log_hot_traps(void)
{
	uint32_t hot[HOT_SITES];
	size_t n_hot = 0;

	if (!rt.n_traps)
		return;
	for (uint32_t i = 0; i < rt.cap_sites; i++) {
		size_t at;

		if (!rt.sites[i].traps)
			continue;
		/* Kept sorted, most traps first. */
		for (at = n_hot; at > 0 && rt.sites[hot[at - 1]].traps < rt.sites[i].traps; at--)
			if (at < HOT_SITES)
				hot[at] = hot[at - 1];
		if (at < HOT_SITES) {
			hot[at] = i;
			if (n_hot < HOT_SITES)
				n_hot++;
		}
	}
	for (size_t k = 0; k < n_hot; k++) {
		const struct rt_site *site = &rt.sites[hot[k]];
		const struct rt_module *m = rt_module_at(site->scan.addr);
		const struct dacce_func *f = m ? dacce_funcs_find(&m->funcs, site->scan.addr) : NULL;
		uintptr_t bias = m ? m->info->bias : 0;
		char where[160];

		if (f && f->name)
			snprintf(where, sizeof(where), "%s+%#lx", f->name,
				 (unsigned long)(site->scan.addr - f->start));
		else
			snprintf(where, sizeof(where), "%#lx",
				 (unsigned long)(site->scan.addr - bias));
		dacce_rt_log(false, "pid %d: %llu trap%s (%.1f %%) at %s: %s", (int)getpid(),
			     (unsigned long long)site->traps, site->traps == 1 ? "" : "s",
			     100.0 * (double)site->traps / (double)rt.n_traps, where, trap_reason(site));
	}
}
