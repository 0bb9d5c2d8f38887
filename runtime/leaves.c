// SPDX-License-Identifier: MIT
#include "leaves.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sorted.h"

/*
 * libc functions that call nothing a program can provide: no callbacks and no
 * call to a symbol the program could define in their place.  They may fail
 * with abort() (a signal: a nested root, which is fine) but never reach
 * program code otherwise.  Cancellation points are left out: a cancellation
 * unwinds from inside them.
 */
static const char *const pure_leaves[] = {
	"memcpy", "memmove", "memset", "memcmp", "bcmp", "memchr", "memrchr", "rawmemchr",
	"mempcpy", "bzero", "strlen", "strnlen", "strcmp", "strncmp", "strcpy", "strncpy",
	"stpcpy", "stpncpy", "strcat", "strncat", "strchr", "strrchr", "strchrnul", "strstr",
	"strspn", "strcspn", "strpbrk", "strcasecmp", "strncasecmp", "wcslen", "wcsnlen",
	"wcscmp", "wcsncmp", "wcscpy", "wcschr", "wcsrchr", "wmemcpy", "wmemmove", "wmemset",
	"wmemchr", "wmemcmp", "__memcpy_chk", "__memmove_chk", "__memset_chk", "__mempcpy_chk",
	"__strcpy_chk", "__strncpy_chk", "__stpcpy_chk", "__strcat_chk", "__strncat_chk",
	"__ctype_b_loc", "__ctype_tolower_loc", "__ctype_toupper_loc",
	"__ctype_get_mb_cur_max", "tolower", "toupper", "__errno_location", "getpid",
	"pthread_self", "pthread_getspecific", "pthread_mutex_lock", "pthread_mutex_trylock",
	"pthread_mutex_unlock", "clock_gettime", "gettimeofday", "time",
	"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "malloc_usable_size",
};

/* Leaves only while libc's malloc is the one in use: they call it through libc's PLT. */
static const char *const malloc_leaves[] = { "strdup", "strndup", "__strdup", "pthread_setspecific" };
static const char *const malloc_family[] = { "malloc", "free", "calloc", "realloc" };

/* libm's functions set errno and floating-point flags, and call nothing else. */
static const char *const math_leaves[] = {
	"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
	"exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "cbrt", "hypot",
	"fmod", "remainder", "floor", "ceil", "round", "trunc", "rint", "nearbyint", "lround",
	"lrint", "fabs", "fmin", "fmax", "ldexp", "frexp", "modf", "sincos", "sinf", "cosf",
	"tanf", "atan2f", "expf", "exp2f", "logf", "log2f", "log10f", "powf", "sqrtf", "floorf",
	"ceilf", "fabsf", "fmodf",
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Names that are leaves when the library that defines them is the one the global scope uses. */
struct leaf_group {
	void *library; /* NULL: not loaded, or its leaves do not hold */
	const char *const *names;
	size_t n;
};

enum { GROUP_LIBC, GROUP_LIBC_MALLOC, GROUP_LIBM, N_GROUPS };

struct lookup {
	struct leaf_group groups[N_GROUPS];
};

/* The group's definition of name when the global scope resolves name to it, else NULL. */
static void *definition_in(const struct leaf_group *g, const char *name)
{
	void *mine = g->library ? dlsym(g->library, name) : NULL;

	return mine && dlsym(RTLD_DEFAULT, name) == mine ? mine : NULL;
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

/* Where name is a leaf, its definition; else NULL. */
static void *leaf_definition(const struct lookup *l, const char *name)
{
	for (size_t i = 0; i < N_GROUPS; i++) {
		const struct leaf_group *g = &l->groups[i];

		if (g->library && in_list(name, g->names, g->n))
			return definition_in(g, name);
	}
	return NULL;
}

static int push(uint64_t **array, size_t *n, size_t *cap, uint64_t value)
{
	if (*n == *cap) {
		size_t grown_cap = *cap ? *cap * 2 : 32;
		uint64_t *grown = realloc(*array, grown_cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		*array = grown;
		*cap = grown_cap;
	}
	(*array)[(*n)++] = value;
	return 0;
}

static int by_address(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The GOT slots of one relocation section whose symbol is a leaf defined by libc. */
static int collect_slots(Elf *elf, Elf_Scn *rela, const GElf_Shdr *sh, uintptr_t bias,
			 const struct lookup *l, struct dacce_leaves *out, size_t *cap)
{
	Elf_Scn *symtab = elf_getscn(elf, sh->sh_link);
	Elf_Data *data = elf_getdata(rela, NULL), *syms;
	GElf_Shdr sym_sh;
	size_t count;

	if (!symtab || !data || !gelf_getshdr(symtab, &sym_sh) || sh->sh_entsize == 0)
		return 0;
	syms = elf_getdata(symtab, NULL);
	if (!syms)
		return 0;
	count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *name;
		unsigned type;
		int err;

		if (!gelf_getrela(data, (int)i, &r))
			break;
		type = GELF_R_TYPE(r.r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		if (!gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx != SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sym_sh.sh_link, sym.st_name);
		if (!name || !leaf_definition(l, name))
			continue;
		err = push(&out->slots, &out->n_slots, cap, bias + r.r_offset);
		if (err)
			return err;
	}
	return 0;
}

static int collect_module_slots(const struct dacce_module_info *m, const struct lookup *l,
				struct dacce_leaves *out, size_t *cap)
{
	Elf_Scn *scn = NULL;
	int fd, err = 0;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	fd = open(m->is_main ? "/proc/self/exe" : m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return -EBADMSG;
	}
	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			err = collect_slots(elf, scn, &sh, m->bias, l, out, cap);
	}
	elf_end(elf);
	close(fd);
	return err;
}

static int collect_targets(const struct lookup *l, struct dacce_leaves *out)
{
	size_t cap = 0;
	int err = 0;

	for (size_t i = 0; i < N_GROUPS && !err; i++) {
		const struct leaf_group *g = &l->groups[i];

		for (size_t k = 0; k < g->n && !err && g->library; k++) {
			void *at = definition_in(g, g->names[k]);

			if (at)
				err = push(&out->targets, &out->n_targets, &cap, (uintptr_t)at);
		}
	}
	return err;
}

static void open_groups(struct lookup *l)
{
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	bool libc_malloc = libc != NULL;

	l->groups[GROUP_LIBC] = (struct leaf_group){ libc, pure_leaves, N_OF(pure_leaves) };
	for (size_t i = 0; i < N_OF(malloc_family); i++)
		libc_malloc = libc_malloc && definition_in(&l->groups[GROUP_LIBC], malloc_family[i]);
	l->groups[GROUP_LIBC_MALLOC] =
		(struct leaf_group){ libc_malloc ? libc : NULL, malloc_leaves, N_OF(malloc_leaves) };
	l->groups[GROUP_LIBM] = (struct leaf_group){ dlopen("libm.so.6", RTLD_NOLOAD | RTLD_LAZY),
						     math_leaves, N_OF(math_leaves) };
	/* An old program's matherr would be called back by libm's error handling. */
	if (l->groups[GROUP_LIBM].library && dlsym(RTLD_DEFAULT, "matherr"))
		l->groups[GROUP_LIBM].n = 0;
}

static void close_groups(struct lookup *l)
{
	if (l->groups[GROUP_LIBC].library)
		dlclose(l->groups[GROUP_LIBC].library);
	if (l->groups[GROUP_LIBM].library)
		dlclose(l->groups[GROUP_LIBM].library);
}

int dacce_leaves_load(const struct dacce_module_info *const *mods, size_t n_mods,
		      struct dacce_leaves *leaves)
{
	struct lookup l;
	size_t cap = 0;
	int err = 0;

	memset(leaves, 0, sizeof(*leaves));
	open_groups(&l);
	if (!l.groups[GROUP_LIBC].library) {
		close_groups(&l);
		return -ENOENT;
	}
	for (size_t i = 0; i < n_mods && !err; i++)
		err = collect_module_slots(mods[i], &l, leaves, &cap);
	if (!err)
		err = collect_targets(&l, leaves);
	close_groups(&l);
	if (err) {
		dacce_leaves_fini(leaves);
		return err;
	}
	qsort(leaves->slots, leaves->n_slots, sizeof(*leaves->slots), by_address);
	qsort(leaves->targets, leaves->n_targets, sizeof(*leaves->targets), by_address);
	return 0;
}

void dacce_leaves_fini(struct dacce_leaves *leaves)
{
	if (!leaves)
		return;
	free(leaves->slots);
	free(leaves->targets);
	memset(leaves, 0, sizeof(*leaves));
}

static bool contains(const uint64_t *sorted, size_t n, uint64_t value)
{
	size_t at = dacce_lower_bound_u64(sorted, n, value);

	return value && at < n && sorted[at] == value;
}

bool dacce_leaves_is_leaf_call(const struct dacce_leaves *leaves, uintptr_t slot,
			       uintptr_t target)
{
	return contains(leaves->slots, leaves->n_slots, slot) ||
	       contains(leaves->targets, leaves->n_targets, target);
}
