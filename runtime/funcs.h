/* SPDX-License-Identifier: MIT */
/*
 * Function bounds of one module, read from its ELF file with libelf.
 *
 * Two sources, merged:
 *  - STT_FUNC and STT_GNU_IFUNC symbols of .symtab, or of .dynsym when the
 *    file is stripped (Debian's libraries and programs are);
 *  - every FDE of .eh_frame, which stripping keeps (the unwinder needs it), so
 *    functions without a symbol still get exact bounds.
 * Symbols win: an FDE only adds a function where no symbol starts, and gives
 * a size to a zero-size symbol starting at its address.  A zero-size symbol
 * without an FDE runs to the next known start or to the end of its section
 * (DACCE_FUNC_END_GUESSED).  Where ranges overlap, every start is kept (a
 * start is an entry point) and the earlier range is clipped at the later start;
 * the one exception is an FDE starting inside a symbol's range, which is
 * dropped.  The result is sorted by start and non-overlapping.
 *
 * The PLT sections (.plt, .plt.sec, .plt.got) and GOT sections (.got,
 * .got.plt) are recorded too, so that call sites through them can be told.
 * PLT stubs are not functions of the table (the linker gives .plt an FDE):
 * a call through one is an edge to the function its GOT slot names.
 * All addresses are run-time addresses (link-time address + module bias).
 */
#ifndef DACCE_RT_FUNCS_H
#define DACCE_RT_FUNCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules.h"

/* struct dacce_func.flags */
#define DACCE_FUNC_SYMBOL	(1u << 0) /* a symbol starts here (name may still be NULL if unnamed) */
#define DACCE_FUNC_FDE		(1u << 1) /* an FDE starts here: unwind info covers the entry */
#define DACCE_FUNC_END_GUESSED	(1u << 2) /* zero-size symbol without FDE: end is a guess */
/*
 * Its FDE says the CFA at its start is not %rsp + 8, so no return address
 * sits on top there: code split off another function (foo.cold), entered by
 * jumps while that function's frame is live, never called.
 */
#define DACCE_FUNC_FRAGMENT	(1u << 3)

struct dacce_func {
	uintptr_t start, end; /* [start, end), run-time addresses */
	const char *name;     /* NULL if none; owned by the table */
	unsigned flags;	      /* DACCE_FUNC_* */
};

#define DACCE_FUNCS_MAX_PLT 3 /* .plt, .plt.sec, .plt.got */
#define DACCE_FUNCS_MAX_GOT 2 /* .got, .got.plt */

struct dacce_funcs {
	struct dacce_func *funcs; /* sorted by start, non-overlapping */
	size_t n;
	char *names;		  /* storage of every name */
	struct dacce_range plt[DACCE_FUNCS_MAX_PLT]; /* the non-empty PLT sections, in file order */
	size_t n_plt;
	struct dacce_range got[DACCE_FUNCS_MAX_GOT]; /* the non-empty GOT sections, in file order */
	size_t n_got;
};

/*
 * Loads the function table of module m from its file (the main program's
 * through /proc/self/exe, so a replaced or deleted file is still right).
 * out need not be initialised.  Returns 0, or:
 *   -EINVAL   bad arguments
 *   -ENOENT   the module has no file (vDSO), or the file does not exist
 *   -ENOEXEC  not a 64-bit ELF file
 *   -ENODATA  no section headers: nothing to learn bounds from
 *   -EBADMSG  malformed or truncated ELF or .eh_frame
 *   -ENOMEM, or the errno of open()
 * On error out is empty and dacce_funcs_fini() is safe.
 */
int dacce_funcs_load(const struct dacce_module_info *m, struct dacce_funcs *out);

/* The file module m is read from: /proc/self/exe for the program that runs, else its path. */
const char *dacce_funcs_file_of(const struct dacce_module_info *m);

/* Frees the table; NULL-safe and safe to call twice. */
void dacce_funcs_fini(struct dacce_funcs *funcs);

/* The function whose range holds addr, or NULL (binary search). */
const struct dacce_func *dacce_funcs_find(const struct dacce_funcs *funcs, uintptr_t addr);

/* Whether addr lies in a PLT section, or a GOT section, of the module. */
bool dacce_funcs_in_plt(const struct dacce_funcs *funcs, uintptr_t addr);
bool dacce_funcs_in_got(const struct dacce_funcs *funcs, uintptr_t addr);

#endif
