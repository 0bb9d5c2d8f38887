/* SPDX-License-Identifier: MIT */
/*
 * The modules (executable, shared libraries, loader, vDSO) loaded in this
 * process, as the dynamic loader reports them through dl_iterate_phdr.
 * Everything is read from memory: program headers and the build-id note of
 * each module are mapped as long as the module is loaded.
 *
 * A scan is a snapshot: dlopen/dlclose after it are not reflected.
 * dacce_modules_changed() tells cheaply whether a new scan is needed.
 * Safe to call from a constructor; not async-signal-safe (it allocates).
 */
#ifndef DACCE_RT_MODULES_H
#define DACCE_RT_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef DACCE_RANGE_DEFINED
#define DACCE_RANGE_DEFINED
/* A half-open address range [start, end). */
struct dacce_range {
	uintptr_t start, end;
};
#endif

/* Longest build-id kept; a longer one is treated as absent (len 0). */
#define DACCE_BUILD_ID_MAX 64

struct dacce_module_info {
	char *path;	      /* file the module was loaded from (main: resolved); vDSO: its soname */
	uintptr_t bias;	      /* run-time address = link-time address + bias */
	uintptr_t start, end; /* lowest and highest address of its PT_LOAD segments */
	struct dacce_range *exec; /* PF_X PT_LOAD segments, run-time addresses, in header order */
	size_t n_exec;
	/* PT_GNU_EH_FRAME (.eh_frame_hdr), run-time; start 0: none.  unwind_readable: the */
	/* PT_LOAD holding it, which holds .eh_frame too (readers of the tables stay in it). */
	struct dacce_range eh_frame_hdr, unwind_readable;
	uint8_t build_id[DACCE_BUILD_ID_MAX]; /* NT_GNU_BUILD_ID descriptor */
	size_t build_id_len;		      /* 0: none */
	bool is_main;			      /* the program itself */
	bool is_vdso;			      /* the kernel's vDSO: no file */
	bool is_loader;			      /* the dynamic loader (the main program's PT_INTERP) */
};

struct dacce_modules {
	struct dacce_module_info *mods; /* in the loader's order; the main program first */
	size_t n;
	/* dl_iterate_phdr's load and unload counters at the time of the scan. */
	unsigned long long adds, subs;
};

/*
 * Fills out with the modules loaded now.  out need not be initialised.
 * Returns 0, or -ENOMEM (out is then empty, and dacce_modules_fini() safe).
 */
int dacce_modules_scan(struct dacce_modules *out);

/* Frees everything; NULL-safe and safe to call twice. */
void dacce_modules_fini(struct dacce_modules *mods);

/* A copy of src that owns its own strings and ranges: 0 or -ENOMEM (dst then empty). */
int dacce_module_info_copy(struct dacce_module_info *dst, const struct dacce_module_info *src);
void dacce_module_info_fini(struct dacce_module_info *m);

/* Whether a and b are the same file mapped at the same place. */
bool dacce_module_info_same(const struct dacce_module_info *a, const struct dacce_module_info *b);

/* The module whose PT_LOAD span [start, end) holds addr, or NULL. */
const struct dacce_module_info *dacce_modules_find(const struct dacce_modules *mods,
						   uintptr_t addr);

/* Whether addr lies in one of the module's executable segments. */
bool dacce_module_is_exec(const struct dacce_module_info *mod, uintptr_t addr);

/*
 * Whether a module was loaded or unloaded since the scan (compares the
 * loader's counters; costs one dl_iterate_phdr step under the loader lock).
 */
bool dacce_modules_changed(const struct dacce_modules *mods);

#endif
