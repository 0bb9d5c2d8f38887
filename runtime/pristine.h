/* SPDX-License-Identifier: MIT */
/*
 * The program's code as its file has it, to see past a debugger's
 * breakpoints.
 *
 * gdb writes an int3 (0xcc) over the first byte of each instruction it has a
 * software breakpoint on, while the program runs, and writes the byte it saw
 * there back when the program stops.  The runtime reads code to decode it:
 * an int3 there is decoded as a one-byte instruction and the rest of the
 * real instruction as others (a `lea` read as `int3; jg`, a conditional
 * tail jump the runtime then trapped, in the middle of the `lea`).  So the
 * bytes of a function are read from memory, as they must be (earlier
 * patches of the runtime are there), and each int3 the file does not have
 * is taken from the file.  Compilers do not emit int3 inside functions; a
 * program that writes its own code is not instrumented correctly anyway.
 */
#ifndef DACCE_RT_PRISTINE_H
#define DACCE_RT_PRISTINE_H
#include <stddef.h>
#include <stdint.h>

#include "modules.h"
#include "trap.h"

/*
 * Opens the main program's file m and notes its executable segments.
 * Returns 0 or a negative errno; without it, dacce_pristine_mend mends
 * nothing.
 */
int dacce_pristine_open(const struct dacce_module_info *m);

/*
 * bytes holds a copy of the len bytes of code at addr: each int3 in it that
 * the file does not have at that address becomes the file's byte.  offsets
 * (room for max, may be NULL) receives the offsets mended.  Returns how
 * many bytes were mended, or a negative errno (bytes then unchanged).
 */
int dacce_pristine_mend(uintptr_t addr, uint8_t *bytes, size_t len, size_t *offsets,
			size_t max);

void dacce_pristine_close(void);

#endif
