// SPDX-License-Identifier: MIT
/*
 * The symbolizer against a small shared library built here with gcc: a C
 * function with an inlined copy of a function from a header (-O2 -g), a C++
 * function in a namespace, a stripped copy, a copy without build-id, its
 * debug info alone under a .build-id directory, truncated and scribbled
 * copies.  Addresses come from running the library (dlopen): a return
 * address inside the inlined code, function addresses, minus the load bias.
 * Expected lines are found by markers in the generated sources.
 *
 * Also: programs calling libc through every PLT layout ld makes (PIE or
 * not, lazy or -z now, IBT's .plt.sec), whose entries objdump names for us;
 * a library of awkward symbols (aliases, nesting, labels) whose every
 * address is checked against dwfl_module_addrinfo(), what the symbolizer
 * used before its own index; debug files found by name; a debuginfod
 * "server" (a file:// URL) that must be asked only when allowed.
 */
#include <check.h>
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "symbolize.h"

static const char inline_header[] =
	"void *demo_where(void);\n"
	"\n"
	"static inline __attribute__((always_inline)) void *demo_inner(void) /* DECL_INNER */\n"
	"{\n"
	"\treturn demo_where(); /* MARK_INNER_CALL */\n"
	"}\n";

static const char c_source[] =
	"#include \"demo_inline.h\"\n"
	"\n"
	"__attribute__((noinline)) void *demo_where(void)\n"
	"{\n"
	"\treturn __builtin_return_address(0);\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) void *demo_outer(void) /* DECL_OUTER */\n"
	"{\n"
	"\tvoid *where = demo_inner(); /* MARK_OUTER_CALL */\n"
	"\treturn where;\n"
	"}\n"
	"\n"
	"static __attribute__((noinline)) int demo_hidden(int x) { return 3 * x + 1; } /* MARK_HIDDEN */\n"
	"\n"
	"void *demo_hidden_address(void) { return (void *)demo_hidden; }\n"
	"\n"
	"/* Symbols that are not functions: a label in data, an object in code. */\n"
	"__asm__(\".data\\n.globl demo_data_label\\ndemo_data_label: .quad 0\\n\"\n"
	"\t\".text\\n.globl demo_text_object\\n.type demo_text_object, @object\\n\"\n"
	"\t\".size demo_text_object, 16\\ndemo_text_object: .quad 0, 0\\n\");\n";

static const char cxx_source[] =
	"namespace demo {\n"
	"__attribute__((noinline)) int twice(int x) { return 2 * x; } /* MARK_TWICE */\n"
	"}\n"
	"\n"
	"extern \"C\" void *demo_twice_address(void) { return (void *)&demo::twice; }\n";

/* Calls through the PLT; the address of free is taken too (a GOT slot: .plt.got in a PIE). */
static const char plt_source[] =
	"#include <pthread.h>\n"
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"#include <unistd.h>\n"
	"\n"
	"static void *work(void *arg) { return arg; }\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tvoid (*volatile release)(void *) = free;\n"
	"\tchar *text = malloc(16);\n"
	"\tpthread_t thread;\n"
	"\n"
	"\tpthread_create(&thread, NULL, work, NULL);\n"
	"\tpthread_join(thread, NULL);\n"
	"\tsnprintf(text, 16, \"%d\", argc);\n"
	"\tputs(text);\n"
	"\tfree(text);\n"
	"\trelease(malloc(1));\n"
	"\treturn (int)strlen(argv[0]) + getpid() * 0;\n"
	"}\n";

/* The programs built from plt_source, each with a stripped copy "NAME-stripped". */
static const struct plt_program {
	const char *name;
	const char *flags;
	const char *sections[3]; /* PLT sections that must hold named entries */
} plt_programs[] = {
	{ "plt-pie", "-fPIE -pie", { ".plt", ".plt.got" } },
	{ "plt-nopie", "-fno-PIE -no-pie", { ".plt" } },
	{ "plt-pie-now", "-fPIE -pie -Wl,-z,now", { ".plt", ".plt.got" } },
	/* Debian's crt files carry no IBT note, so ld makes .plt.sec only when told to. */
	{ "plt-ibt", "-fPIE -pie -fcf-protection=full -Wl,-z,ibtplt", { ".plt.sec", ".plt.got" } },
	{ "plt-ibt-nopie-now", "-fno-PIE -no-pie -fcf-protection=full -Wl,-z,ibtplt -Wl,-z,now",
	  { ".plt.sec" } },
};

/*
 * Symbols that make libdwfl's choice subtle: aliases of one range (global,
 * weak, local), a local function nested in a global one, labels without
 * size or type, padding no symbol covers, a weak function alone, a local
 * function sharing its range with a unique global object (the weakest
 * binding, but searched before locals: no name), a global label inside a
 * local function (which it names only at its own address).  No debug info:
 * the answers come from .symtab (.dynsym in the stripped copy).
 */
static const char awkward_asm[] =
	"\t.text\n"
	"\t.p2align 4\n"
	"\t.globl aw_outer\n"
	"\t.type aw_outer, @function\n"
	"aw_outer:\n"
	"\t.skip 16, 0x90\n"
	"\t.type aw_inner, @function\n"
	"aw_inner:\n"
	"\t.skip 16, 0x90\n"
	"\t.size aw_inner, 16\n"
	"\t.skip 32, 0x90\n"
	"\t.size aw_outer, 64\n"
	"\t.globl aw_global\n"
	"\t.type aw_global, @function\n"
	"\t.weak aw_weak\n"
	"\t.type aw_weak, @function\n"
	"\t.type aw_local_alias, @function\n"
	"aw_local_alias:\n"
	"aw_weak:\n"
	"aw_global:\n"
	"\t.skip 32, 0x90\n"
	"\t.size aw_local_alias, 32\n"
	"\t.size aw_weak, 32\n"
	"\t.size aw_global, 32\n"
	"\t.skip 16, 0xcc\n"
	"\t.globl aw_label\n"
	"aw_label:\n"
	"\t.skip 16, 0x90\n"
	"\t.globl aw_after\n"
	"\t.type aw_after, @function\n"
	"aw_after:\n"
	"\t.skip 16, 0x90\n"
	"\t.size aw_after, 16\n"
	"aw_local_label:\n"
	"\t.skip 8, 0x90\n"
	"\t.weak aw_weak_only\n"
	"\t.type aw_weak_only, @function\n"
	"aw_weak_only:\n"
	"\t.skip 16, 0x90\n"
	"\t.size aw_weak_only, 16\n"
	"\t.globl aw_unique\n"
	"\t.type aw_unique, @gnu_unique_object\n"
	"\t.type aw_unique_local, @function\n"
	"aw_unique:\n"
	"aw_unique_local:\n"
	"\t.skip 16, 0x90\n"
	"\t.size aw_unique, 16\n"
	"\t.size aw_unique_local, 16\n"
	"\t.type aw_local_fn, @function\n"
	"aw_local_fn:\n"
	"\t.skip 8, 0x90\n"
	"\t.globl aw_entry\n"
	"aw_entry:\n"
	"\t.skip 8, 0x90\n"
	"\t.size aw_local_fn, 16\n"
	"\t.section .note.GNU-stack, \"\", @progbits\n";

static const char awkward_c[] =
	"static __attribute__((noinline, used)) int aw_static(int x) { return x * 7; }\n"
	"\n"
	"int aw_call(int x) { return aw_static(x) + 1; }\n";

/* The test inputs, made once for the test case (unchecked fixture). */
static char dir[64];
static char lib[PATH_MAX], stripped[PATH_MAX], no_id[PATH_MAX], debug_dir[PATH_MAX];
static char awkward[PATH_MAX], awkward_stripped[PATH_MAX];
static uint8_t lib_id[64];
static size_t lib_id_len;

/* Link-time addresses in the library. */
static uint64_t call_in_inlined_code; /* the call in demo_inner's copy inside demo_outer */
static uint64_t outer_start, hidden_start, twice_start;
static uint64_t data_label, text_object; /* symbols that are not functions */

/* ------------------------------------------------------------ helpers */

/* The 1-based line of text holding marker. */
static uint32_t line_of(const char *text, const char *marker)
{
	const char *at = strstr(text, marker);
	uint32_t line = 1;

	ck_assert_msg(at, "marker %s not in the source", marker);
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	return line;
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

static void path_in_dir(char *buf, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	ck_assert(n > 0 && n < PATH_MAX);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f, "cannot create %s", path);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static void *read_whole_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *data;
	long size;

	ck_assert_msg(f, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	ck_assert(size > 0);
	rewind(f);
	data = malloc((size_t)size);
	ck_assert_ptr_nonnull(data);
	ck_assert_uint_eq(fread(data, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*len = (size_t)size;
	return data;
}

static void run(const char *command)
{
	ck_assert_msg(system(command) == 0, "failed: %s", command);
}

/* Runs a shell command in the inputs directory. */
static void run_in_dir(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void run_in_dir(const char *format, ...)
{
	char command[4 * PATH_MAX];
	int at = snprintf(command, sizeof(command), "cd %s && ", dir), n;
	va_list ap;

	ck_assert(at > 0 && (size_t)at < sizeof(command));
	va_start(ap, format);
	n = vsnprintf(command + at, sizeof(command) - (size_t)at, format, ap);
	va_end(ap);
	ck_assert(n >= 0 && (size_t)n < sizeof(command) - (size_t)at);
	run(command);
}

static void hex(const uint8_t *bytes, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", bytes[i]);
	out[2 * len] = '\0';
}

/* Runs the library once to learn link-time addresses. */
static void learn_addresses(void)
{
	void *(*outer)(void), *(*hidden)(void), *(*twice)(void);
	struct link_map *map;
	void *handle;

	handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(handle, "dlopen: %s", dlerror());
	ck_assert_int_eq(dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);
	*(void **)&outer = dlsym(handle, "demo_outer");
	*(void **)&hidden = dlsym(handle, "demo_hidden_address");
	*(void **)&twice = dlsym(handle, "demo_twice_address");
	ck_assert(outer && hidden && twice);
	/* A return address is past the call: one byte back is inside it. */
	call_in_inlined_code = (uint64_t)(uintptr_t)outer() - 1 - map->l_addr;
	outer_start = (uint64_t)(uintptr_t)*(void **)&outer - map->l_addr;
	hidden_start = (uint64_t)(uintptr_t)hidden() - map->l_addr;
	twice_start = (uint64_t)(uintptr_t)twice() - map->l_addr;
	data_label = (uint64_t)(uintptr_t)dlsym(handle, "demo_data_label") - map->l_addr;
	text_object = (uint64_t)(uintptr_t)dlsym(handle, "demo_text_object") - map->l_addr;
	dlclose(handle);
}

/* Puts the library's debug info alone where a build-id lookup finds it. */
static void make_build_id_tree(void)
{
	char id_hex[2 * sizeof(lib_id) + 1], sub[PATH_MAX], command[4 * PATH_MAX];
	int n;

	hex(lib_id, lib_id_len, id_hex);
	path_in_dir(debug_dir, "debug");
	n = snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", debug_dir, id_hex);
	ck_assert(n > 0 && (size_t)n < sizeof(sub));
	n = snprintf(command, sizeof(command),
		     "mkdir -p %s && objcopy --only-keep-debug %s %s/%s.debug", sub, lib, sub,
		     id_hex + 2);
	ck_assert(n > 0 && (size_t)n < sizeof(command));
	run(command);
}

static void build_plt_programs(void)
{
	char path[PATH_MAX];

	path_in_dir(path, "plt.c");
	write_file(path, plt_source, strlen(plt_source));
	for (size_t i = 0; i < sizeof(plt_programs) / sizeof(plt_programs[0]); i++)
		run_in_dir("gcc -O0 -pthread %s -o %s plt.c && strip -o %s-stripped %s",
			   plt_programs[i].flags, plt_programs[i].name, plt_programs[i].name,
			   plt_programs[i].name);
}

static void build_awkward_library(void)
{
	char path[PATH_MAX];

	path_in_dir(path, "awkward.s");
	write_file(path, awkward_asm, strlen(awkward_asm));
	path_in_dir(path, "awkward.c");
	write_file(path, awkward_c, strlen(awkward_c));
	path_in_dir(awkward, "libawkward.so");
	path_in_dir(awkward_stripped, "libawkward-stripped.so");
	run_in_dir("gcc -O2 -fPIC -shared -o libawkward.so awkward.s awkward.c && "
		   "strip -o libawkward-stripped.so libawkward.so");
}

static void build_inputs(void)
{
	char path[PATH_MAX], command[4 * PATH_MAX];
	const char *why;
	int len, n;

	strcpy(dir, "/tmp/check_user_symbolize.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	path_in_dir(path, "demo_inline.h");
	write_file(path, inline_header, strlen(inline_header));
	path_in_dir(path, "demo.c");
	write_file(path, c_source, strlen(c_source));
	path_in_dir(path, "demo.cc");
	write_file(path, cxx_source, strlen(cxx_source));
	path_in_dir(lib, "libdemo.so");
	path_in_dir(stripped, "libdemo-stripped.so");
	path_in_dir(no_id, "libdemo-noid.so");
	/*
	 * No sibling calls: the call to demo_where must stay a call, not a jump.
	 * The same bytes whatever the temporary directory, so damage reproduces.
	 */
	n = snprintf(command, sizeof(command),
		     "cd %s && gcc -O2 -g -fPIC -shared -fno-optimize-sibling-calls "
		     "-fdebug-prefix-map=%s=/src -Wl,--build-id=sha1 -o libdemo.so demo.c demo.cc && "
		     "strip -o libdemo-stripped.so libdemo.so && "
		     "objcopy --remove-section .note.gnu.build-id libdemo.so libdemo-noid.so && "
		     "gcc -c -o demo.o demo.c",
		     dir, dir);
	ck_assert(n > 0 && (size_t)n < sizeof(command));
	run(command);
	len = dacce_elf_build_id(lib, lib_id, sizeof(lib_id), &why);
	ck_assert_msg(len > 0, "build-id of %s: %d %s", lib, len, why);
	lib_id_len = (size_t)len;
	make_build_id_tree();
	learn_addresses();
	build_plt_programs();
	build_awkward_library();
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_inputs(void)
{
	if (dir[0])
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Symbolizes and expects success. */
static const struct dacce_sym_result *symbolize_ok(struct dacce_symbolizer *s, const char *path,
						   const uint8_t *id, size_t id_len,
						   uint64_t address)
{
	const struct dacce_sym_result *r = NULL;
	const char *why = "unset";
	int err = dacce_symbolize(s, path, id, id_len, address, &r, &why);

	ck_assert_msg(err == 0, "%s+0x%llx: %d (%s)", path, (unsigned long long)address, err,
		      why ? why : "no reason");
	ck_assert_ptr_null(why);
	ck_assert_ptr_nonnull(r);
	return r;
}

static void expect_error(struct dacce_symbolizer *s, const char *path, const uint8_t *id,
			 size_t id_len, int expected_err, const char *expected_why)
{
	const struct dacce_sym_result *r = NULL;
	const char *why = NULL;

	ck_assert_int_eq(dacce_symbolize(s, path, id, id_len, call_in_inlined_code, &r, &why),
			 expected_err);
	ck_assert_ptr_null(r);
	ck_assert_ptr_nonnull(why);
	ck_assert_str_eq(why, expected_why);
}

/* The whole chain at the call inside the inlined copy, as DWARF tells it. */
static void expect_inline_chain(const struct dacce_sym_result *r)
{
	const struct dacce_sym_frame *inner, *outer;

	ck_assert_uint_eq(r->source, DACCE_SYM_DWARF);
	ck_assert_uint_eq(r->n_frames, 2);
	inner = &r->frames[0];
	outer = &r->frames[1];
	ck_assert_str_eq(inner->function, "demo_inner");
	ck_assert_str_eq(base_name(inner->file), "demo_inline.h");
	ck_assert_uint_eq(inner->line, line_of(inline_header, "MARK_INNER_CALL"));
	ck_assert_uint_eq(inner->decl_line, line_of(inline_header, "DECL_INNER"));
	ck_assert_uint_eq(inner->inlined, 1);
	/* The inlined copy starts inside demo_outer, at or before the call. */
	ck_assert(inner->start >= outer_start && inner->start <= call_in_inlined_code);
	ck_assert_str_eq(outer->function, "demo_outer");
	ck_assert_str_eq(base_name(outer->file), "demo.c");
	ck_assert_uint_eq(outer->line, line_of(c_source, "MARK_OUTER_CALL"));
	ck_assert_uint_eq(outer->decl_line, line_of(c_source, "DECL_OUTER"));
	ck_assert_uint_eq(outer->inlined, 0);
	ck_assert_uint_eq(outer->start, outer_start);
}

static void expect_one_frame(const struct dacce_sym_result *r, uint8_t source,
			     const char *function, uint64_t start)
{
	ck_assert_uint_eq(r->source, source);
	ck_assert_uint_eq(r->n_frames, 1);
	ck_assert_str_eq(r->frames[0].function, function);
	ck_assert_uint_eq(r->frames[0].start, start);
	ck_assert_uint_eq(r->frames[0].inlined, 0);
}

/* ------------------------------------------------------------ tests */

START_TEST(test_inline_chain_with_files_and_lines)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();

	ck_assert_ptr_nonnull(s);
	expect_inline_chain(symbolize_ok(s, lib, NULL, 0, call_in_inlined_code));
	/* The expected build-id changes nothing when it matches. */
	expect_inline_chain(symbolize_ok(s, lib, lib_id, lib_id_len, call_in_inlined_code));
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_function_start_and_static_function)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	const struct dacce_sym_result *r;

	r = symbolize_ok(s, lib, NULL, 0, outer_start);
	ck_assert_uint_eq(r->source, DACCE_SYM_DWARF);
	ck_assert_str_eq(r->frames[r->n_frames - 1].function, "demo_outer");
	r = symbolize_ok(s, lib, NULL, 0, hidden_start);
	expect_one_frame(r, DACCE_SYM_DWARF, "demo_hidden", hidden_start);
	ck_assert_str_eq(base_name(r->frames[0].file), "demo.c");
	ck_assert_uint_eq(r->frames[0].line, line_of(c_source, "MARK_HIDDEN"));
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_cxx_names_are_demangled)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	const struct dacce_sym_result *r;

	r = symbolize_ok(s, lib, NULL, 0, twice_start);
	expect_one_frame(r, DACCE_SYM_DWARF, "demo::twice(int)", twice_start);
	ck_assert_str_eq(base_name(r->frames[0].file), "demo.cc");
	ck_assert_uint_eq(r->frames[0].line, line_of(cxx_source, "MARK_TWICE"));
	ck_assert_uint_eq(r->frames[0].decl_line, line_of(cxx_source, "MARK_TWICE"));
	/* From .dynsym alone too. */
	r = symbolize_ok(s, stripped, NULL, 0, twice_start);
	expect_one_frame(r, DACCE_SYM_SYMTAB, "demo::twice(int)", twice_start);
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_stripped_file_falls_back_to_dynsym)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	const struct dacce_sym_result *r;

	r = symbolize_ok(s, stripped, lib_id, lib_id_len, call_in_inlined_code);
	expect_one_frame(r, DACCE_SYM_SYMTAB, "demo_outer", outer_start);
	ck_assert_ptr_null(r->frames[0].file);
	ck_assert_uint_eq(r->frames[0].line, 0);
	/* A static function is in no table of the stripped file. */
	r = symbolize_ok(s, stripped, lib_id, lib_id_len, hidden_start);
	ck_assert_uint_eq(r->source, DACCE_SYM_UNKNOWN);
	ck_assert_uint_eq(r->n_frames, 0);
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_separate_debug_info_found_by_build_id)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();

	ck_assert_int_eq(dacce_symbolizer_add_debug_dir(s, "/nonexistent-debug-dir"), 0);
	ck_assert_int_eq(dacce_symbolizer_add_debug_dir(s, debug_dir), 0);
	expect_inline_chain(symbolize_ok(s, stripped, lib_id, lib_id_len, call_in_inlined_code));
	/* The directory list is fixed once files are opened. */
	ck_assert_int_eq(dacce_symbolizer_add_debug_dir(s, debug_dir), -EINVAL);
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_addresses_outside_functions_are_unknown)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	const uint64_t addresses[] = { 0,	    1,		 0x40, UINT64_MAX, UINT64_MAX / 2,
				       data_label, data_label + 4, text_object, text_object + 8 };

	ck_assert(data_label && text_object);
	for (size_t i = 0; i < sizeof(addresses) / sizeof(addresses[0]); i++) {
		const char *files[] = { lib, stripped };

		for (int f = 0; f < 2; f++) {
			const struct dacce_sym_result *r =
				symbolize_ok(s, files[f], NULL, 0, addresses[i]);

			ck_assert_msg(r->source == DACCE_SYM_UNKNOWN && r->n_frames == 0,
				      "%s+0x%llx is named %s", files[f],
				      (unsigned long long)addresses[i],
				      r->n_frames ? r->frames[0].function : "");
		}
	}
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_results_are_cached_and_stay_valid)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	const struct dacce_sym_result *first, *again, *unknown;
	const char *inner_name;

	first = symbolize_ok(s, lib, NULL, 0, call_in_inlined_code);
	inner_name = first->frames[0].function;
	unknown = symbolize_ok(s, stripped, NULL, 0, hidden_start);
	for (int i = 0; i < 1000; i++)
		symbolize_ok(s, lib, NULL, 0, outer_start + (uint64_t)(i % 16));
	again = symbolize_ok(s, lib, NULL, 0, call_in_inlined_code);
	ck_assert_ptr_eq(again, first);
	ck_assert_ptr_eq(again->frames[0].function, inner_name);
	expect_inline_chain(first);
	ck_assert_ptr_eq(symbolize_ok(s, stripped, NULL, 0, hidden_start), unknown);
	/* The same file under an expected build-id is another module, with the same answers. */
	expect_inline_chain(symbolize_ok(s, lib, lib_id, lib_id_len, call_in_inlined_code));
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_build_id_mismatch_is_reported)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	uint8_t other_id[sizeof(lib_id)];

	memcpy(other_id, lib_id, lib_id_len);
	other_id[lib_id_len - 1] ^= 0x5a;
	expect_error(s, lib, other_id, lib_id_len, -ESTALE, "build-id mismatch");
	/* A prefix of the right build-id is not the right build-id. */
	expect_error(s, lib, lib_id, lib_id_len - 1, -ESTALE, "build-id mismatch");
	expect_error(s, no_id, lib_id, lib_id_len, -ESTALE, "no build-id in file");
	/* Failures are remembered, and do not spoil the file under its right build-id. */
	expect_error(s, lib, other_id, lib_id_len, -ESTALE, "build-id mismatch");
	expect_inline_chain(symbolize_ok(s, lib, lib_id, lib_id_len, call_in_inlined_code));
	/* Without an expected build-id, a file without one is fine. */
	expect_inline_chain(symbolize_ok(s, no_id, NULL, 0, call_in_inlined_code));
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_unusable_files_are_refused)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	char missing[PATH_MAX], source[PATH_MAX], empty[PATH_MAX], object[PATH_MAX];

	path_in_dir(missing, "no-such-file.so");
	path_in_dir(source, "demo.c");
	path_in_dir(empty, "empty.so");
	path_in_dir(object, "demo.o");
	write_file(empty, "", 0);
	expect_error(s, missing, NULL, 0, -ENOENT, "no such file");
	expect_error(s, dir, NULL, 0, -EISDIR, "is a directory");
	expect_error(s, "/dev/null", NULL, 0, -ENOEXEC, "not a regular file");
	expect_error(s, source, NULL, 0, -ENOEXEC, "not an ELF file");
	expect_error(s, empty, NULL, 0, -ENOEXEC, "not an ELF file");
	expect_error(s, "", NULL, 0, -ENOENT, "no such file");
	/* Symbol values in a relocatable object are no addresses. */
	expect_error(s, object, NULL, 0, -ENOEXEC, "not an executable or shared library");
	/* The symbolizer still works for good files. */
	expect_inline_chain(symbolize_ok(s, lib, NULL, 0, call_in_inlined_code));
	dacce_symbolizer_free(s);
}
END_TEST

/* Symbolizes a damaged copy: an error with a reason, or a well-formed result. */
static void symbolize_damaged(const char *path, uint64_t address)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	const struct dacce_sym_result *r = NULL;
	const char *why = NULL;
	int err = dacce_symbolize(s, path, NULL, 0, address, &r, &why);

	if (err) {
		ck_assert_int_lt(err, 0);
		ck_assert_ptr_nonnull(why);
		ck_assert_ptr_null(r);
	} else {
		ck_assert_ptr_nonnull(r);
		ck_assert_uint_le(r->source, DACCE_SYM_DWARF);
		for (uint32_t i = 0; i < r->n_frames; i++)
			ck_assert_ptr_nonnull(r->frames[i].function);
	}
	dacce_symbolizer_free(s);
}

START_TEST(test_truncated_files_are_refused)
{
	char path[PATH_MAX];
	size_t len, cut;
	uint8_t *data;

	path_in_dir(path, "truncated.so");
	data = read_whole_file(lib, &len);
	/* Within the ELF header, then through program headers, code, DWARF and section headers. */
	for (int i = 0; i < 40; i++) {
		struct dacce_symbolizer *s = dacce_symbolizer_new();
		const struct dacce_sym_result *r = NULL;
		const char *why = NULL;
		int err;

		cut = i < 8 ? (size_t)i * 9 : len * (size_t)(i - 7) / 33;
		write_file(path, data, cut);
		err = dacce_symbolize(s, path, NULL, 0, call_in_inlined_code, &r, &why);
		ck_assert_ptr_null(r);
		if (cut < 64) { /* not even a whole ELF header */
			ck_assert_msg(err == -ENOEXEC || err == -EBADMSG, "cut %zu: %d", cut, err);
		} else {
			ck_assert_msg(err == -EBADMSG, "cut %zu of %zu: %d", cut, len, err);
			ck_assert_str_eq(why, "corrupt ELF file");
		}
		dacce_symbolizer_free(s);
	}
	free(data);
}
END_TEST

/* A deterministic generator, so a failure reproduces. */
static uint64_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

START_TEST(test_scribbled_files_never_crash)
{
	uint64_t state = 42;
	char path[PATH_MAX];
	uint8_t *data;
	size_t len;

	path_in_dir(path, "scribbled.so");
	data = read_whole_file(lib, &len);
	for (int round = 0; round < 40; round++) {
		uint8_t *copy = malloc(len);

		ck_assert_ptr_nonnull(copy);
		memcpy(copy, data, len);
		/* Keep the ELF header's magic so the damage reaches the parsers. */
		for (int i = 0; i < 64; i++)
			copy[4 + next_random(&state) % (len - 4)] = (uint8_t)next_random(&state);
		write_file(path, copy, len);
		symbolize_damaged(path, call_in_inlined_code);
		free(copy);
	}
	free(data);
}
END_TEST

START_TEST(test_build_id_helper)
{
	char id_hex[2 * sizeof(lib_id) + 1], command[2 * PATH_MAX], line[512];
	uint8_t id[64], small[4];
	const char *why = "unset";
	FILE *readelf;
	bool found = false;

	/* Against binutils' view of the same note. */
	hex(lib_id, lib_id_len, id_hex);
	ck_assert(snprintf(command, sizeof(command), "readelf -n %s", lib) < (int)sizeof(command));
	readelf = popen(command, "r");
	ck_assert_ptr_nonnull(readelf);
	while (fgets(line, sizeof(line), readelf))
		if (strstr(line, "Build ID:") && strstr(line, id_hex))
			found = true;
	ck_assert_int_eq(pclose(readelf), 0);
	ck_assert_msg(found, "readelf does not show build-id %s", id_hex);
	ck_assert_uint_eq(lib_id_len, 20);

	ck_assert_int_eq(dacce_elf_build_id(stripped, id, sizeof(id), &why), (int)lib_id_len);
	ck_assert_ptr_null(why);
	ck_assert_mem_eq(id, lib_id, lib_id_len);
	ck_assert_int_eq(dacce_elf_build_id(lib, small, sizeof(small), &why), -ENOBUFS);
	ck_assert_int_eq(dacce_elf_build_id(no_id, id, sizeof(id), &why), -ENODATA);
	ck_assert_str_eq(why, "no build-id in file");
	ck_assert_int_eq(dacce_elf_build_id("/dev/null", id, sizeof(id), &why), -ENOEXEC);
	ck_assert_int_eq(dacce_elf_build_id(dir, id, sizeof(id), &why), -EISDIR);
	ck_assert_int_eq(dacce_elf_build_id("/nonexistent/x.so", id, sizeof(id), NULL), -ENOENT);
	ck_assert_int_eq(dacce_elf_build_id(NULL, id, sizeof(id), &why), -EINVAL);
}
END_TEST

START_TEST(test_bad_arguments_are_refused)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	const struct dacce_sym_result *r;
	uint8_t long_id[65] = { 0 };
	const char *why;

	ck_assert_int_eq(dacce_symbolize(NULL, lib, NULL, 0, 0, &r, &why), -EINVAL);
	ck_assert_str_eq(why, "bad arguments");
	ck_assert_int_eq(dacce_symbolize(s, NULL, NULL, 0, 0, &r, &why), -EINVAL);
	ck_assert_int_eq(dacce_symbolize(s, lib, NULL, 0, 0, NULL, &why), -EINVAL);
	ck_assert_int_eq(dacce_symbolize(s, lib, NULL, 4, 0, &r, NULL), -EINVAL);
	ck_assert_int_eq(dacce_symbolize(s, lib, long_id, sizeof(long_id), 0, &r, &why), -EINVAL);
	ck_assert_int_eq(dacce_symbolizer_add_debug_dir(s, "relative/dir"), -EINVAL);
	ck_assert_int_eq(dacce_symbolizer_add_debug_dir(s, "/a:/b"), -EINVAL);
	ck_assert_int_eq(dacce_symbolizer_add_debug_dir(NULL, "/a"), -EINVAL);
	dacce_symbolizer_free(s);
	dacce_symbolizer_free(NULL);
}
END_TEST

/* ------------------------------------------------------------ PLT entries */

#define MAX_PLT_LABELS 64

/* The entries objdump names "NAME@plt" (from its own reading of the relocations). */
struct plt_labels {
	struct {
		char section[16];
		uint64_t address;
		char label[128];
	} v[MAX_PLT_LABELS];
	size_t n;
	uint64_t plt_start; /* .plt's first entry: the resolver's, named after no function */
};

static void read_objdump_labels(const char *path, struct plt_labels *out)
{
	char command[2 * PATH_MAX], line[512], section[16] = "";
	FILE *objdump;
	int n;

	n = snprintf(command, sizeof(command), "objdump -d -j .plt -j .plt.sec -j .plt.got %s",
		     path);
	ck_assert(n > 0 && (size_t)n < sizeof(command));
	objdump = popen(command, "r");
	ck_assert_ptr_nonnull(objdump);
	while (fgets(line, sizeof(line), objdump)) {
		unsigned long long address;
		char label[128];
		size_t len;

		if (sscanf(line, "Disassembly of section %15[^:]:", section) == 1 ||
		    sscanf(line, "%llx <%127[^>]>:", &address, label) != 2)
			continue;
		if (strcmp(section, ".plt") == 0 && !out->plt_start)
			out->plt_start = address;
		len = strlen(label);
		if (len <= 4 || strcmp(label + len - 4, "@plt") != 0)
			continue;
		ck_assert_uint_lt(out->n, MAX_PLT_LABELS);
		strcpy(out->v[out->n].section, section);
		out->v[out->n].address = address;
		strcpy(out->v[out->n].label, label);
		out->n++;
	}
	ck_assert_int_eq(pclose(objdump), 0);
}

static bool has_label(const struct plt_labels *labels, const char *section, const char *label)
{
	for (size_t i = 0; i < labels->n; i++)
		if ((!section || strcmp(labels->v[i].section, section) == 0) &&
		    (!label || strcmp(labels->v[i].label, label) == 0))
			return true;
	return false;
}

/* Every entry objdump names gets that name, at its first and eighth byte. */
static void expect_plt_names(struct dacce_symbolizer *s, const char *path,
			     const struct plt_program *program)
{
	static const char *const called[] = { "puts@plt",	    "malloc@plt",
					      "free@plt",	    "snprintf@plt",
					      "pthread_create@plt", "pthread_join@plt",
					      "strlen@plt",	    "getpid@plt" };
	struct plt_labels labels = { 0 };
	const struct dacce_sym_result *r;

	read_objdump_labels(path, &labels);
	for (size_t i = 0; i < sizeof(called) / sizeof(called[0]); i++)
		ck_assert_msg(has_label(&labels, NULL, called[i]), "%s: objdump shows no %s", path,
			      called[i]);
	for (size_t i = 0; i < 3 && program->sections[i]; i++)
		ck_assert_msg(has_label(&labels, program->sections[i], NULL), "%s: nothing in %s",
			      path, program->sections[i]);
	for (size_t i = 0; i < labels.n; i++) {
		for (uint64_t offset = 0; offset < 8; offset += 7) {
			r = symbolize_ok(s, path, NULL, 0, labels.v[i].address + offset);
			ck_assert_msg(r->n_frames == 1 && r->source == DACCE_SYM_SYMTAB &&
					      strcmp(r->frames[0].function, labels.v[i].label) == 0,
				      "%s: %s+%llu is %s", path, labels.v[i].label,
				      (unsigned long long)offset,
				      r->n_frames ? r->frames[0].function : "unknown");
			expect_one_frame(r, DACCE_SYM_SYMTAB, labels.v[i].label,
					 labels.v[i].address);
		}
	}
	ck_assert_uint_ne(labels.plt_start, 0);
	r = symbolize_ok(s, path, NULL, 0, labels.plt_start);
	ck_assert_uint_eq(r->source, DACCE_SYM_UNKNOWN);
}

START_TEST(test_plt_entries_are_named)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();

	for (size_t i = 0; i < sizeof(plt_programs) / sizeof(plt_programs[0]); i++) {
		char path[PATH_MAX], stripped_path[PATH_MAX + 16];

		path_in_dir(path, plt_programs[i].name);
		snprintf(stripped_path, sizeof(stripped_path), "%s-stripped", path);
		expect_plt_names(s, path, &plt_programs[i]);
		expect_plt_names(s, stripped_path, &plt_programs[i]);
	}
	dacce_symbolizer_free(s);
}
END_TEST

/* ------------------------------------------------------------ symbol answers */

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file, const char *link, GElf_Word crc, char **debug_file)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file;
	(void)link;
	(void)crc;
	(void)debug_file;
	return -1;
}

/* What the symbolizer answered before it had an index: dwfl_module_addrinfo's code symbol. */
static const char *reference_symbol(Dwfl_Module *mod, uint64_t address, uint64_t *start)
{
	GElf_Off offset;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, address, &offset, &sym, NULL, NULL, NULL);
	int type = GELF_ST_TYPE(sym.st_info);

	if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
		return NULL;
	*start = sym.st_value;
	return name;
}

/* [start, end) of the file's executable segment. */
static void exec_segment(const char *path, uint64_t *start, uint64_t *end)
{
	int fd = open(path, O_RDONLY);
	size_t n_phdrs;
	Elf *elf;

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_ne(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	ck_assert_int_eq(elf_getphdrnum(elf, &n_phdrs), 0);
	*start = *end = 0;
	for (size_t i = 0; i < n_phdrs; i++) {
		GElf_Phdr ph;

		ck_assert_ptr_nonnull(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			*start = ph.p_vaddr;
			*end = ph.p_vaddr + ph.p_memsz;
		}
	}
	elf_end(elf);
	close(fd);
	ck_assert_uint_lt(*start, *end);
}

/* Adds to seen (a " NAME " list) the names given for the file's code, checked one by one. */
static void expect_answers_of_libdwfl(const char *path, char *seen, size_t seen_size)
{
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = no_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	Dwfl *dwfl = dwfl_begin(&callbacks);
	uint64_t start, end;
	Dwfl_Module *mod;

	ck_assert_ptr_nonnull(dwfl);
	dwfl_report_begin(dwfl);
	/* As the symbolizer reports it: at link-time addresses. */
	mod = dwfl_report_elf(dwfl, path, path, -1, 0, true);
	ck_assert_ptr_nonnull(mod);
	ck_assert_int_eq(dwfl_report_end(dwfl, NULL, NULL), 0);
	exec_segment(path, &start, &end);
	for (uint64_t a = start; a < end; a++) {
		const struct dacce_sym_result *r = symbolize_ok(s, path, NULL, 0, a);
		const char *got = r->n_frames ? r->frames[0].function : NULL;
		uint64_t ref_start = 0;
		const char *ref = reference_symbol(mod, a, &ref_start);
		char word[160];

		if (got && strstr(got, "@plt")) {
			ck_assert_msg(!ref, "%s+0x%llx: %s, was %s", path, (unsigned long long)a, got,
				      ref);
			continue;
		}
		ck_assert_msg((got == NULL) == (ref == NULL) && (!got || strcmp(got, ref) == 0),
			      "%s+0x%llx: %s, libdwfl says %s", path, (unsigned long long)a,
			      got ? got : "unknown", ref ? ref : "unknown");
		if (!got)
			continue;
		expect_one_frame(r, DACCE_SYM_SYMTAB, ref, ref_start);
		snprintf(word, sizeof(word), " %s ", got);
		if (!strstr(seen, word) && strlen(seen) + strlen(word) < seen_size)
			strcat(seen, word + 1);
	}
	dwfl_end(dwfl);
	dacce_symbolizer_free(s);
}

START_TEST(test_symbol_answers_are_libdwfl_answers)
{
	static const char *const expected[] = { " aw_outer ",	  " aw_global ", " aw_label ",
						" aw_after ",	  " aw_weak_only ", " aw_call ",
						" aw_entry " };
	char seen[2048] = " ";

	expect_answers_of_libdwfl(awkward, seen, sizeof(seen));
	/* The cases are there: aliases go to the global, the local inside aw_outer to aw_outer. */
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++)
		ck_assert_msg(strstr(seen, expected[i]), "%s not in%s", expected[i], seen);
	ck_assert_ptr_nonnull(strstr(seen, " aw_static "));
	ck_assert_ptr_nonnull(strstr(seen, " aw_local_fn "));
	ck_assert_ptr_null(strstr(seen, " aw_weak "));
	ck_assert_ptr_null(strstr(seen, " aw_local_alias "));
	ck_assert_ptr_null(strstr(seen, " aw_inner "));
	ck_assert_ptr_null(strstr(seen, " aw_unique_local "));
	strcpy(seen, " ");
	expect_answers_of_libdwfl(awkward_stripped, seen, sizeof(seen));
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++)
		ck_assert_msg(strstr(seen, expected[i]), "%s not in%s", expected[i], seen);
	ck_assert_ptr_null(strstr(seen, " aw_static "));
}
END_TEST

/* ------------------------------------------------------------ separate debug files */

/* Expects the inline chain at the call in the inlined code of the library's copy at name. */
static void expect_debug_info(struct dacce_symbolizer *s, const char *name, const uint8_t *id,
			      size_t id_len)
{
	char path[PATH_MAX];

	path_in_dir(path, name);
	expect_inline_chain(symbolize_ok(s, path, id, id_len, call_in_inlined_code));
}

/* Expects the library's copy at name to be named from .dynsym only. */
static void expect_no_debug_info(struct dacce_symbolizer *s, const char *name, const uint8_t *id,
				 size_t id_len)
{
	char path[PATH_MAX];

	path_in_dir(path, name);
	expect_one_frame(symbolize_ok(s, path, id, id_len, call_in_inlined_code),
			 DACCE_SYM_SYMTAB, "demo_outer", outer_start);
}

START_TEST(test_debug_file_found_by_name)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	char root[PATH_MAX];

	/*
	 * link/l.so names d.debug, found in link/.debug, or under a debug
	 * directory; plain/p.so names none: p.so.debug is looked for.
	 */
	run_in_dir("mkdir -p link/.debug under root%s/under other/.debug plain/.debug && "
		   "objcopy --only-keep-debug libdemo.so link/.debug/d.debug && "
		   "objcopy --strip-all --add-gnu-debuglink=link/.debug/d.debug libdemo.so link/l.so && "
		   "cp link/.debug/d.debug root%s/under/ && cp link/l.so under/ && "
		   "objcopy --only-keep-debug libdemo-noid.so other/.debug/d.debug && "
		   "cp link/l.so other/ && "
		   "cp libdemo-stripped.so plain/p.so && cp link/.debug/d.debug plain/.debug/p.so.debug",
		   dir, dir);
	path_in_dir(root, "root");
	ck_assert_int_eq(dacce_symbolizer_add_debug_dir(s, root), 0);
	expect_debug_info(s, "link/l.so", lib_id, lib_id_len);
	expect_debug_info(s, "under/l.so", lib_id, lib_id_len);
	expect_debug_info(s, "plain/p.so", lib_id, lib_id_len);
	/* The right name is not enough: the debug file of another build is refused. */
	expect_no_debug_info(s, "other/l.so", lib_id, lib_id_len);
	dacce_symbolizer_free(s);
}
END_TEST

START_TEST(test_debuglink_crc_checked_without_build_id)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();

	/* bad/n.so names a debug file one byte longer than the one it was linked with. */
	run_in_dir("mkdir -p crc/.debug bad/.debug && "
		   "objcopy --only-keep-debug libdemo-noid.so crc/.debug/n.debug && "
		   "objcopy --strip-all --add-gnu-debuglink=crc/.debug/n.debug libdemo-noid.so crc/n.so && "
		   "cp crc/n.so bad/ && cp crc/.debug/n.debug bad/.debug/ && "
		   "echo >> bad/.debug/n.debug");
	expect_debug_info(s, "crc/n.so", NULL, 0);
	expect_no_debug_info(s, "bad/n.so", NULL, 0);
	dacce_symbolizer_free(s);
}
END_TEST

/* Symbolizes the stripped library with a new symbolizer: DWARF only if debuginfod served it. */
static uint8_t source_with_debuginfod_url(void)
{
	struct dacce_symbolizer *s = dacce_symbolizer_new();
	const struct dacce_sym_result *r;
	uint8_t source;

	r = symbolize_ok(s, stripped, lib_id, lib_id_len, call_in_inlined_code);
	if (r->source == DACCE_SYM_DWARF)
		expect_inline_chain(r);
	else
		expect_one_frame(r, DACCE_SYM_SYMTAB, "demo_outer", outer_start);
	source = r->source;
	dacce_symbolizer_free(s);
	return source;
}

START_TEST(test_debuginfod_only_when_asked)
{
	char id_hex[2 * sizeof(lib_id) + 1], url[PATH_MAX + 16], cache[PATH_MAX];

	/* A debuginfod "server" libdebuginfod reads through curl's file:// support. */
	hex(lib_id, lib_id_len, id_hex);
	run_in_dir("mkdir -p server/buildid/%s && objcopy --only-keep-debug libdemo.so "
		   "server/buildid/%s/debuginfo", id_hex, id_hex);
	snprintf(url, sizeof(url), "file://%s/server", dir);
	path_in_dir(cache, "debuginfod-cache");
	ck_assert_int_eq(setenv("DEBUGINFOD_URLS", url, 1), 0);
	ck_assert_int_eq(setenv("DEBUGINFOD_CACHE_PATH", cache, 1), 0);
	ck_assert_int_eq(setenv("DACCE_DEBUGINFOD", "0", 1), 0);
	ck_assert_uint_eq(source_with_debuginfod_url(), DACCE_SYM_SYMTAB);
	ck_assert_int_eq(unsetenv("DACCE_DEBUGINFOD"), 0);
	ck_assert_uint_eq(source_with_debuginfod_url(), DACCE_SYM_SYMTAB);
	/* Not even the client's cache was looked at. */
	ck_assert_int_ne(access(cache, F_OK), 0);
	ck_assert_int_eq(setenv("DACCE_DEBUGINFOD", "1", 1), 0);
	ck_assert_uint_eq(source_with_debuginfod_url(), DACCE_SYM_DWARF);
	unsetenv("DACCE_DEBUGINFOD");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	unsetenv("DEBUGINFOD_URLS");
}
END_TEST

static Suite *symbolize_suite(void)
{
	Suite *s = suite_create("symbolize");
	TCase *tc = tcase_create("core");

	/* Built once in the parent, removed even when a test crashes. */
	tcase_add_unchecked_fixture(tc, build_inputs, remove_inputs);
	tcase_add_test(tc, test_inline_chain_with_files_and_lines);
	tcase_add_test(tc, test_function_start_and_static_function);
	tcase_add_test(tc, test_cxx_names_are_demangled);
	tcase_add_test(tc, test_stripped_file_falls_back_to_dynsym);
	tcase_add_test(tc, test_separate_debug_info_found_by_build_id);
	tcase_add_test(tc, test_addresses_outside_functions_are_unknown);
	tcase_add_test(tc, test_results_are_cached_and_stay_valid);
	tcase_add_test(tc, test_build_id_mismatch_is_reported);
	tcase_add_test(tc, test_unusable_files_are_refused);
	tcase_add_test(tc, test_truncated_files_are_refused);
	tcase_add_test(tc, test_scribbled_files_never_crash);
	tcase_add_test(tc, test_build_id_helper);
	tcase_add_test(tc, test_bad_arguments_are_refused);
	tcase_add_test(tc, test_plt_entries_are_named);
	tcase_add_test(tc, test_symbol_answers_are_libdwfl_answers);
	tcase_add_test(tc, test_debug_file_found_by_name);
	tcase_add_test(tc, test_debuglink_crc_checked_without_build_id);
	tcase_add_test(tc, test_debuginfod_only_when_asked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* Debug info comes from the files made here, never from a debuginfod server. */
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DACCE_DEBUGINFOD");
	return run_suite(symbolize_suite());
}
