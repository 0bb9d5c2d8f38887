/* SPDX-License-Identifier: MIT */
/*
 * Properties of a program the runtime must know before instrumenting it.
 */
#ifndef DACCE_RT_TRAITS_H
#define DACCE_RT_TRAITS_H

#include <stdbool.h>

#include "modules.h"

/*
 * Whether exceptions can unwind through the module's frames: it has landing
 * pads (.gcc_except_table) or imports the unwinder's resume entry.  The
 * unwinder cannot yet step through trampoline return addresses, so such a
 * program is left uninstrumented rather than killed by std::terminate.
 * Returns 1, 0, or a negative errno when the file cannot be read.
 */
int dacce_module_unwinds_exceptions(const struct dacce_module_info *m);

#endif
