/* SPDX-License-Identifier: MIT */
/*
 * Properties of a program the runtime must know before instrumenting it.
 */
#ifndef DACCE_RT_TRAITS_H
#define DACCE_RT_TRAITS_H

#include <stdbool.h>

#include "modules.h"

/*
 * Whether the module carries an unwinder of its own (libgcc_eh linked in
 * statically, -static-libgcc: it defines _Unwind_RaiseException,
 * _Unwind_Resume or _Unwind_Find_FDE in .symtab or .dynsym).
 * Exceptions through patched frames need the runtime to stand between the
 * program and libgcc_s's unwinder (unwind.c), which such a program never
 * calls: it is left uninstrumented rather than killed by std::terminate.
 * Returns 1, 0, or a negative errno when the file cannot be read.
 */
int dacce_module_has_own_unwinder(const struct dacce_module_info *m);

#endif
