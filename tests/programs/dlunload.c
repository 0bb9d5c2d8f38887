// SPDX-License-Identifier: MIT
/*
 * One thread loads, calls into and unloads an instrumented library
 * (dlunload.lib.c, 300 functions) again and again while two others load
 * and unload libraries of glibc's (left alone by the runtime): each load
 * makes the runtime look at the modules loaded again, on its own thread,
 * while another thread's dlclose may be unmapping a module that look
 * lists.  The runtime reads the code and unwind tables of the modules it
 * looks at, so that look must hold the loader's lock as the unwinder does
 * (a read of an unmapped module killed the program).  Probes in the
 * callback must be exact throughout.
 */
#define PROBE_LIBRARY "libdlunload-"
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "probe.h"
#include "programplace.h"

#define ROUNDS 300

typedef int (*callback_fn)(int);
typedef int (*work_fn)(callback_fn, int);

static char lib_path[PATH_MAX];
static volatile int sink;

/* Called back from two frames of the library: its frames count as the program's. */
static int probed_callback(int x)
{
	if (x % 250 == 0)
		probe("callback");
	return x + sink;
}

static void *instrumented_loader(void *unused)
{
	long total = 0;

	(void)unused;
	for (int round = 0; round < ROUNDS; round++) {
		void *handle = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
		work_fn work = handle ? (work_fn)dlsym(handle, "lib_work") : NULL;

		if (!work) {
			printf("dlopen or dlsym: %s\n", dlerror());
			exit(3);
		}
		total += work(probed_callback, round * 5);
		dlclose(handle);
	}
	return (void *)total;
}

/* Libraries of glibc's that nothing else here loads: each dlopen maps it, each dlclose unmaps it. */
static void *other_loader(void *name)
{
	for (int round = 0; round < ROUNDS; round++) {
		void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);

		if (!handle) {
			printf("dlopen %s: %s\n", (const char *)name, dlerror());
			exit(5);
		}
		dlclose(handle);
	}
	return NULL;
}

int main(void)
{
	pthread_t instrumented, others[2];
	void *r;

	library_next_to_program(lib_path, sizeof(lib_path));
	if (pthread_create(&instrumented, NULL, instrumented_loader, NULL) ||
	    pthread_create(&others[0], NULL, other_loader, "libanl.so.1") ||
	    pthread_create(&others[1], NULL, other_loader, "libBrokenLocale.so.1"))
		return 2;
	pthread_join(instrumented, &r);
	pthread_join(others[0], NULL);
	pthread_join(others[1], NULL);
	probe("joined");
	printf("total %ld\n", (long)r);
	return 0;
}
