/* SPDX-License-Identifier: MIT */
/*
 * Thread cancellation through patched frames.
 *
 * pthread_cancel makes glibc unwind the thread from inside itself: it calls
 * libgcc_s's _Unwind_ForcedUnwind through a pointer of its own, so no
 * interposed symbol sees it, and the walk stopped at the first return
 * address in generated code: the C++ destructors above it never ran (they
 * do natively).  The first instructions of _Unwind_ForcedUnwind are
 * patched to jump to dacce_forced_unwind_hook, which does what
 * pthread_exit's interposition does (the thread leaves its context, the
 * stack is shown native, exceptions.h) and goes on with those instructions,
 * relocated, and the rest of the function.
 */
#ifndef DACCE_RT_CANCEL_H
#define DACCE_RT_CANCEL_H

#include <stdbool.h>

/*
 * Patches _Unwind_ForcedUnwind, loading libgcc_s when load is true and it is
 * not loaded yet.  Only while the process has one thread (nobody can be
 * running the instructions rewritten), and tried once: later calls, calls
 * with other threads running and calls while libgcc_s is not loaded (load
 * false) do nothing.  A failure (code that cannot be relocated) leaves
 * cancellation as it was, with a line under DACCE_LOG.
 */
void dacce_cancel_hook_install(bool load);

#endif
