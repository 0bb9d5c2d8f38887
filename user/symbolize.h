/* SPDX-License-Identifier: MIT */
/*
 * Symbols for `dacce report`: module file + link-time address -> the source
 * frames at that address, innermost inlined frame first, through elfutils
 * (DWARF when the file or its separate debug file has it, else .symtab or
 * .dynsym).  A link-time address is the ELF virtual address in the module:
 * the run-time address minus the module's load bias (for a non-PIE
 * executable they are equal).
 *
 * Each module file is opened once and each (module, address) answered once:
 * reports ask the same addresses again and again.  Everything returned
 * (results, frames, strings) stays valid until dacce_symbolizer_free().
 * Not thread-safe: one symbolizer per thread.
 *
 * An address in a PLT entry (.plt, .plt.sec, .plt.got) is named as perf and
 * objdump name it, after the function the entry jumps to: one
 * DACCE_SYM_SYMTAB frame "NAME@plt" (C++ names demangled first) whose start
 * is the entry's address.  The names come from the dynamic relocations and
 * .dynsym, which strip keeps.
 *
 * Separate debug info is looked up on the local disk only: by build-id under
 * /usr/lib/debug/.build-id/xx/yyyy.debug (and under any directory added with
 * dacce_symbolizer_add_debug_dir()), then by the .gnu_debuglink name (without
 * one: FILE.debug) in the file's directory, its .debug subdirectory and under
 * those debug directories (/usr/lib/debug/usr/bin/NAME for /usr/bin/prog),
 * and a dwz file by its .gnu_debugaltlink name; a file found by name must
 * carry the module's build-id (without one: match the debuglink CRC), as
 * elfutils' standard lookup checks too.
 *
 * debuginfod servers are asked, as elfutils tools do whenever DEBUGINFOD_URLS
 * is set (Debian's libdebuginfod-common can set it for every login shell),
 * only when the environment variable DACCE_DEBUGINFOD is "1" at
 * dacce_symbolizer_new(): a report should neither reach for the network nor
 * wait on it unless asked to.
 */
#ifndef DACCE_USER_SYMBOLIZE_H
#define DACCE_USER_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct dacce_symbolizer;

/* Where the frames of a result come from. */
enum dacce_sym_source {
	DACCE_SYM_UNKNOWN = 0, /* nothing in the module covers the address: no frames */
	DACCE_SYM_SYMTAB,      /* .symtab/.dynsym only, or a PLT entry: one frame, no file or line */
	DACCE_SYM_DWARF,       /* debug info: the inline chain, with files and lines */
};

/* One source frame. */
struct dacce_sym_frame {
	const char *function; /* demangled (C++); other names as the file spells them; never NULL */
	const char *file;     /* source file as the debug info names it; NULL without DWARF */
	uint32_t line;	      /* line of the address in this frame (in a frame another one is
				 inlined into: the line of that inlined call); 0 if unknown */
	uint32_t decl_line;   /* line where the function is declared; 0 if unknown */
	uint64_t start;	      /* link-time address where the function (for an inlined frame:
				 this inlined copy of it) starts; the symbol's value without DWARF */
	uint8_t inlined;      /* 1: inlined into the next frame of the result */
};

struct dacce_sym_result {
	const struct dacce_sym_frame *frames; /* innermost first, the containing function last */
	uint32_t n_frames;		      /* 0 for DACCE_SYM_UNKNOWN */
	uint8_t source;			      /* enum dacce_sym_source, for every frame */
};

/* Returns a new symbolizer, or NULL when out of memory. */
struct dacce_symbolizer *dacce_symbolizer_new(void);

/* Frees the symbolizer and everything it returned; NULL-safe. */
void dacce_symbolizer_free(struct dacce_symbolizer *sym);

/*
 * Adds a directory searched for separate debug files (DIR/.build-id/xx/yyyy.debug,
 * and by .gnu_debuglink name) before /usr/lib/debug.  Only before the first
 * dacce_symbolize().  Returns 0, -EINVAL (a relative path, a ':' in it, or too
 * late), or -ENOMEM.
 */
int dacce_symbolizer_add_debug_dir(struct dacce_symbolizer *sym, const char *dir);

/*
 * Symbolizes address (link-time) in the module file at path.  When build_id
 * is given (build_id_len > 0), the file must carry that GNU build-id: a file
 * rebuilt or upgraded since the program ran gives -ESTALE rather than wrong
 * names.
 *
 * Returns 0 and *out (DACCE_SYM_UNKNOWN when no function covers the address,
 * e.g. padding, a static function of a stripped file, the PLT's resolver
 * entry: the caller then prints something like "module+0xOFF"), or a
 * negative errno for the whole module with a one-line reason in *why (static
 * text): -ENOENT "no such file", -EACCES "permission denied", -EISDIR "is a
 * directory", -ENOEXEC "not an ELF file", "not a regular file" or "not an
 * executable or shared library", -EBADMSG "corrupt ELF file" (truncated,
 * say), -ESTALE "build-id mismatch" or "no build-id in file", -EINVAL "bad
 * arguments", -ENOMEM "out of memory".  A module that failed keeps failing
 * the same way without being opened again (except after -ENOMEM).  why may
 * be NULL; it is set to NULL on success.
 */
int dacce_symbolize(struct dacce_symbolizer *sym, const char *path, const uint8_t *build_id,
		    size_t build_id_len, uint64_t address, const struct dacce_sym_result **out,
		    const char **why);

/*
 * Reads the GNU build-id (NT_GNU_BUILD_ID note) of the ELF file at path into
 * id[0..cap).  Returns its length in bytes (> 0), or a negative errno with a
 * one-line reason in *why (static text; why may be NULL, and is set to NULL
 * on success): -ENODATA "no build-id in file", -ENOBUFS (longer than cap),
 * -EBADMSG, or the errors of dacce_symbolize() for files that cannot be read.
 */
int dacce_elf_build_id(const char *path, uint8_t *id, size_t cap, const char **why);

#endif
