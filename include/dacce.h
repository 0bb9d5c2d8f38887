/* SPDX-License-Identifier: MIT */
/*
 * The public API of libdacce.so, for programs that want their own calling
 * context without unwinding the stack.  Declare these weak when the program
 * must also run without the runtime:
 *
 *     #pragma weak dacce_backtrace
 *     if (dacce_backtrace) n = dacce_backtrace(buf, 64);
 */
#ifndef DACCE_H
#define DACCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Same contract as glibc's backtrace(), computed from the context encoding:
 * the return addresses, innermost first, that an uninstrumented run would
 * show, from the caller of dacce_backtrace out to main (or the thread's
 * start routine); never an address of generated code.  In a signal handler,
 * as glibc's, below the handler's frames: the signal trampoline, the pc the
 * signal interrupted, then the interrupted code's callers.  Returns the number
 * stored (at most size), or -1 with errno set: ENOSYS when the runtime is
 * not active, ENODATA when the context is partial (code entered from outside
 * the instrumented program, such as a library callback) or when a signal
 * interrupted the runtime's generated code at a place it cannot map back to
 * the program's own.
 */
int dacce_backtrace(void **buffer, int size);

/*
 * Context-sensitive logging: take the calling context now, cheaply (a copy
 * of a few words and the innermost ccStack entries, no unwinding, no
 * decoding), keep it with the log record, decode it later, even after the
 * runtime has re-encoded (every epoch's dictionary is kept).  Example:
 *
 *     struct dacce_context ctx;
 *     if (dacce_context_get(&ctx) == 0)
 *             log_append(record, &ctx, sizeof(ctx));   // hot path: cheap
 *     ...
 *     void *frames[64];                                // later, when reading the log
 *     int n = dacce_context_decode(&ctx, frames, 64);  // as dacce_backtrace() would have said
 *
 * The struct is caller-owned and plain data (it can be copied and stored,
 * but is only meaningful to the process that took it).
 */
#define DACCE_CONTEXT_ENTRIES 256

struct dacce_context_entry {
	uint64_t id;
	uint32_t edge;
	uint32_t aux;
};

struct dacce_context {
	uint64_t epoch;	    /* the encoding the context is written in */
	uint64_t id;	    /* the context id */
	uint32_t depth;	    /* ccStack entries the thread had */
	uint32_t n_entries; /* the innermost ones kept below: depth, at most DACCE_CONTEXT_ENTRIES */
	struct dacce_context_entry entries[DACCE_CONTEXT_ENTRIES]; /* outermost kept first */
};

/*
 * Fills ctx with the caller's context.  Returns 0, or -1 with errno: ENOSYS
 * when the runtime is not active, ENODATA when the thread has no context or
 * it is partial (as for dacce_backtrace: a caller entered from outside the
 * instrumented program), EINVAL for a NULL ctx.
 */
int dacce_context_get(struct dacce_context *ctx);

/*
 * The return addresses dacce_backtrace() would have given where ctx was
 * taken (from the caller of dacce_context_get outward).  When the context
 * was deeper than DACCE_CONTEXT_ENTRIES (ctx->depth > ctx->n_entries), only
 * the innermost frames that the kept entries determine are given; never a
 * wrong one.  Taken in a signal handler, it leaves out the two frames the
 * encoding does not hold: the signal trampoline and the interrupted pc.
 * Returns the number stored, or -1 with errno: ENOSYS, EINVAL
 * (a context from no epoch of this process), ENODATA (partial context).
 */
int dacce_context_decode(const struct dacce_context *ctx, void **buffer, int size);

#ifdef __cplusplus
}
#endif

#endif
