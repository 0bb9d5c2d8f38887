// SPDX-License-Identifier: MIT
/*
 * Why one Dwfl per module: each module is reported at base 0 so that libdwfl
 * addresses are link-time addresses, and two modules at the same base would
 * overlap in one Dwfl.
 *
 * Why the file is checked with libelf before libdwfl sees it: the caller
 * needs a reason it can print ("build-id mismatch", "not an ELF file"), and
 * a file that is not a regular file (a FIFO) must never be read at all.
 *
 * Strings from the files (DWARF names, file names, symbol names) point into
 * data libdwfl keeps until dwfl_end(), so results use them directly; only
 * demangled names are allocated, once per mangled string.
 */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hashmap.h"

/* Exported by libstdc++ with C linkage; declared here so no C++ header is needed. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define BUILD_ID_MAX 64
#define SYSTEM_DEBUG_DIR "/usr/lib/debug"
/* The address map's value for "nothing covers this address". */
#define UNKNOWN_INDEX UINT32_MAX
#define NO_NAME "??"
/* Bounds on the walk down a CU's DIEs: deeper or longer is corrupt DWARF. */
#define MAX_SCOPE_DEPTH 256
#define MAX_DIES_VISITED (1u << 24)

/* A PF_X PT_LOAD segment, link-time [start, end). */
struct exec_range {
	uint64_t start, end;
};

/* The stored form of a result: the frames follow it in the same block. */
struct result {
	struct dacce_sym_result pub;
	struct dacce_sym_frame frames[];
};

struct module {
	char *path;
	uint8_t build_id[BUILD_ID_MAX]; /* expected; not checked when build_id_len is 0 */
	size_t build_id_len;
	int err;	 /* < 0: the module could not be used, why says why */
	const char *why; /* static text */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct exec_range *exec;
	size_t n_exec;
	struct dacce_hashmap by_address; /* address -> index in results, or UNKNOWN_INDEX */
	struct result **results;
	size_t n_results, cap_results;
};

struct dacce_symbolizer {
	Dwfl_Callbacks callbacks; /* every Dwfl points at it: the symbolizer never moves */
	char *debug_path;	  /* callbacks.debuginfo_path points here; NULL: elfutils' default */
	char *extra_debug_dirs;	  /* "DIR1:DIR2", searched before SYSTEM_DEBUG_DIR */
	bool started;		  /* a module was opened: the debug path is fixed */
	struct module **modules;
	size_t n_modules, cap_modules;
	struct dacce_hashmap module_by_key; /* hash of (path, build-id) -> index in modules */
	char **names;			    /* demangled names */
	size_t n_names, cap_names;
	struct dacce_hashmap name_by_mangled; /* address of the mangled string -> index in names */
};

/* A growing list of frames while a result is built. */
struct frame_list {
	struct dacce_sym_frame *v;
	size_t n, cap;
};

static const struct dacce_sym_result unknown_result = { .source = DACCE_SYM_UNKNOWN };

/* ------------------------------------------------------------ small helpers */

/* Returns v with room for element n (possibly moved), or NULL; *cap grows only on success. */
static void *reserve(void *v, size_t *cap, size_t n, size_t size)
{
	size_t new_cap;
	void *grown;

	if (n < *cap)
		return v;
	new_cap = *cap ? 2 * *cap : 8;
	grown = reallocarray(v, new_cap, size);
	if (grown)
		*cap = new_cap;
	return grown;
}

static int push_frame(struct frame_list *list, const struct dacce_sym_frame *frame)
{
	struct dacce_sym_frame *v = reserve(list->v, &list->cap, list->n, sizeof(*v));

	if (!v)
		return -ENOMEM;
	list->v = v;
	list->v[list->n++] = *frame;
	return 0;
}

static uint32_t clamp_u32(uint64_t x)
{
	return x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

/* FNV-1a over the path and the build-id, finished by a mixer. */
static uint64_t module_key(const char *path, const uint8_t *id, size_t id_len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *p = path; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
	for (size_t i = 0; i < id_len; i++)
		h = (h ^ id[i]) * 0x100000001b3ULL;
	return dacce_hash64(h ^ id_len);
}

static bool module_is(const struct module *m, const char *path, const uint8_t *id, size_t id_len)
{
	return m->build_id_len == id_len && (!id_len || memcmp(m->build_id, id, id_len) == 0) &&
	       strcmp(m->path, path) == 0;
}

/* ------------------------------------------------------------ opening files */

static const char *open_failure_reason(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		return "no such file";
	case EACCES:
	case EPERM:
		return "permission denied";
	case ENOMEM:
		return "out of memory";
	default:
		return "cannot open file";
	}
}

/* Opens path for reading if it is a regular file; never blocks on a FIFO. */
static int open_regular_file(const char *path, int *fd_out, uint64_t *size, const char **why)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		*why = open_failure_reason(errno);
		goto cleanup;
	}
	if (fstat(fd, &st) != 0) {
		err = -errno;
		*why = "cannot read file status";
		goto cleanup;
	}
	if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		*why = "is a directory";
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		*why = "not a regular file";
		goto cleanup;
	}
	*fd_out = fd;
	*size = (uint64_t)st.st_size;
	return 0;
cleanup:
	if (fd >= 0)
		close(fd);
	return err;
}

/* Opens path as an ELF file: *fd_out and *elf_out belong to the caller on success. */
static int open_elf(const char *path, int *fd_out, Elf **elf_out, uint64_t *size,
		    const char **why)
{
	Elf *elf = NULL;
	int fd = -1, err;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		*why = "libelf is unusable";
		return -ENOTSUP;
	}
	err = open_regular_file(path, &fd, size, why);
	if (err)
		goto cleanup;
	/* Read, not mapped: libelf checks every read against the file's size. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		*why = "not an ELF file";
		goto cleanup;
	}
	*fd_out = fd;
	*elf_out = elf;
	return 0;
cleanup:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return err;
}

/* Copies elf's build-id into id; returns its length or a negative errno. */
static int read_build_id(Elf *elf, uint8_t *id, size_t cap, const char **why)
{
	const void *bits;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &bits);

	if (len < 0) {
		*why = "corrupt ELF file";
		return -EBADMSG;
	}
	if (len == 0) {
		*why = "no build-id in file";
		return -ENODATA;
	}
	if ((size_t)len > cap || len > INT32_MAX) {
		*why = "build-id too long";
		return -ENOBUFS;
	}
	memcpy(id, bits, (size_t)len);
	return (int)len;
}

int dacce_elf_build_id(const char *path, uint8_t *id, size_t cap, const char **why)
{
	const char *reason = NULL;
	Elf *elf = NULL;
	int fd = -1, err;
	uint64_t size;

	if (!path || (cap && !id)) {
		err = -EINVAL;
		reason = "bad arguments";
		goto cleanup;
	}
	err = open_elf(path, &fd, &elf, &size, &reason);
	if (err)
		goto cleanup;
	err = read_build_id(elf, id, cap, &reason);
cleanup:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	if (why)
		*why = err < 0 ? reason : NULL;
	return err;
}

/* ------------------------------------------------------------ modules */

/* Only executables and shared objects have symbol values that are addresses. */
static int check_loadable(Elf *elf, const char **why)
{
	GElf_Ehdr ehdr;

	if (!gelf_getehdr(elf, &ehdr)) {
		*why = "corrupt ELF file";
		return -EBADMSG;
	}
	if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN) {
		*why = "not an executable or shared library";
		return -ENOEXEC;
	}
	return 0;
}

static int check_build_id(Elf *elf, const struct module *m, const char **why)
{
	uint8_t id[BUILD_ID_MAX];
	int len = read_build_id(elf, id, sizeof(id), why);

	if (len == -ENODATA)
		return -ESTALE; /* why: "no build-id in file" */
	if (len == -ENOBUFS || (len > 0 && ((size_t)len != m->build_id_len ||
					    memcmp(id, m->build_id, m->build_id_len) != 0))) {
		*why = "build-id mismatch";
		return -ESTALE;
	}
	return len < 0 ? len : 0;
}

static bool within_file(uint64_t offset, uint64_t len, uint64_t file_size)
{
	return offset <= file_size && len <= file_size - offset;
}

/*
 * A truncated file keeps a valid header, and libelf quietly drops the section
 * headers past its end (libdwfl then finds no symbols): the header tables,
 * every section and every segment must lie in the file.
 */
static int check_layout(Elf *elf, uint64_t file_size, const char **why)
{
	size_t n_sections;
	GElf_Ehdr ehdr;

	if (!gelf_getehdr(elf, &ehdr) || elf_getshdrnum(elf, &n_sections) != 0)
		goto corrupt;
	/* e_shnum is 0 when the count is too large for it (then section 0 holds it). */
	if (ehdr.e_shnum > n_sections)
		n_sections = ehdr.e_shnum;
	if (n_sections &&
	    !within_file(ehdr.e_shoff, (uint64_t)n_sections * ehdr.e_shentsize, file_size))
		goto corrupt;
	if (!within_file(ehdr.e_phoff, (uint64_t)ehdr.e_phnum * ehdr.e_phentsize, file_size))
		goto corrupt;
	for (size_t i = 1; i < n_sections; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			goto corrupt;
		if (sh.sh_type != SHT_NOBITS && !within_file(sh.sh_offset, sh.sh_size, file_size))
			goto corrupt;
	}
	return 0;
corrupt:
	*why = "corrupt ELF file";
	return -EBADMSG;
}

/* Records the executable segments (addresses outside them are never code); checks all segments. */
static int read_segments(Elf *elf, uint64_t file_size, struct module *m, const char **why)
{
	size_t n_phdrs;

	if (elf_getphdrnum(elf, &n_phdrs) != 0) {
		*why = "corrupt ELF file";
		return -EBADMSG;
	}
	for (size_t i = 0; i < n_phdrs; i++) {
		struct exec_range *v;
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) ||
		    (ph.p_type == PT_LOAD && !within_file(ph.p_offset, ph.p_filesz, file_size))) {
			*why = "corrupt ELF file";
			return -EBADMSG;
		}
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		v = reallocarray(m->exec, m->n_exec + 1, sizeof(*v));
		if (!v) {
			*why = "out of memory";
			return -ENOMEM;
		}
		m->exec = v;
		m->exec[m->n_exec++] = (struct exec_range){ ph.p_vaddr, ph.p_vaddr + ph.p_memsz };
	}
	return 0;
}

/* Hands fd to a new Dwfl holding only this module, at link-time addresses. */
static int report_module(struct dacce_symbolizer *s, struct module *m, int *fd)
{
	m->dwfl = dwfl_begin(&s->callbacks);
	if (!m->dwfl) {
		m->why = "out of memory";
		return -ENOMEM;
	}
	dwfl_report_begin(m->dwfl);
	/* ET_DYN with add_p_vaddr: base 0 is the bias, so addresses stay p_vaddr-based. */
	m->mod = dwfl_report_elf(m->dwfl, m->path, m->path, *fd, 0, true);
	if (!m->mod) {
		m->why = "corrupt ELF file";
		return -EBADMSG;
	}
	*fd = -1; /* libdwfl owns it now */
	if (dwfl_report_end(m->dwfl, NULL, NULL) != 0) {
		m->why = "corrupt ELF file";
		return -EBADMSG;
	}
	return 0;
}

/* Opens m's file; on failure m->why says why (and m stays unusable). */
static int open_module(struct dacce_symbolizer *s, struct module *m)
{
	Elf *elf = NULL;
	int fd = -1, err;
	uint64_t size;

	err = open_elf(m->path, &fd, &elf, &size, &m->why);
	if (err)
		goto cleanup;
	err = check_loadable(elf, &m->why);
	if (!err)
		err = check_layout(elf, size, &m->why);
	if (err)
		goto cleanup;
	if (m->build_id_len) {
		err = check_build_id(elf, m, &m->why);
		if (err)
			goto cleanup;
	}
	err = read_segments(elf, size, m, &m->why);
	if (err)
		goto cleanup;
	elf_end(elf);
	elf = NULL;
	err = report_module(s, m, &fd);
cleanup:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return err;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_results; i++)
		free(m->results[i]);
	free(m->results);
	dacce_hashmap_fini(&m->by_address);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->exec);
	free(m->path);
	free(m);
}

/* The debug path elfutils searches: the file's own directory and .debug, then ours, then the system's. */
static int build_debug_path(struct dacce_symbolizer *s)
{
	char *path;

	if (!s->extra_debug_dirs)
		return 0;
	if (asprintf(&path, ":.debug:%s:%s", s->extra_debug_dirs, SYSTEM_DEBUG_DIR) < 0)
		return -ENOMEM;
	free(s->debug_path);
	s->debug_path = path;
	return 0;
}

/* Creates, opens and records a module; one that fails to open is recorded too (with why). */
static int add_module(struct dacce_symbolizer *s, const char *path, const uint8_t *id,
		      size_t id_len, uint64_t key, struct module **out)
{
	struct module **modules;
	struct module *m;
	int err;

	if (s->n_modules >= UNKNOWN_INDEX)
		return -ENOMEM;
	modules = reserve(s->modules, &s->cap_modules, s->n_modules, sizeof(*modules));
	if (!modules)
		return -ENOMEM;
	s->modules = modules;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->path = strdup(path);
	if (!m->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (id_len) /* id may be NULL then */
		memcpy(m->build_id, id, id_len);
	m->build_id_len = id_len;
	dacce_hashmap_init(&m->by_address);
	s->started = true;
	m->err = open_module(s, m);
	/* Out of memory says nothing about the file: not remembered. */
	err = m->err == -ENOMEM ? -ENOMEM : 0;
	if (!err)
		err = dacce_hashmap_put(&s->module_by_key, key, (uint32_t)s->n_modules);
	if (err)
		goto cleanup;
	s->modules[s->n_modules++] = m;
	*out = m;
	return 0;
cleanup:
	module_free(m);
	return err;
}

static int find_module(struct dacce_symbolizer *s, const char *path, const uint8_t *id,
		       size_t id_len, struct module **out)
{
	uint64_t key = module_key(path, id, id_len);
	uint32_t index;
	int err;

	if (dacce_hashmap_get(&s->module_by_key, key, &index) == 0) {
		if (module_is(s->modules[index], path, id, id_len)) {
			*out = s->modules[index];
			return 0;
		}
		/* Two (path, build-id) pairs with one key: rare enough to search. */
		for (size_t i = 0; i < s->n_modules; i++) {
			if (module_is(s->modules[i], path, id, id_len)) {
				*out = s->modules[i];
				return 0;
			}
		}
	}
	if (!s->started) {
		err = build_debug_path(s);
		if (err)
			return err;
	}
	return add_module(s, path, id, id_len, key, out);
}

/* ------------------------------------------------------------ names */

/* The demangled form of a C++ name, made once per mangled string; other names unchanged. */
static int demangled(struct dacce_symbolizer *s, const char *name, const char **out)
{
	uint64_t key = (uint64_t)(uintptr_t)name;
	char **names, *plain;
	uint32_t index;
	int status, err;

	*out = name;
	if (strncmp(name, "_Z", 2) != 0)
		return 0;
	if (dacce_hashmap_get(&s->name_by_mangled, key, &index) == 0) {
		*out = s->names[index];
		return 0;
	}
	names = reserve(s->names, &s->cap_names, s->n_names, sizeof(*names));
	if (!names)
		return -ENOMEM;
	s->names = names;
	plain = __cxa_demangle(name, NULL, NULL, &status);
	if (!plain)
		return status == -1 ? -ENOMEM : 0; /* not a valid C++ name: keep it */
	err = dacce_hashmap_put(&s->name_by_mangled, key, (uint32_t)s->n_names);
	if (err) {
		free(plain);
		return err;
	}
	s->names[s->n_names++] = plain;
	*out = plain;
	return 0;
}

/*
 * The function's name from its DIE (or its abstract origin): the linkage name
 * when it demangles (C++ names qualified, with parameters), else DW_AT_name
 * (a C function renamed by an asm label keeps its source name), else the
 * linkage name as it is.
 */
static int die_function_name(struct dacce_symbolizer *s, Dwarf_Die *die, const char **out)
{
	Dwarf_Attribute attr;
	const char *linkage, *name;
	int err;

	linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!linkage)
		linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (linkage) {
		err = demangled(s, linkage, out);
		if (err || *out != linkage)
			return err;
	}
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	*out = name ? name : linkage;
	return 0;
}

/* ------------------------------------------------------------ DWARF frames */

/*
 * Where the DIE's code starts: its entry pc (or low pc), else its first range
 * (GCC lists a function's hot part before its cold part, which the linker
 * may place lower).
 */
static bool die_start(Dwarf_Die *die, Dwarf_Addr *start)
{
	Dwarf_Addr base, low, high;

	if (dwarf_entrypc(die, start) == 0)
		return true;
	if (dwarf_ranges(die, 0, &base, &low, &high) > 0) {
		*start = low;
		return true;
	}
	return false;
}

/* The frame a function DIE stands for, with the position given for it. */
static int die_frame(struct dacce_symbolizer *s, Dwarf_Die *die, Dwarf_Addr bias,
		     const char *file, uint32_t line, struct dacce_sym_frame *frame)
{
	Dwarf_Addr start = 0;
	int decl_line = 0, err;

	err = die_function_name(s, die, &frame->function);
	if (err)
		return err;
	if (die_start(die, &start))
		start += bias;
	if (dwarf_decl_line(die, &decl_line) != 0 || decl_line < 0)
		decl_line = 0;
	frame->file = file;
	frame->line = line;
	frame->decl_line = (uint32_t)decl_line;
	frame->start = start;
	frame->inlined = 0;
	return 0;
}

/* The source position an inlined copy was called from, from its DW_AT_call_* attributes. */
static void call_site(Dwarf_Die *inlined, Dwarf_Files *files, const char **file, uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word value;

	*file = NULL;
	*line = 0;
	if (files && dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) == 0)
		*file = dwarf_filesrc(files, value, NULL, NULL);
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0)
		*line = clamp_u32(value);
}

/* The position of address itself, from the line table. */
static void address_position(Dwfl_Module *mod, uint64_t address, const char **file,
			     uint32_t *line)
{
	Dwfl_Line *row = dwfl_module_getsrc(mod, address);
	int lineno = 0;

	*file = row ? dwfl_lineinfo(row, NULL, &lineno, NULL, NULL, NULL) : NULL;
	*line = *file && lineno > 0 ? (uint32_t)lineno : 0;
}

/* The DIEs of the functions around an address, outermost first. */
struct die_list {
	Dwarf_Die *v;
	size_t n, cap;
};

static bool is_function_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/*
 * Fills list with the functions and inlined copies whose code holds pc, by
 * descending from the CU into the child that holds pc, level after level.
 * Not dwarf_getscopes(): it leaks its array on bad DWARF, and past an inlined
 * copy it follows the abstract definition instead of the copy's callers.
 * The limits only stop loops in corrupt DWARF.
 */
static int functions_at(Dwarf_Die *cu, Dwarf_Addr pc, struct die_list *list)
{
	Dwarf_Die parent = *cu, child, next;
	size_t visited = 0;

	for (int depth = 0; depth < MAX_SCOPE_DEPTH; depth++) {
		Dwarf_Die *v;

		if (dwarf_child(&parent, &child) != 0)
			return 0;
		while (dwarf_haspc(&child, pc) <= 0) {
			if (++visited > MAX_DIES_VISITED || dwarf_siblingof(&child, &next) != 0)
				return 0;
			child = next;
		}
		parent = child;
		if (!is_function_tag(dwarf_tag(&child)))
			continue; /* a lexical block, say: look inside */
		v = reserve(list->v, &list->cap, list->n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		list->v = v;
		list->v[list->n++] = child;
	}
	return 0;
}

/*
 * The frames at address from the innermost: every inlined copy is a frame,
 * whose caller's position is its call site, up to the function that holds
 * them all.  Leaves list empty when no DWARF covers address.
 */
static int dwarf_frames(struct dacce_symbolizer *s, struct module *m, uint64_t address,
			struct frame_list *list)
{
	struct die_list functions = { 0 };
	Dwarf_Files *files = NULL;
	Dwarf_Addr bias = 0;
	const char *file;
	Dwarf_Die *cu;
	uint32_t line;
	int err;

	cu = dwfl_module_addrdie(m->mod, address, &bias);
	if (!cu)
		return 0;
	err = functions_at(cu, address - bias, &functions);
	if (err || functions.n == 0)
		goto cleanup;
	if (dwarf_getsrcfiles(cu, &files, NULL) != 0)
		files = NULL;
	address_position(m->mod, address, &file, &line);
	for (size_t i = functions.n; i-- > 0;) {
		Dwarf_Die *die = &functions.v[i];
		struct dacce_sym_frame frame;
		bool inlined = dwarf_tag(die) == DW_TAG_inlined_subroutine;

		err = die_frame(s, die, bias, file, line, &frame);
		if (err)
			goto cleanup;
		frame.inlined = inlined;
		err = push_frame(list, &frame);
		/* A function nested in another (GNU C) is not called by it. */
		if (err || !inlined)
			goto cleanup;
		call_site(die, files, &file, &line);
	}
cleanup:
	/* A chain cut short (no function around it) ends where it ends. */
	if (list->n)
		list->v[list->n - 1].inlined = 0;
	free(functions.v);
	return err;
}

/* ------------------------------------------------------------ symbol tables */

/* Functions, and labels from assembly (no type); never data, sections or files. */
static bool is_code_symbol(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

static bool in_exec_range(const struct module *m, uint64_t address)
{
	for (size_t i = 0; i < m->n_exec; i++)
		if (address >= m->exec[i].start && address < m->exec[i].end)
			return true;
	return false;
}

/* ------------------------------------------------------------ results */

static int store_result(struct module *m, const struct frame_list *list, uint8_t source,
			uint32_t *index)
{
	struct result **results, *r;

	if (m->n_results >= UNKNOWN_INDEX)
		return -ENOMEM;
	results = reserve(m->results, &m->cap_results, m->n_results, sizeof(*results));
	if (!results)
		return -ENOMEM;
	m->results = results;
	r = malloc(sizeof(*r) + list->n * sizeof(r->frames[0]));
	if (!r)
		return -ENOMEM;
	memcpy(r->frames, list->v, list->n * sizeof(r->frames[0]));
	r->pub.frames = r->frames;
	r->pub.n_frames = (uint32_t)list->n;
	r->pub.source = source;
	*index = (uint32_t)m->n_results;
	m->results[m->n_results++] = r;
	return 0;
}

/* The function symbol (from .symtab or .dynsym) holding address, or NULL. */
static const char *code_symbol_at(struct module *m, uint64_t address, GElf_Sym *sym)
{
	const char *name;
	GElf_Off offset;

	/* libdwfl searches every symbol: asked only when DWARF did not answer. */
	name = dwfl_module_addrinfo(m->mod, address, &offset, sym, NULL, NULL, NULL);
	return name && *name && is_code_symbol(sym) ? name : NULL;
}

/* Symbolizes an address not asked before; *index as in by_address. */
static int lookup_address(struct dacce_symbolizer *s, struct module *m, uint64_t address,
			  uint32_t *index)
{
	struct frame_list list = { 0 };
	uint8_t source = DACCE_SYM_DWARF;
	const char *symbol;
	GElf_Sym sym;
	int err = 0;

	*index = UNKNOWN_INDEX;
	if (!in_exec_range(m, address))
		goto cleanup;
	err = dwarf_frames(s, m, address, &list);
	if (err)
		goto cleanup;
	if (list.n == 0) {
		struct dacce_sym_frame frame = { 0 };

		symbol = code_symbol_at(m, address, &sym);
		if (!symbol)
			goto cleanup;
		source = DACCE_SYM_SYMTAB;
		frame.start = sym.st_value;
		err = demangled(s, symbol, &frame.function);
		if (!err)
			err = push_frame(&list, &frame);
		if (err)
			goto cleanup;
	}
	/* A DIE without a name (rare): the symbol names the function better than nothing. */
	if (!list.v[list.n - 1].function) {
		symbol = code_symbol_at(m, address, &sym);
		if (symbol)
			err = demangled(s, symbol, &list.v[list.n - 1].function);
		if (err)
			goto cleanup;
	}
	for (size_t i = 0; i < list.n; i++)
		if (!list.v[i].function)
			list.v[i].function = NO_NAME;
	err = store_result(m, &list, source, index);
cleanup:
	free(list.v);
	return err;
}

static const struct dacce_sym_result *result_at(const struct module *m, uint32_t index)
{
	return index == UNKNOWN_INDEX ? &unknown_result : &m->results[index]->pub;
}

int dacce_symbolize(struct dacce_symbolizer *s, const char *path, const uint8_t *build_id,
		    size_t build_id_len, uint64_t address, const struct dacce_sym_result **out,
		    const char **why)
{
	const char *reason = NULL;
	struct module *m;
	uint32_t index;
	int err;

	if (!s || !path || !out || (build_id_len && !build_id) || build_id_len > BUILD_ID_MAX) {
		err = -EINVAL;
		reason = "bad arguments";
		goto cleanup;
	}
	err = find_module(s, path, build_id, build_id_len, &m);
	if (err) {
		reason = "out of memory";
		goto cleanup;
	}
	if (m->err) {
		err = m->err;
		reason = m->why;
		goto cleanup;
	}
	if (dacce_hashmap_get(&m->by_address, address, &index) != 0) {
		err = lookup_address(s, m, address, &index);
		if (!err)
			err = dacce_hashmap_put(&m->by_address, address, index);
		if (err) {
			reason = "out of memory";
			goto cleanup;
		}
	}
	*out = result_at(m, index);
cleanup:
	if (why)
		*why = reason;
	return err;
}

/* ------------------------------------------------------------ life cycle */

struct dacce_symbolizer *dacce_symbolizer_new(void)
{
	struct dacce_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->callbacks.find_elf = dwfl_build_id_find_elf;
	s->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
	s->callbacks.section_address = dwfl_offline_section_address;
	s->callbacks.debuginfo_path = &s->debug_path;
	dacce_hashmap_init(&s->module_by_key);
	dacce_hashmap_init(&s->name_by_mangled);
	return s;
}

void dacce_symbolizer_free(struct dacce_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_modules; i++)
		module_free(s->modules[i]);
	free(s->modules);
	dacce_hashmap_fini(&s->module_by_key);
	for (size_t i = 0; i < s->n_names; i++)
		free(s->names[i]);
	free(s->names);
	dacce_hashmap_fini(&s->name_by_mangled);
	free(s->debug_path);
	free(s->extra_debug_dirs);
	free(s);
}

int dacce_symbolizer_add_debug_dir(struct dacce_symbolizer *s, const char *dir)
{
	char *dirs;
	int n;

	/* elfutils' path is ':'-separated and finds build-ids only under absolute directories. */
	if (!s || !dir || dir[0] != '/' || strchr(dir, ':') || s->started)
		return -EINVAL;
	if (s->extra_debug_dirs)
		n = asprintf(&dirs, "%s:%s", s->extra_debug_dirs, dir);
	else
		n = asprintf(&dirs, "%s", dir);
	if (n < 0)
		return -ENOMEM;
	free(s->extra_debug_dirs);
	s->extra_debug_dirs = dirs;
	return 0;
}
