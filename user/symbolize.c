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
 * demangled names and PLT names are allocated, once per string.
 *
 * Why a symbol index of our own: dwfl_module_addrinfo() reads every symbol
 * of the table for each address (~40 us for python3's .dynsym), and a report
 * asks thousands of addresses per module.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "hashmap.h"
#include "sorted.h"

/* Exported by libstdc++ with C linkage; declared here so no C++ header is needed. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define BUILD_ID_MAX 64
#define SYSTEM_DEBUG_DIR "/usr/lib/debug"
/* elfutils' default search path (see dwfl_standard_find_debuginfo in libdwfl.h). */
#define DEFAULT_DEBUG_PATH ":.debug:" SYSTEM_DEBUG_DIR
/* Asks debuginfod servers when "1" (see the header). */
#define DEBUGINFOD_ENV "DACCE_DEBUGINFOD"
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

/*
 * The symbols sharing one [start, end) range, and the one of them
 * dwfl_module_addrinfo() answers with when no other range covers an address.
 */
struct sym_range {
	uint64_t start, end;
	uint64_t before_end; /* the largest end of the ranges sorted before this one */
	const char *name;    /* NULL when that symbol is no code symbol (an object, say) */
	uint64_t value;	     /* its st_value */
};

/* A module's symbol table as libdwfl searches it, sorted for binary search. */
struct sym_index {
	struct sym_range *ranges; /* symbols with a size, by start then end */
	size_t n_ranges;
	uint64_t *labels; /* values of symbols without a size (assembly labels), sorted */
	size_t n_labels;
	uint64_t *abs_labels; /* those outside loaded sections: they answer for their value only */
	size_t n_abs_labels;
	bool built;
	bool exact; /* false: values libdwfl computes otherwise (descriptors, bias): ask it */
};

/* One PLT entry that jumps through a GOT slot with a named relocation. */
struct plt_entry {
	uint64_t start, end;
	const char *symbol; /* in .dynsym: libdwfl's data */
	char *label;	    /* "symbol@plt" (demangled), made when first asked */
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
	struct sym_index symbols;
	struct plt_entry *plt; /* by start */
	size_t n_plt;
	bool plt_read;
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

/* ------------------------------------------------------------ separate debug files */

/*
 * Why a find_debuginfo callback of our own: dwfl_standard_find_debuginfo()
 * ends by asking debuginfod servers whenever DEBUGINFOD_URLS is set, and
 * libdwfl 0.188 has no switch against it (its client is made on demand,
 * inside).  This one does the local part: libdwfl's own build-id lookup
 * (meant to be reused so, see libdwfl.h), then the search by name.
 */

/* What a debug file found by name must be. */
struct debug_want {
	const void *id; /* the build-id it must carry; NULL: none known */
	size_t id_len;
	GElf_Word crc; /* without id: the CRC-32 of its contents, unless 0 */
	dev_t main_dev; /* the main file, found again under another name, is no debug file */
	ino_t main_ino;
};

static bool file_has_build_id(int fd, const void *id, size_t id_len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	const void *bits;
	ssize_t len;
	bool same;

	if (!elf)
		return false;
	len = dwelf_elf_gnu_build_id(elf, &bits);
	same = len > 0 && (size_t)len == id_len && memcmp(bits, id, id_len) == 0;
	elf_end(elf);
	return same;
}

/* The CRC-32 .gnu_debuglink records is zlib's. */
static bool file_has_crc(int fd, GElf_Word crc)
{
	unsigned char buf[16384];
	uLong sum = crc32(0, NULL, 0);
	off_t at = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), at)) > 0) {
		sum = crc32(sum, buf, (uInt)n);
		at += n;
	}
	return n == 0 && sum == crc;
}

/* Opens path if it is the debug file wanted: returns its fd, or -1. */
static int open_debug_candidate(const char *path, const struct debug_want *want)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (st.st_dev == want->main_dev && st.st_ino == want->main_ino))
		goto cleanup;
	if (want->id ? file_has_build_id(fd, want->id, want->id_len)
		     : !want->crc || file_has_crc(fd, want->crc))
		return fd;
cleanup:
	close(fd);
	return -1;
}

/* Tries [dir/][sub/]name; on success *found owns the path (libdwfl frees it). */
static int try_debug_file(const char *dir, const char *sub, const char *name,
			  const struct debug_want *want, char **found)
{
	char *path;
	int fd, n;

	if (dir && sub)
		n = asprintf(&path, "%s/%s/%s", dir, sub, name);
	else if (dir || sub)
		n = asprintf(&path, "%s/%s", dir ? dir : sub, name);
	else
		n = asprintf(&path, "%s", name);
	if (n < 0)
		return -1;
	fd = open_debug_candidate(path, want);
	if (fd < 0)
		free(path);
	else
		*found = path;
	return fd;
}

/* Under debug directory root, for a file in /usr/bin: root/usr/bin, root/bin, then root. */
static int try_under_debug_dir(const char *root, const char *dir, const char *name,
			       const struct debug_want *want, char **found)
{
	for (const char *sub = dir; sub && sub[1]; sub = strchr(sub + 1, '/')) {
		int fd = try_debug_file(root, sub + 1, name, want, found);

		if (fd >= 0)
			return fd;
	}
	return try_debug_file(root, NULL, name, want, found);
}

/*
 * The .gnu_debuglink search along elfutils' path syntax: an empty entry is
 * the file's directory, a relative one a directory under it, an absolute
 * one a debug directory (CRC flags '+'/'-' are accepted and ignored).
 */
static int find_by_debuglink(const char *search_path, const char *file, const char *link,
			     const struct debug_want *want, char **found)
{
	const char *slash = strrchr(file, '/');
	char *copy = strdup(search_path), *dir = NULL, *rest, *entry;
	int fd = -1;

	if (slash)
		dir = strndup(file, (size_t)(slash - file));
	if (!copy || (slash && !dir))
		goto cleanup;
	rest = copy;
	while (fd < 0 && (entry = strsep(&rest, ":"))) {
		if (*entry == '+' || *entry == '-')
			entry++;
		if (!*entry)
			fd = try_debug_file(dir, NULL, link, want, found);
		else if (*entry != '/')
			fd = try_debug_file(dir, entry, link, want, found);
		else if (dir && dir[0] == '/')
			fd = try_under_debug_dir(entry, dir, link, want, found);
	}
cleanup:
	free(dir);
	free(copy);
	return fd;
}

/* By the .gnu_debuglink name, or without one by the name elfutils makes up: FILE.debug. */
static int find_by_name(const char *search_path, const char *file, const char *link,
			const struct debug_want *want, char **found)
{
	const char *slash = strrchr(file, '/');
	char *made_up;
	int fd;

	if (link)
		return find_by_debuglink(search_path, file, link, want, found);
	if (asprintf(&made_up, "%s.debug", slash ? slash + 1 : file) < 0)
		return -1;
	fd = find_by_debuglink(search_path, file, made_up, want, found);
	free(made_up);
	return fd;
}

/* The dwz file shared debug info refers to: its name is absolute or relative to the debug file. */
static int find_by_altlink(const char *debug_file, const char *alt, const struct debug_want *want,
			   char **found)
{
	const char *slash = strrchr(debug_file, '/');
	char *dir;
	int fd;

	if (alt[0] == '/' || !slash)
		return try_debug_file(NULL, NULL, alt, want, found);
	dir = strndup(debug_file, (size_t)(slash - debug_file));
	if (!dir)
		return -1;
	fd = try_debug_file(dir, NULL, alt, want, found);
	free(dir);
	return fd;
}

/* The dwz file of a module whose DWARF libdwfl has already (so asking for it does not recurse). */
static int find_dwz_file(Dwfl_Module *mod, const char *debug_file, const char *alt,
			 char **found)
{
	struct debug_want want = { 0 };
	const char *alt_name;
	Dwarf_Addr bias;
	Dwarf *dwarf = dwfl_module_getdwarf(mod, &bias);
	ssize_t len = dwarf ? dwelf_dwarf_gnu_debugaltlink(dwarf, &alt_name, &want.id) : -1;

	if (len <= 0)
		return -1;
	want.id_len = (size_t)len;
	return find_by_altlink(debug_file, alt, &want, found);
}

/*
 * libdwfl's find_debuginfo callback without debuginfod.  It is asked for the
 * debug file of the module (its debug Elf not set yet: dwbias is -1), and
 * then maybe for the dwz file that debug file's DWARF refers to.
 */
static int find_debuginfo_locally(Dwfl_Module *mod, void **userdata, const char *modname,
				  Dwarf_Addr base, const char *file, const char *link,
				  GElf_Word crc, char **found)
{
	const struct dacce_symbolizer *s = *userdata;
	struct debug_want want = { .crc = crc };
	const unsigned char *bits;
	Dwarf_Addr dwbias;
	struct stat st;
	GElf_Addr vaddr;
	int fd, len;

	fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file, link, crc, found);
	if (fd >= 0 || !file || !s)
		return fd;
	dwfl_module_info(mod, NULL, NULL, NULL, &dwbias, NULL, NULL, NULL);
	if (dwbias != (Dwarf_Addr)-1)
		return link ? find_dwz_file(mod, file, link, found) : -1;
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len > 0) {
		want.id = bits;
		want.id_len = (size_t)len;
	}
	if (stat(file, &st) == 0) {
		want.main_dev = st.st_dev;
		want.main_ino = st.st_ino;
	}
	return find_by_name(s->debug_path ? s->debug_path : DEFAULT_DEBUG_PATH, file, link, &want,
			    found);
}

/* The module's main file always comes with it (dwfl_report_elf): nothing to find. */
static int find_no_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	*elfp = NULL;
	return -1;
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

/* Checks the segments; records the executable ones: addresses outside them are never code. */
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
	void **userdata;

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
	/* find_debuginfo_locally() needs the search path. */
	dwfl_module_info(m->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = s;
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
	for (size_t i = 0; i < m->n_plt; i++)
		free(m->plt[i].label);
	free(m->plt);
	free(m->symbols.ranges);
	free(m->symbols.labels);
	free(m->symbols.abs_labels);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->exec);
	free(m->path);
	free(m);
}

/* elfutils' search path: the file's directory and its .debug, then ours, then the system's. */
static int build_debug_path(struct dacce_symbolizer *s)
{
	char *path;

	if (!s->extra_debug_dirs)
		return 0;
	if (asprintf(&path, ":.debug:%s:" SYSTEM_DEBUG_DIR, s->extra_debug_dirs) < 0)
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

/*
 * The index answers as dwfl_module_addrinfo() does (elfutils 0.188), where
 * it can decide alone.  libdwfl searches globals first (from first_global)
 * and locals only when no symbol with a size covers the address; among the
 * symbols with a size that cover it, a higher start or a stronger binding
 * wins, the first in table order on ties; without any, a label (a symbol
 * without size) of the address's section may answer if no symbol ends
 * between it and the address (a label outside sections, like the version
 * names of .dynsym, only for its own value).  So: when exactly one [start,
 * end) covers the address and no label sits at it, the answer is the winner
 * of that range; when none covers it and no label lies between the highest
 * end below and the address, there is none.  Nested ranges and nearby labels
 * are rare: those addresses go to libdwfl.
 */
enum sym_answer { SYM_NONE, SYM_FOUND, SYM_ASK_LIBDWFL };

/* A symbol as libdwfl's search sees it, while the index is built. */
struct sym_candidate {
	uint64_t start, end;
	uint32_t pass;	/* 0: searched first, 1: searched only when pass 0 finds nothing */
	int binding;	/* the stronger wins */
	uint32_t order; /* index in the table: the first wins ties */
	const char *name;
	GElf_Sym sym;
};

/* Functions, and labels from assembly (no type); never data, sections or files. */
static bool is_code_symbol(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

/* Whether libdwfl's search looks at the symbol at all. */
static bool is_searched(const char *name, const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return name && name[0] && sym->st_shndx != SHN_UNDEF && type != STT_SECTION &&
	       type != STT_FILE && type != STT_TLS;
}

static int binding_strength(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

/* By range, then as libdwfl prefers within one range: its pick comes first. */
static int compare_candidates(const void *a, const void *b)
{
	const struct sym_candidate *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->pass != y->pass)
		return x->pass < y->pass ? -1 : 1;
	if (x->binding != y->binding)
		return x->binding > y->binding ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Sorts the searched symbols into c (with a size) and x->labels (without).
 * Returns false when some value is not st_value as it is (libdwfl would
 * then compare other numbers) or a range wraps: the index is not exact.
 */
static bool gather_symbols(struct module *m, int n, int first_global, struct sym_candidate *c,
			   size_t *n_c)
{
	struct sym_index *x = &m->symbols;

	for (int i = 1; i < n; i++) {
		GElf_Word shndx;
		GElf_Addr value;
		Dwarf_Addr bias;
		GElf_Sym sym;
		Elf *elf;
		const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &value, &shndx, &elf, &bias);

		if (!is_searched(name, &sym))
			continue;
		if (value != sym.st_value || value + sym.st_size < value)
			return false;
		if (sym.st_size == 0 && shndx >= SHN_LORESERVE) {
			x->abs_labels[x->n_abs_labels++] = value;
			continue;
		}
		if (sym.st_size == 0) {
			x->labels[x->n_labels++] = value;
			continue;
		}
		c[(*n_c)++] = (struct sym_candidate){
			.start = value,
			.end = value + sym.st_size,
			.pass = first_global > 1 && i < first_global,
			.binding = binding_strength(&sym),
			.order = (uint32_t)i,
			.name = name,
			.sym = sym,
		};
	}
	return true;
}

/* One range per distinct [start, end) of the sorted candidates, named after the first. */
static void merge_ranges(struct sym_index *x, const struct sym_candidate *c, size_t n)
{
	uint64_t before_end = 0;

	for (size_t i = 0; i < n; i++) {
		struct sym_range *r = &x->ranges[x->n_ranges];

		if (i && c[i].start == c[i - 1].start && c[i].end == c[i - 1].end)
			continue;
		r->start = c[i].start;
		r->end = c[i].end;
		r->before_end = before_end;
		r->name = is_code_symbol(&c[i].sym) ? c[i].name : NULL;
		r->value = c[i].sym.st_value;
		if (c[i].end > before_end)
			before_end = c[i].end;
		x->n_ranges++;
	}
}

/* v with room for n elements only (v itself when realloc fails: it still fits). */
static void *shrink(void *v, size_t n, size_t size)
{
	void *smaller;

	if (n == 0) {
		free(v);
		return NULL;
	}
	smaller = realloc(v, n * size);
	return smaller ? smaller : v;
}

static void drop_symbol_index(struct sym_index *x)
{
	free(x->ranges);
	free(x->labels);
	free(x->abs_labels);
	*x = (struct sym_index){ 0 };
}

/* Builds m's index from libdwfl's table (.symtab of the file or its debug file, else .dynsym). */
static int build_symbol_index(struct module *m)
{
	int n = dwfl_module_getsymtab(m->mod), first_global;
	struct sym_index *x = &m->symbols;
	struct sym_candidate *c = NULL;
	size_t n_c = 0;
	int err = 0;

	first_global = n > 1 ? dwfl_module_getsymtab_first_global(m->mod) : -1;
	x->exact = true;
	if (first_global < 0)
		goto done; /* no table: libdwfl finds nothing either */
	c = calloc((size_t)n, sizeof(*c));
	x->ranges = calloc((size_t)n, sizeof(*x->ranges));
	x->labels = calloc((size_t)n, sizeof(*x->labels));
	x->abs_labels = calloc((size_t)n, sizeof(*x->abs_labels));
	if (!c || !x->ranges || !x->labels || !x->abs_labels) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!gather_symbols(m, n, first_global, c, &n_c)) {
		drop_symbol_index(x);
		goto done;
	}
	qsort(c, n_c, sizeof(*c), compare_candidates);
	qsort(x->labels, x->n_labels, sizeof(*x->labels), compare_u64);
	qsort(x->abs_labels, x->n_abs_labels, sizeof(*x->abs_labels), compare_u64);
	merge_ranges(x, c, n_c);
	/* Sized for every symbol of the table until now. */
	x->ranges = shrink(x->ranges, x->n_ranges, sizeof(*x->ranges));
	x->labels = shrink(x->labels, x->n_labels, sizeof(*x->labels));
	x->abs_labels = shrink(x->abs_labels, x->n_abs_labels, sizeof(*x->abs_labels));
done:
	x->built = true;
cleanup:
	if (err)
		drop_symbol_index(x);
	free(c);
	return err;
}

/* Whether one of the sorted values v[0..n) lies in [low, high]. */
static bool any_within(const uint64_t *v, size_t n, uint64_t low, uint64_t high)
{
	size_t at = dacce_lower_bound_u64(v, n, low);

	return at < n && v[at] <= high;
}

/* Whether a label may answer for address: in a section, in [low, address]; outside, at it. */
static bool label_within(const struct sym_index *x, uint64_t low, uint64_t address)
{
	return any_within(x->labels, x->n_labels, low, address) ||
	       any_within(x->abs_labels, x->n_abs_labels, address, address);
}

static enum sym_answer index_lookup(const struct sym_index *x, uint64_t address,
				    const struct sym_range **out)
{
	size_t lo = 0, hi = x->n_ranges;
	const struct sym_range *r;

	if (!x->exact)
		return SYM_ASK_LIBDWFL;
	/* The last range starting at or below address. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->ranges[mid].start <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return label_within(x, 0, address) ? SYM_ASK_LIBDWFL : SYM_NONE;
	r = &x->ranges[lo - 1];
	if (r->before_end > address)
		return SYM_ASK_LIBDWFL; /* an earlier range covers it too */
	if (address < r->end) {
		*out = r;
		return label_within(x, address, address) ? SYM_ASK_LIBDWFL : SYM_FOUND;
	}
	return label_within(x, r->end > r->before_end ? r->end : r->before_end, address)
		       ? SYM_ASK_LIBDWFL
		       : SYM_NONE;
}

/* The code symbol (from .symtab or .dynsym) holding address: *name stays NULL if none. */
static int code_symbol_at(struct module *m, uint64_t address, const char **name, uint64_t *value)
{
	const struct sym_range *r = NULL;
	GElf_Off offset;
	GElf_Sym sym;
	int err;

	*name = NULL;
	if (!m->symbols.built) {
		err = build_symbol_index(m);
		if (err)
			return err;
	}
	switch (index_lookup(&m->symbols, address, &r)) {
	case SYM_FOUND:
		*name = r->name;
		*value = r->value;
		return 0;
	case SYM_NONE:
		return 0;
	case SYM_ASK_LIBDWFL:
		break;
	}
	*name = dwfl_module_addrinfo(m->mod, address, &offset, &sym, NULL, NULL, NULL);
	if (*name && **name && is_code_symbol(&sym))
		*value = sym.st_value;
	else
		*name = NULL;
	return 0;
}

static bool in_exec_range(const struct module *m, uint64_t address)
{
	for (size_t i = 0; i < m->n_exec; i++)
		if (address >= m->exec[i].start && address < m->exec[i].end)
			return true;
	return false;
}

/* ------------------------------------------------------------ PLT entries */

/*
 * Why decode the entries rather than count them: every x86-64 layout (lazy
 * .plt, .plt.sec of IBT builds, .plt.got; endbr64 or bnd prefixes; -z now
 * or not) starts an entry that calls a function with a jump through that
 * function's GOT slot, and the slot is what a dynamic relocation names.
 * Entries that do not (the resolver entry, the lazy-binding stubs behind
 * .plt.sec) stay unnamed, as objdump leaves them.
 */

/* A GOT slot that a dynamic relocation fills with a function's address. */
struct got_slot {
	uint64_t address;
	const char *symbol;
};

struct slot_list {
	struct got_slot *v;
	size_t n, cap;
};

struct plt_list {
	struct plt_entry *v;
	size_t n, cap;
};

/* The dynamic symbol table a relocation section refers to. */
struct dynsym {
	Elf_Data *data;
	size_t strtab;
};

static int compare_slots(const void *a, const void *b)
{
	const struct got_slot *x = a, *y = b;

	return x->address < y->address ? -1 : x->address > y->address;
}

static int compare_plt_entries(const void *a, const void *b)
{
	const struct plt_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static bool dynsym_of(Elf *elf, const GElf_Shdr *rela, struct dynsym *out)
{
	Elf_Scn *scn = elf_getscn(elf, rela->sh_link);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
		return false;
	out->data = elf_getdata(scn, NULL);
	out->strtab = sh.sh_link;
	return out->data != NULL;
}

/* Adds the function slots of a relocation section: JUMP_SLOT (.rela.plt), GLOB_DAT (.rela.dyn). */
static int add_got_slots(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct slot_list *slots)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	struct dynsym dynsym;
	GElf_Rela rela;

	if (!data || !dynsym_of(elf, sh, &dynsym))
		return 0;
	for (int i = 0; i < INT32_MAX && gelf_getrela(data, i, &rela); i++) {
		uint64_t type = GELF_R_TYPE(rela.r_info), index = GELF_R_SYM(rela.r_info);
		struct got_slot *v;
		const char *name;
		GElf_Sym sym;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || index == 0 ||
		    index > INT32_MAX || !gelf_getsym(dynsym.data, (int)index, &sym))
			continue;
		name = elf_strptr(elf, dynsym.strtab, sym.st_name);
		if (!name || !*name)
			continue;
		v = reserve(slots->v, &slots->cap, slots->n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		slots->v = v;
		slots->v[slots->n++] = (struct got_slot){ rela.r_offset, name };
	}
	return 0;
}

static const char *slot_symbol(const struct slot_list *slots, uint64_t address)
{
	size_t lo = 0, hi = slots->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (slots->v[mid].address < address)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < slots->n && slots->v[lo].address == address ? slots->v[lo].symbol : NULL;
}

static uint32_t read_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The slot the entry at code jumps through: [endbr64] [bnd] jmp *disp32(%rip). */
static bool plt_entry_slot(const uint8_t *code, size_t len, uint64_t address, uint64_t *slot)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t at = 0;

	if (len >= sizeof(endbr64) && memcmp(code, endbr64, sizeof(endbr64)) == 0)
		at = sizeof(endbr64);
	if (at < len && code[at] == 0xf2) /* bnd */
		at++;
	if (len - at < 6 || code[at] != 0xff || code[at + 1] != 0x25)
		return false;
	/* disp32 is relative to the next instruction. */
	*slot = address + at + 6 + (uint64_t)(int64_t)(int32_t)read_le32(code + at + 2);
	return true;
}

/* .plt, .plt.sec, .plt.got (and the .plt.bnd of older MPX builds). */
static bool is_plt_section(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *name = elf_strptr(elf, shstrndx, sh->sh_name);

	return name && strncmp(name, ".plt", 4) == 0 && (name[4] == '\0' || name[4] == '.') &&
	       sh->sh_type == SHT_PROGBITS && (sh->sh_flags & SHF_EXECINSTR);
}

/* Adds the named entries of one PLT section; entries are sh_entsize apart (8 or 16). */
static int add_plt_entries(Elf_Scn *scn, const GElf_Shdr *sh, GElf_Addr bias,
			   const struct slot_list *slots, struct plt_list *entries)
{
	uint64_t stride = sh->sh_entsize == 8 || sh->sh_entsize == 16 ? sh->sh_entsize : 16;
	Elf_Data *data = elf_getdata(scn, NULL);

	if (!data || !data->d_buf)
		return 0;
	for (size_t at = 0; at < data->d_size; at += stride) {
		uint64_t address = sh->sh_addr + at, slot;
		struct plt_entry *v;
		const char *symbol;

		if (!plt_entry_slot((const uint8_t *)data->d_buf + at, data->d_size - at, address,
				    &slot))
			continue;
		symbol = slot_symbol(slots, slot);
		if (!symbol)
			continue;
		v = reserve(entries->v, &entries->cap, entries->n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		entries->v = v;
		entries->v[entries->n++] =
			(struct plt_entry){ address + bias, address + bias + stride, symbol, NULL };
	}
	return 0;
}

/* Reads every section of one kind: the relocations first, then the PLT sections. */
static int scan_sections(Elf *elf, GElf_Addr bias, struct slot_list *slots,
			 struct plt_list *entries)
{
	size_t shstrndx;
	int err = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	for (Elf_Scn *scn = NULL; !err && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			err = add_got_slots(elf, scn, &sh, slots);
	}
	if (err || slots->n == 0)
		return err;
	qsort(slots->v, slots->n, sizeof(*slots->v), compare_slots);
	for (Elf_Scn *scn = NULL; !err && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && is_plt_section(elf, shstrndx, &sh))
			err = add_plt_entries(scn, &sh, bias, slots, entries);
	}
	return err;
}

/* Finds m's named PLT entries, once. */
static int read_plt(struct module *m)
{
	struct plt_list entries = { 0 };
	struct slot_list slots = { 0 };
	GElf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);
	GElf_Ehdr ehdr;
	int err = 0;

	/* The decoding is x86-64's: other machines keep their PLT unnamed. */
	if (elf && gelf_getehdr(elf, &ehdr) && ehdr.e_machine == EM_X86_64)
		err = scan_sections(elf, bias, &slots, &entries);
	free(slots.v);
	if (err) {
		free(entries.v);
		return err;
	}
	if (entries.n)
		qsort(entries.v, entries.n, sizeof(*entries.v), compare_plt_entries);
	m->plt = entries.v;
	m->n_plt = entries.n;
	m->plt_read = true;
	return 0;
}

static struct plt_entry *plt_entry_at(const struct module *m, uint64_t address)
{
	size_t lo = 0, hi = m->n_plt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->plt[mid].start <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && address < m->plt[lo - 1].end ? &m->plt[lo - 1] : NULL;
}

/* The frame of the PLT entry holding address, if there is one. */
static int plt_frames(struct dacce_symbolizer *s, struct module *m, uint64_t address,
		      struct frame_list *list)
{
	struct plt_entry *e;
	const char *name;
	char *label;
	int err;

	if (!m->plt_read) {
		err = read_plt(m);
		if (err)
			return err;
	}
	e = plt_entry_at(m, address);
	if (!e)
		return 0;
	if (!e->label) {
		err = demangled(s, e->symbol, &name);
		if (err)
			return err;
		if (asprintf(&label, "%s@plt", name) < 0)
			return -ENOMEM;
		e->label = label;
	}
	return push_frame(list, &(struct dacce_sym_frame){ .function = e->label, .start = e->start });
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

/* The one frame a symbol gives. */
static int symbol_frames(struct dacce_symbolizer *s, struct module *m, uint64_t address,
			 struct frame_list *list)
{
	struct dacce_sym_frame frame = { 0 };
	const char *symbol;
	int err = code_symbol_at(m, address, &symbol, &frame.start);

	if (err || !symbol)
		return err;
	err = demangled(s, symbol, &frame.function);
	return err ? err : push_frame(list, &frame);
}

/* Symbolizes an address not asked before; *index as in by_address. */
static int lookup_address(struct dacce_symbolizer *s, struct module *m, uint64_t address,
			  uint32_t *index)
{
	struct frame_list list = { 0 };
	uint8_t source = DACCE_SYM_SYMTAB;
	const char *symbol;
	uint64_t value;
	int err = 0;

	*index = UNKNOWN_INDEX;
	if (!in_exec_range(m, address))
		goto cleanup;
	/* PLT entries have neither DWARF nor symbols; asked first, they cost a binary search. */
	err = plt_frames(s, m, address, &list);
	if (!err && list.n == 0) {
		source = DACCE_SYM_DWARF;
		err = dwarf_frames(s, m, address, &list);
	}
	if (!err && list.n == 0) {
		source = DACCE_SYM_SYMTAB;
		err = symbol_frames(s, m, address, &list);
	}
	if (err || list.n == 0)
		goto cleanup;
	/* A DIE without a name (rare): the symbol names the function better than nothing. */
	if (!list.v[list.n - 1].function) {
		err = code_symbol_at(m, address, &symbol, &value);
		if (!err && symbol)
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
	struct module *m = NULL;
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

static bool debuginfod_wanted(void)
{
	const char *value = getenv(DEBUGINFOD_ENV);

	return value && strcmp(value, "1") == 0;
}

struct dacce_symbolizer *dacce_symbolizer_new(void)
{
	struct dacce_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->callbacks.find_elf = find_no_elf;
	/* Read once: one symbolizer, one policy. */
	s->callbacks.find_debuginfo =
		debuginfod_wanted() ? dwfl_standard_find_debuginfo : find_debuginfo_locally;
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
