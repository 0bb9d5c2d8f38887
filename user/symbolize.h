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
 * Separate debug info is looked up as elfutils' standard find_debuginfo
 * does: by build-id under /usr/lib/debug/.build-id/xx/yyyy.debug (and any
 * directory added with dacce_symbolizer_add_debug_dir()), then by
 * .gnu_debuglink.  Like every elfutils tool it also asks debuginfod servers
 * when DEBUGINFOD_URLS is set in the environment.
 */
#ifndef DACCE_USER_SYMBOLIZE_H
#define DACCE_USER_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct dacce_symbolizer;

/* Where the frames of a result come from. */
enum dacce_sym_source {
	DACCE_SYM_UNKNOWN = 0, /* nothing in the module covers the address: no frames */
	DACCE_SYM_SYMTAB,      /* .symtab/.dynsym only: one frame, no file or line */
	DACCE_SYM_DWARF,       /* debug info: the inline chain, with files and lines */
};

/* One source frame. */
struct dacce_sym_frame {
	const char *function; /* demangled (C++); other languages as in the file; never NULL */
	const char *file;     /* source file as the debug info names it; NULL without DWARF */
	uint32_t line;	      /* line of the address in this frame (for a frame another one
				 is inlined into: the line of that inlined call); 0 if unknown */
	uint32_t decl_line;   /* line where the function is declared; 0 if unknown */
	uint64_t start;	      /* link-time address where the function (for an inlined frame:
				 this inlined copy of it) starts */
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
 * Returns 0 and *out (DACCE_SYM_UNKNOWN when nothing covers the address:
 * the caller then prints something like "module+0xOFF"), or a negative errno
 * for the whole module with a one-line reason in *why (static text):
 * -ENOENT "no such file", -EACCES, -EISDIR "is a directory", -ENOEXEC "not
 * an ELF file" or "not a regular file", -EBADMSG "corrupt ELF file",
 * -ESTALE "build-id mismatch" or "no build-id in file", -EINVAL (bad
 * arguments), -ENOMEM.  A module that failed keeps failing the same way.
 * why may be NULL; it is set to NULL on success.
 */
int dacce_symbolize(struct dacce_symbolizer *sym, const char *path, const uint8_t *build_id,
		    size_t build_id_len, uint64_t address, const struct dacce_sym_result **out,
		    const char **why);

/*
 * Reads the GNU build-id (NT_GNU_BUILD_ID note) of the ELF file at path into
 * id[0..cap).  Returns its length in bytes (> 0), or a negative errno with a
 * one-line reason in *why (static text; why may be NULL): -ENODATA "no
 * build-id in file", -ENOBUFS (longer than cap), or the errors of
 * dacce_symbolize() for files that cannot be read.
 */
int dacce_elf_build_id(const char *path, uint8_t *id, size_t cap, const char **why);

#endif
