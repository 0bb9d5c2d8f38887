// SPDX-License-Identifier: MIT
// link: lib
/*
 * dlsym, dlvsym and dlopen called from patched sites: glibc reads who calls
 * from the return address, which under the runtime would be a trampoline's
 * (dl_callers.h).  dlsym(RTLD_NEXT) from the program must find the library's
 * definition of a name both define, and from the library none; dlopen from
 * the library must search the library's RUNPATH (dlcallers.dir next to the
 * program, holding a link the program makes), and from the program must
 * not.  Direct calls, tail calls, calls through a pointer, from two threads;
 * the probes after each must read the context exactly.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlcallers.h"
#include "probe.h"
#include "programplace.h"

#define NOINLINE __attribute__((noinline))

typedef void *(*lookup_fn)(void *, const char *);

static volatile int sink;
static lookup_fn volatile lookup = dlsym;

int dlcallers_shared(void)
{
	return 1 + sink;
}

/* The file name of the module holding p ("program" for the executable), or why there is none. */
static const char *module_of(void *p, char *buf, size_t size)
{
	static void *program_base;
	const char *slash, *err;
	Dl_info info;

	if (!program_base && dladdr((void *)&module_of, &info))
		program_base = info.dli_fbase;
	if (!p) {
		err = dlerror();
		slash = err ? strrchr(err, '/') : NULL;
		snprintf(buf, size, "none (%s)", slash ? slash + 1 : err ? err : "no error");
		return buf;
	}
	if (!dladdr(p, &info) || !info.dli_fname)
		return "in no module";
	if (info.dli_fbase == program_base)
		return "program";
	slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}

static void report(const char *who, const char *what, void *p)
{
	char buf[256];

	printf("%s %s: %s\n", who, what, module_of(p, buf, sizeof(buf)));
}

/* A handle is no address in a module: only whether there is one. */
static void report_open(const char *who, const char *what, void *handle)
{
	char buf[256];

	printf("%s %s: %s\n", who, what, handle ? "opened" : module_of(NULL, buf, sizeof(buf)));
}

NOINLINE static void *next_symbol_tail(const char *name)
{
	return dlsym(RTLD_NEXT, name); /* a tail call from -O2 on */
}

NOINLINE static void *next_symbol(const char *name)
{
	void *found = dlsym(RTLD_NEXT, name);

	sink++;
	return found;
}

NOINLINE static void *next_symbol_pointer(const char *name)
{
	void *found = lookup(RTLD_NEXT, name);

	sink++;
	return found;
}

NOINLINE static void *next_version(const char *name, const char *version)
{
	void *found = dlvsym(RTLD_NEXT, name, version);

	sink++;
	return found;
}

NOINLINE static void *open_here(const char *name)
{
	void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	sink++;
	return handle;
}

/* dlcallers.dir/libdlcallers-runpath.so next to the program: a link to the library itself. */
static void make_runpath_link(void)
{
	char dir[PATH_MAX], subdir[PATH_MAX + 32], link[PATH_MAX + 64], target[PATH_MAX];
	const char *name = program_place(dir, sizeof(dir));

	snprintf(subdir, sizeof(subdir), "%s/dlcallers.dir", dir);
	snprintf(link, sizeof(link), "%s/libdlcallers-runpath.so", subdir);
	snprintf(target, sizeof(target), "../lib%s.so", name);
	if (mkdir(subdir, 0755) && errno != EEXIST)
		exit(2);
	unlink(link);
	if (symlink(target, link))
		exit(2);
}

NOINLINE static void lookups(const char *who)
{
	char tag[64];

	report(who, "program next getpid (tail call)", next_symbol_tail("getpid"));
	report(who, "program next getpid", next_symbol("getpid"));
	report(who, "program next shared", next_symbol("dlcallers_shared"));
	report(who, "program next shared (pointer)", next_symbol_pointer("dlcallers_shared"));
	report(who, "program default shared", dlsym(RTLD_DEFAULT, "dlcallers_shared"));
	report(who, "program next getpid@GLIBC_2.2.5", next_version("getpid", "GLIBC_2.2.5"));
	snprintf(tag, sizeof(tag), "%s after program lookups", who);
	probe(tag);
	report(who, "library next shared", lib_next_symbol("dlcallers_shared"));
	report(who, "library next getpid", lib_next_symbol("getpid"));
	snprintf(tag, sizeof(tag), "%s after library lookups", who);
	probe(tag);
	report_open(who, "program opens by runpath", open_here("libdlcallers-runpath.so"));
	report_open(who, "library opens by runpath", lib_open("libdlcallers-runpath.so"));
	snprintf(tag, sizeof(tag), "%s after opens", who);
	probe(tag);
}

static void *thread_main(void *arg)
{
	lookups((const char *)arg);
	return NULL;
}

int main(void)
{
	pthread_t thread;

	make_runpath_link();
	lookups("main");
	if (pthread_create(&thread, NULL, thread_main, "thread") || pthread_join(thread, NULL))
		return 2;
	return dlcallers_shared() == 1 ? 0 : 1;
}
