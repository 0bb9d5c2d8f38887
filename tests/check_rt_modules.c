// SPDX-License-Identifier: MIT
/*
 * Module discovery and function bounds, tried on this very program: it is a
 * module itself, it links libc (shipped without .symtab on Debian, so its
 * bounds come from .dynsym and .eh_frame), it runs under the dynamic loader
 * and has a vDSO.  Odd files (stripped, truncated, not ELF) must give
 * errors or FDE-only tables, never a crash.
 */
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "check_main.h"
#include "funcs.h"
#include "modules.h"

#define NOINLINE __attribute__((noinline, noipa))

/* A function of this program with a .symtab entry and an FDE. */
static NOINLINE int probe_function(int x)
{
	return 3 * x + 1;
}

/* Calls an imported function: through the PLT in a PIE built with -fplt. */
static NOINLINE int plt_caller(void)
{
	return (int)getpid() + 1;
}

/* Where libc's sort called the comparator from: inside libc's own code. */
static void *volatile comparator_return_address;

static NOINLINE int compare_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	comparator_return_address = __builtin_return_address(0);
	return (x > y) - (x < y);
}

/* ------------------------------------------------------------ helpers */

static void self_path(char *buf, size_t size)
{
	ssize_t len = readlink("/proc/self/exe", buf, size - 1);

	ck_assert_int_gt(len, 0);
	buf[len] = '\0';
}

/*
 * libc's own definition of a symbol.  Looked up through libc's handle, so
 * that a sanitizer's interceptor of the same name is not what we get.
 */
static void *libc_symbol(const char *name)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *sym;

	ck_assert_ptr_nonnull(libc);
	sym = dlsym(libc, name);
	ck_assert_ptr_nonnull(sym);
	dlclose(libc);
	return sym;
}

static const struct dacce_module_info *only_module(const struct dacce_modules *mods,
						   size_t flag_offset)
{
	const struct dacce_module_info *found = NULL;
	size_t count = 0;

	for (size_t i = 0; i < mods->n; i++) {
		const bool *flag = (const bool *)((const char *)&mods->mods[i] + flag_offset);

		if (*flag) {
			found = &mods->mods[i];
			count++;
		}
	}
	ck_assert_uint_eq(count, 1);
	return found;
}

#define ONLY_MODULE(mods, flag) only_module(mods, offsetof(struct dacce_module_info, flag))

static void assert_sorted_and_disjoint(const struct dacce_funcs *funcs)
{
	for (size_t i = 0; i < funcs->n; i++) {
		ck_assert_uint_lt(funcs->funcs[i].start, funcs->funcs[i].end);
		if (i + 1 < funcs->n)
			ck_assert_uint_le(funcs->funcs[i].end, funcs->funcs[i + 1].start);
	}
}

/* The GNU build-id as the file's section headers give it (what `readelf -n` shows). */
static size_t build_id_from_file(const char *path, uint8_t *id, size_t size)
{
	FILE *file = fopen(path, "rb");
	Elf_Scn *scn = NULL;
	size_t len = 0;
	Elf *elf;

	ck_assert_ptr_nonnull(file);
	ck_assert_int_ne(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_begin(fileno(file), ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	while ((scn = elf_nextscn(elf, scn)) != NULL && len == 0) {
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t offset = 0, name_at, desc_at;
		GElf_Shdr sh;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !data)
			continue;
		while ((offset = gelf_getnote(data, offset, &nh, &name_at, &desc_at)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)data->d_buf + name_at, "GNU", 4) == 0 &&
			    nh.n_descsz <= size) {
				memcpy(id, (char *)data->d_buf + desc_at, nh.n_descsz);
				len = nh.n_descsz;
				break;
			}
		}
	}
	elf_end(elf);
	fclose(file);
	return len;
}

static void *read_whole_file(const char *path, size_t *len)
{
	FILE *file = fopen(path, "rb");
	void *buf;
	long size;

	ck_assert_ptr_nonnull(file);
	ck_assert_int_eq(fseek(file, 0, SEEK_END), 0);
	size = ftell(file);
	ck_assert_int_gt(size, 0);
	rewind(file);
	buf = malloc((size_t)size);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)size, file), (size_t)size);
	fclose(file);
	*len = (size_t)size;
	return buf;
}

static void write_whole_file(const char *path, const void *buf, size_t len)
{
	FILE *file = fopen(path, "wb");

	ck_assert_ptr_nonnull(file);
	ck_assert_uint_eq(fwrite(buf, 1, len, file), len);
	ck_assert_int_eq(fclose(file), 0);
}

/* Loads the function table of a file as if it were a module loaded at its link address. */
static int load_file(const char *path, struct dacce_funcs *funcs)
{
	struct dacce_module_info fake = { .path = (char *)path, .bias = 0 };

	return dacce_funcs_load(&fake, funcs);
}

/* ------------------------------------------------------------ modules */

START_TEST(test_main_program_is_the_first_module)
{
	struct dacce_modules mods;
	const struct dacce_module_info *main_mod;
	char path[PATH_MAX];

	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	ck_assert_uint_ge(mods.n, 3);
	main_mod = ONLY_MODULE(&mods, is_main);
	ck_assert_ptr_eq(main_mod, &mods.mods[0]);
	self_path(path, sizeof(path));
	ck_assert_str_eq(main_mod->path, path);
	ck_assert_ptr_eq(dacce_modules_find(&mods, (uintptr_t)&probe_function), main_mod);
	ck_assert(dacce_module_is_exec(main_mod, (uintptr_t)&probe_function));
	/* Data is in the module's span but not in an executable segment. */
	ck_assert_ptr_eq(dacce_modules_find(&mods, (uintptr_t)&comparator_return_address),
			 main_mod);
	ck_assert(!dacce_module_is_exec(main_mod, (uintptr_t)&comparator_return_address));
	ck_assert_uint_ge(main_mod->n_exec, 1);
	ck_assert_ptr_null(dacce_modules_find(&mods, 0));
	dacce_modules_fini(&mods);
	dacce_modules_fini(&mods); /* safe twice */
}
END_TEST

START_TEST(test_main_build_id_is_the_files)
{
	struct dacce_modules mods;
	uint8_t expected[DACCE_BUILD_ID_MAX];
	size_t expected_len;

	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	expected_len = build_id_from_file(mods.mods[0].path, expected, sizeof(expected));
	/* gcc on Debian always asks the linker for a SHA-1 build-id. */
	ck_assert_uint_eq(expected_len, 20);
	ck_assert_uint_eq(mods.mods[0].build_id_len, expected_len);
	ck_assert_mem_eq(mods.mods[0].build_id, expected, expected_len);
	dacce_modules_fini(&mods);
}
END_TEST

START_TEST(test_libc_loader_and_vdso)
{
	uintptr_t qsort_addr = (uintptr_t)libc_symbol("qsort");
	const struct dacce_module_info *libc, *loader, *vdso;
	struct dacce_modules mods;
	struct dacce_funcs funcs;

	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	libc = dacce_modules_find(&mods, qsort_addr);
	ck_assert_ptr_nonnull(libc);
	ck_assert_ptr_nonnull(strstr(libc->path, "libc.so.6"));
	ck_assert(!libc->is_main && !libc->is_loader && !libc->is_vdso);
	ck_assert(dacce_module_is_exec(libc, qsort_addr));
	ck_assert_uint_eq(libc->build_id_len, 20);

	loader = ONLY_MODULE(&mods, is_loader);
	ck_assert_ptr_nonnull(strstr(loader->path, "ld-linux-x86-64.so.2"));
	ck_assert_uint_eq(loader->bias, getauxval(AT_BASE));
	ck_assert_ptr_eq(dacce_modules_find(&mods, getauxval(AT_BASE)), loader);

	vdso = ONLY_MODULE(&mods, is_vdso);
	ck_assert_ptr_eq(dacce_modules_find(&mods, getauxval(AT_SYSINFO_EHDR)), vdso);
	ck_assert_uint_ge(vdso->n_exec, 1);
	ck_assert_int_eq(dacce_funcs_load(vdso, &funcs), -ENOENT);
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
}
END_TEST

START_TEST(test_dlopen_is_noticed)
{
	const char *lib = "libanl.so.1"; /* part of libc6, loaded by nobody here */
	struct dacce_modules before, after;
	void *handle;

	ck_assert_ptr_null(dlopen(lib, RTLD_NOW | RTLD_NOLOAD));
	ck_assert_int_eq(dacce_modules_scan(&before), 0);
	ck_assert(!dacce_modules_changed(&before));
	handle = dlopen(lib, RTLD_NOW);
	ck_assert_ptr_nonnull(handle);
	ck_assert(dacce_modules_changed(&before));
	ck_assert_int_eq(dacce_modules_scan(&after), 0);
	ck_assert(!dacce_modules_changed(&after));
	ck_assert_uint_eq(after.n, before.n + 1);
	ck_assert_ptr_nonnull(strstr(after.mods[after.n - 1].path, lib));
	dlclose(handle);
	dacce_modules_fini(&after);
	dacce_modules_fini(&before);
}
END_TEST

/* ------------------------------------------------------------ function bounds */

START_TEST(test_static_function_bounds)
{
	uintptr_t probe = (uintptr_t)&probe_function;
	const struct dacce_func *fn;
	struct dacce_modules mods;
	struct dacce_funcs funcs;

	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	ck_assert_int_eq(dacce_funcs_load(&mods.mods[0], &funcs), 0);
	assert_sorted_and_disjoint(&funcs);
	fn = dacce_funcs_find(&funcs, probe);
	ck_assert_ptr_nonnull(fn);
	ck_assert_uint_eq(fn->start, probe);
	ck_assert_uint_gt(fn->end, probe);
	ck_assert_str_eq(fn->name, "probe_function");
	ck_assert_uint_eq(fn->flags & (DACCE_FUNC_SYMBOL | DACCE_FUNC_FDE),
			  DACCE_FUNC_SYMBOL | DACCE_FUNC_FDE);
	ck_assert_ptr_eq(dacce_funcs_find(&funcs, fn->end - 1), fn);
	ck_assert_ptr_null(dacce_funcs_find(&funcs, (uintptr_t)&comparator_return_address));
	ck_assert_ptr_null(dacce_funcs_find(&funcs, 0));
	dacce_funcs_fini(&funcs);
	dacce_funcs_fini(&funcs); /* safe twice */
	dacce_modules_fini(&mods);
}
END_TEST

START_TEST(test_libc_bounds_without_symtab)
{
	int (*libc_qsort_fn)(void *, size_t, size_t, int (*)(const void *, const void *));
	uintptr_t qsort_addr = (uintptr_t)libc_symbol("qsort");
	const struct dacce_func *fn, *internal;
	int values[] = { 3, 1, 2, 5, 4 };
	struct dacce_modules mods;
	struct dacce_funcs funcs;
	uintptr_t inside;
	Dl_info info;

	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	ck_assert_int_eq(dacce_funcs_load(dacce_modules_find(&mods, qsort_addr), &funcs), 0);
	assert_sorted_and_disjoint(&funcs);
	fn = dacce_funcs_find(&funcs, qsort_addr);
	ck_assert_ptr_nonnull(fn);
	ck_assert_uint_eq(fn->start, qsort_addr);
	ck_assert_str_eq(fn->name, "qsort");

	/* The comparator's caller is libc's internal merge sort: no dynamic symbol. */
	*(void **)&libc_qsort_fn = (void *)qsort_addr;
	libc_qsort_fn(values, 5, sizeof(values[0]), compare_ints);
	inside = (uintptr_t)comparator_return_address;
	ck_assert_int_ne(dladdr((void *)inside, &info), 0);
	internal = dacce_funcs_find(&funcs, inside);
	ck_assert_ptr_nonnull(internal);
	ck_assert_uint_lt(internal->start, inside);
	ck_assert(internal->flags & DACCE_FUNC_FDE);
	ck_assert_ptr_null(internal->name);
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
}
END_TEST

START_TEST(test_plt_and_got_of_this_program)
{
	const struct dacce_module_info *main_mod;
	const struct dacce_func *caller;
	struct dacce_modules mods;
	struct dacce_funcs funcs;
	bool found_plt_call = false;

	ck_assert_int_eq(plt_caller(), (int)getpid() + 1);
	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	main_mod = &mods.mods[0];
	ck_assert_int_eq(dacce_funcs_load(main_mod, &funcs), 0);
	ck_assert_uint_ge(funcs.n_plt, 1);
	ck_assert_uint_ge(funcs.n_got, 1);
	for (size_t i = 0; i < funcs.n_plt; i++) {
		ck_assert(dacce_module_is_exec(main_mod, funcs.plt[i].start));
		ck_assert(dacce_module_is_exec(main_mod, funcs.plt[i].end - 1));
	}
	for (size_t i = 0; i < funcs.n_got; i++)
		ck_assert(!dacce_module_is_exec(main_mod, funcs.got[i].start));

	/* Some call rel32 in plt_caller lands in the PLT (getpid@plt). */
	caller = dacce_funcs_find(&funcs, (uintptr_t)&plt_caller);
	ck_assert_ptr_nonnull(caller);
	for (uintptr_t at = caller->start; at + 5 <= caller->end; at++) {
		int32_t rel;

		if (*(const uint8_t *)at != 0xe8)
			continue;
		memcpy(&rel, (const void *)(at + 1), sizeof(rel));
		found_plt_call |= dacce_funcs_in_plt(&funcs, at + 5 + (intptr_t)rel);
	}
	ck_assert(found_plt_call);
	ck_assert(!dacce_funcs_in_plt(&funcs, (uintptr_t)&probe_function));
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
}
END_TEST

/* ------------------------------------------------------------ odd files */

/* A fresh directory per test (the template is copied: CK_FORK=no runs them in one process). */
static void make_tmp_dir(char dir[static 64])
{
	strcpy(dir, "/tmp/check_rt_modules.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void tmp_path(char *buf, size_t size, const char *dir, const char *name)
{
	ck_assert_int_lt(snprintf(buf, size, "%s/%s", dir, name), (int)size);
}

START_TEST(test_stripped_copy_has_fde_bounds)
{
	char self[PATH_MAX], stripped[PATH_MAX], command[3 * PATH_MAX], tmp_dir[64];
	struct dacce_modules mods;
	struct dacce_funcs funcs;
	const struct dacce_func *fn;
	uintptr_t link_address;

	make_tmp_dir(tmp_dir);
	self_path(self, sizeof(self));
	tmp_path(stripped, sizeof(stripped), tmp_dir, "stripped");
	snprintf(command, sizeof(command), "objcopy --strip-all '%s' '%s'", self, stripped);
	ck_assert_int_eq(system(command), 0);
	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	link_address = (uintptr_t)&probe_function - mods.mods[0].bias;

	ck_assert_int_eq(load_file(stripped, &funcs), 0);
	ck_assert_uint_gt(funcs.n, 10);
	assert_sorted_and_disjoint(&funcs);
	fn = dacce_funcs_find(&funcs, link_address);
	ck_assert_ptr_nonnull(fn);
	ck_assert_uint_eq(fn->start, link_address);
	ck_assert_uint_eq(fn->flags, DACCE_FUNC_FDE);
	ck_assert_ptr_null(fn->name);
	dacce_funcs_fini(&funcs);
	dacce_modules_fini(&mods);
	unlink(stripped);
	rmdir(tmp_dir);
}
END_TEST

START_TEST(test_odd_files_give_errors)
{
	char self[PATH_MAX], odd[PATH_MAX], tmp_dir[64];
	struct dacce_module_info no_path = { 0 };
	struct dacce_funcs funcs;
	Elf64_Ehdr *ehdr;
	size_t len;
	void *image;

	make_tmp_dir(tmp_dir);
	self_path(self, sizeof(self));
	image = read_whole_file(self, &len);
	tmp_path(odd, sizeof(odd), tmp_dir, "odd");

	ck_assert_int_eq(dacce_funcs_load(NULL, &funcs), -EINVAL);
	ck_assert_int_eq(dacce_funcs_load(&no_path, NULL), -EINVAL);
	ck_assert_int_eq(dacce_funcs_load(&no_path, &funcs), -EINVAL);
	ck_assert_int_eq(load_file("/nonexistent/file", &funcs), -ENOENT);

	write_whole_file(odd, "", 0);
	ck_assert_int_eq(load_file(odd, &funcs), -ENOEXEC);
	write_whole_file(odd, "#!/bin/sh\necho not elf\n", 23);
	ck_assert_int_eq(load_file(odd, &funcs), -ENOEXEC);
	/* Only the ELF header survives. */
	write_whole_file(odd, image, sizeof(Elf64_Ehdr));
	ck_assert_int_lt(load_file(odd, &funcs), 0);
	/* Section headers (at the end of the file) are gone. */
	write_whole_file(odd, image, len / 2);
	ck_assert_int_lt(load_file(odd, &funcs), 0);
	/* Every section ends past the end of the file. */
	write_whole_file(odd, image, len - 1);
	ck_assert_int_lt(load_file(odd, &funcs), 0);

	ehdr = image;
	ehdr->e_shoff = 0;
	ehdr->e_shnum = 0;
	ehdr->e_shstrndx = SHN_UNDEF;
	write_whole_file(odd, image, len);
	ck_assert_int_eq(load_file(odd, &funcs), -ENODATA);
	ck_assert_uint_eq(funcs.n, 0);
	dacce_funcs_fini(&funcs);

	free(image);
	unlink(odd);
	rmdir(tmp_dir);
}
END_TEST

static Suite *modules_suite(void)
{
	Suite *s = suite_create("rt_modules");
	TCase *modules = tcase_create("modules");
	TCase *funcs = tcase_create("funcs");
	TCase *odd = tcase_create("odd files");

	tcase_add_test(modules, test_main_program_is_the_first_module);
	tcase_add_test(modules, test_main_build_id_is_the_files);
	tcase_add_test(modules, test_libc_loader_and_vdso);
	tcase_add_test(modules, test_dlopen_is_noticed);
	suite_add_tcase(s, modules);

	tcase_add_test(funcs, test_static_function_bounds);
	tcase_add_test(funcs, test_libc_bounds_without_symtab);
	tcase_add_test(funcs, test_plt_and_got_of_this_program);
	suite_add_tcase(s, funcs);

	tcase_set_timeout(odd, 30);
	tcase_add_test(odd, test_stripped_copy_has_fde_bounds);
	tcase_add_test(odd, test_odd_files_give_errors);
	suite_add_tcase(s, odd);
	return s;
}

int main(void)
{
	return run_suite(modules_suite());
}
