/* SPDX-License-Identifier: MIT */
/*
 * Properties of a program the runtime must know before instrumenting it.
 */
#ifndef DACCE_RT_TRAITS_H
#define DACCE_RT_TRAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules.h"

/*
 * Whether the module carries an unwinder of its own (libgcc_eh linked in
 * statically, -static-libgcc: it defines _Unwind_RaiseException,
 * _Unwind_Resume or _Unwind_Find_FDE in .symtab or .dynsym; stripped, it
 * imports _dl_find_object, which that unwinder uses, and something that
 * throws or catches: __cxa_throw, __cxa_rethrow or a personality routine).
 * Exceptions through patched frames need the runtime to stand between the
 * program and libgcc_s's unwinder (unwind.c), which such a program never
 * calls: it is left uninstrumented rather than killed by std::terminate.
 * Returns 1, 0, or a negative errno when the file cannot be read.
 */
int dacce_module_has_own_unwinder(const struct dacce_module_info *m);

/*
 * Whether every personality routine the module's unwind tables name (CIEs
 * with a 'P' augmentation) is one the runtime stands in front of: one of
 * known[] once the dynamic linker resolved it (through a DW.ref slot), or a
 * PLT entry of the module (resolved by name, so the preloaded runtime's).
 * A routine of the program's own (Rust's rust_eh_personality, a static
 * libstdc++, Ada's) would install landing pads without the runtime giving
 * their frames their context back: such a program is left alone.
 * Returns 1 and the routine's address in *foreign, 0, or a negative errno.
 */
int dacce_module_foreign_personality(const struct dacce_module_info *m, const uintptr_t *known,
				     size_t n_known, const struct dacce_range *plt, size_t n_plt,
				     uintptr_t *foreign);

#endif
