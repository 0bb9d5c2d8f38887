// SPDX-License-Identifier: MIT
/*
 * dlopen, dlclose, dlopen again of a small library (dlreload.lib.c, built
 * next to the program as libdlreload-VARIANT.so), which must land at another
 * address the second time: in between, something else takes the first
 * copy's place (small glibc libraries are opened until one lands there;
 * whether one does depends on the layout, so an anonymous mapping takes it
 * otherwise).  The program calls into the library through dlsym'd pointers
 * (the same indirect sites meet the first copy's functions, then the
 * second's and third's) and the library calls back into the program
 * , which calls into the library again.  Each copy is instrumented when it
 * is loaded and forgotten when it is closed: PROBE_LIBRARY makes the
 * library's frames count as the program's, so the probes in the callbacks
 * (under the library's frames, 3 deep for lib_nested) must be exact, as
 * must those after every call into the library.  A copy landing where an
 * earlier one was must not be taken for it.
 */
#define PROBE_LIBRARY "libdlreload-"
#include <limits.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe.h"
#include "programplace.h"

#define NOINLINE __attribute__((noinline))

typedef int (*callback_fn)(int);

struct lib {
	void *handle;
	int (*square)(int);
	int (*apply)(callback_fn, int);
	int (*nested)(callback_fn, int);
	int (*generation)(void);
};

static volatile int sink;
static struct lib lib;

static char lib_path[PATH_MAX];

NOINLINE static int open_library(void)
{
	lib.handle = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	if (!lib.handle) {
		printf("dlopen: %s\n", dlerror());
		exit(3);
	}
	lib.square = (int (*)(int))dlsym(lib.handle, "lib_square");
	lib.apply = (int (*)(callback_fn, int))dlsym(lib.handle, "lib_apply");
	lib.nested = (int (*)(callback_fn, int))dlsym(lib.handle, "lib_nested");
	lib.generation = (int (*)(void))dlsym(lib.handle, "lib_generation");
	probe("after-open");
	return lib.square && lib.apply && lib.nested && lib.generation;
}

/* Called back by the library. */
NOINLINE static int deeper(int x)
{
	if (x == 3)
		probe("callback-deeper");
	return x + 100 + sink;
}

static int callback(int x)
{
	char tag[32];

	snprintf(tag, sizeof(tag), "callback %d", x);
	probe(tag);
	return deeper(x) + lib.square(x); /* back into the library from a callback */
}

NOINLINE static int use_library(int round)
{
	char tag[48];
	int r = lib.generation() * 1000;

	for (int i = 0; i < 4; i++)
		r += lib.square(i); /* one indirect site, each copy's function */
	snprintf(tag, sizeof(tag), "round %d after-square", round);
	probe(tag);
	r += lib.apply(callback, 2);
	snprintf(tag, sizeof(tag), "round %d after-apply", round);
	probe(tag);
	r += lib.nested(callback, 3 + round);
	snprintf(tag, sizeof(tag), "round %d after-nested", round);
	probe(tag);
	return r;
}

/* The library's first and last mapped byte, from its program headers. */
static void extent_of(void *addr, uintptr_t *start, uintptr_t *end)
{
	Dl_info info;
	const ElfW(Ehdr) *eh;
	const ElfW(Phdr) *ph;

	*start = *end = 0;
	if (!dladdr(addr, &info))
		return;
	eh = info.dli_fbase;
	ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	*start = (uintptr_t)eh;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && *start + ph[i].p_vaddr + ph[i].p_memsz > *end)
			*end = *start + ph[i].p_vaddr + ph[i].p_memsz;
}

/*
 * Puts something else where [start, end) was: a small library if one lands
 * over it (the kernel places mappings top down, so one usually does), else
 * an anonymous mapping.  Returns what to close or unmap afterwards.
 */
static void *occupy(uintptr_t start, uintptr_t end, size_t *mapped)
{
	static const char *const candidates[] = {
		"libanl.so.1", "libutil.so.1", "libBrokenLocale.so.1", "libnss_files.so.2", "libresolv.so.2",
	};
	void *opened[5];
	int n = 0;
	void *hit = NULL;

	*mapped = 0;
	for (int i = 0; i < 5 && !hit; i++) {
		Dl_info info;
		void *h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);

		if (!h)
			continue;
		for (uintptr_t a = start; a < end && !hit; a += 256)
			if (dladdr((void *)a, &info) && strstr(info.dli_fname, candidates[i]))
				hit = h;
		if (!hit)
			opened[n++] = h;
	}
	while (n > 0)
		dlclose(opened[--n]);
	if (hit)
		return hit;
	*mapped = end - start;
	return mmap((void *)start, *mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		    -1, 0);
}

int main(void)
{
	uintptr_t first_start, first_end, second_start, second_end;
	void *occupant;
	size_t mapped;
	int r = 0, moved;

	library_next_to_program(lib_path, sizeof(lib_path));
	if (!open_library())
		return 4;
	r += use_library(0);
	extent_of((void *)lib.square, &first_start, &first_end);
	dlclose(lib.handle);
	if (dlopen(lib_path, RTLD_NOW | RTLD_NOLOAD)) {
		printf("still loaded after dlclose\n");
		return 5;
	}
	occupant = occupy(first_start, first_end, &mapped);
	if (!open_library())
		return 4;
	extent_of((void *)lib.square, &second_start, &second_end);
	moved = second_start >= first_end || second_end <= first_start;
	r += use_library(1);
	dlclose(lib.handle);
	/* And a third copy, with the second one gone and the first place still taken. */
	if (!open_library())
		return 4;
	r += use_library(2);
	dlclose(lib.handle);
	if (mapped)
		munmap(occupant, mapped);
	else
		dlclose(occupant);
	probe("main");
	printf("result %d, second copy elsewhere: %s\n", r, moved ? "yes" : "no");
	return 0;
}
