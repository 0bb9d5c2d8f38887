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

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Same contract as glibc's backtrace(), computed from the context encoding:
 * the return addresses, innermost first, that an uninstrumented run would
 * show, from the caller of dacce_backtrace out to main (or the thread's
 * start routine); never an address of generated code.  Returns the number
 * stored (at most size), or -1 with errno set: ENOSYS when the runtime is
 * not active, ENODATA when the context is partial (code entered from outside
 * the instrumented program, such as a library callback).
 */
int dacce_backtrace(void **buffer, int size);

#ifdef __cplusplus
}
#endif

#endif
