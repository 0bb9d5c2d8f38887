// SPDX-License-Identifier: MIT
/*
 * std::thread starts its threads through libstdc++'s exported
 * std::thread::_M_start_thread, which passes pthread_create a routine of
 * its own (execute_native_thread_routine) and the thread's state, whose
 * virtual _M_run calls what the program gave the thread.  libstdc++ is left
 * alone, so under the runtime the program's routine was a callback from it:
 * every context of a std::thread, std::jthread or std::async thread read
 * partial.  Now _M_start_thread is interposed to mark the state it is
 * starting, and the pthread_create wrapper (start.c) gives that thread
 * _M_run as its root.  libstdc++'s routine still runs: it gets a stand-in
 * state whose _M_run calls the real one, so the program's routine is
 * entered straight from the root, and leaves the thread's context after it
 * (libstdc++ then destroys the state, program code, through the stand-in's
 * destructor: a callback again, partial).
 *
 * The stand-in is laid out as the Itanium C++ ABI lays out an object of a
 * class with a virtual destructor and one more virtual function, as
 * std::thread::_State is: a pointer to the vtable's entries, which are the
 * complete and the deleting destructor, then _M_run.
 *
 * Built with -fexceptions: pthread_exit and cancellation unwind through
 * stand_in_run, whose cleanup must leave the context, and an exception
 * thrown by _M_start_thread (std::system_error) through the interposer.
 */
#include "std_thread.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "rt.h"

#define START_THREAD "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE"

/* Vtable entries of std::thread::_State, after the offset-to-top and type-info words. */
enum { COMPLETE_DTOR, DELETING_DTOR, M_RUN };

typedef void (*state_fn)(void *);

struct stand_in {
	const state_fn *vptr;
	void *state; /* libstdc++'s, owned by the stand-in */
};

/* The state _M_start_thread of this thread is starting, while it runs. */
static __thread void *starting __attribute__((tls_model("initial-exec")));

static state_fn state_entry(void *state, int which)
{
	return (*(const state_fn *const *)state)[which];
}

static void leave_context(int *unused)
{
	(void)unused;
	dacce_rt_thread_outside();
}

static void stand_in_run(void *self)
{
	struct stand_in *s = self;
	/* On return and on pthread_exit or cancellation alike. */
	int outside __attribute__((cleanup(leave_context))) = 0;

	(void)outside;
	state_entry(s->state, M_RUN)(s->state);
}

static void stand_in_destroy(void *self)
{
	struct stand_in *s = self;

	state_entry(s->state, DELETING_DTOR)(s->state);
}

static void stand_in_delete(void *self)
{
	stand_in_destroy(self);
	free(self);
}

static const state_fn stand_in_vtable[] = {
	NULL, /* offset to top */
	NULL, /* type info: libstdc++ never asks the state for it */
	stand_in_destroy,
	stand_in_delete,
	stand_in_run,
};

uintptr_t dacce_std_thread_claim(void **arg)
{
	struct stand_in *s;

	if (!starting || *arg != starting)
		return 0;
	starting = NULL;
	s = malloc(sizeof(*s));
	if (!s)
		return 0;
	s->vptr = &stand_in_vtable[2];
	s->state = *arg;
	*arg = s;
	return (uintptr_t)state_entry(s->state, M_RUN);
}

void dacce_std_thread_unclaim(void **arg)
{
	struct stand_in *s = *arg;

	*arg = s->state;
	free(s);
}

static void forget_starting(void ***state)
{
	(void)state;
	starting = NULL;
}

typedef void (*start_thread_fn)(void *, void **, void (*)(void));

void _ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE(
	void *thread, void **state, void (*depend)(void));

/* void std::thread::_M_start_thread(unique_ptr<_State> state, void (*)()) */
__attribute__((visibility("default"))) void
_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE(
	void *thread, void **state, void (*depend)(void))
{
	static start_thread_fn real;
	void **marked __attribute__((cleanup(forget_starting))) = state;

	if (!real)
		real = (start_thread_fn)dlsym(RTLD_NEXT, START_THREAD);
	if (!real)
		abort(); /* called through libstdc++'s symbol: libstdc++ is there */
	starting = dacce_rt_enabled() && marked ? *marked : NULL;
	real(thread, state, depend);
}
