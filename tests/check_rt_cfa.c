// SPDX-License-Identifier: MIT
/*
 * The runtime's own reader of unwind tables (runtime/ehframe.h, behind
 * runtime/cfa.h) against libdw, row by row over every instruction that has
 * unwind rules in the modules of this process (libc, the loader, libdw,
 * libstdc++, this program): the same CFA, the same rule for each register,
 * the same range of addresses.  Then the reader on tables it must refuse:
 * copies of libc's tables with bytes flipped, and random ones, with
 * inaccessible pages around them: it reads nothing outside the segment.
 */
#include <check.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfa.h"
#include "check_main.h"
#include "ehframe.h"
#include "funcs.h"
#include "modules.h"

/* Check writes down every passing assertion: loops over many rows assert only on failure. */
#define EXPECT(cond, ...)                         \
	do {                                      \
		if (!(cond))                      \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

/* libdw's location of a register, read as a rule (its spelling of each DWARF rule). */
static bool breg_of(const Dwarf_Op *op, int *reg, int64_t *offset)
{
	if (op->atom == DW_OP_bregx) {
		*reg = (int)op->number;
		*offset = (int64_t)op->number2;
		return true;
	}
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*offset = (int64_t)op->number;
		return true;
	}
	return false;
}

static struct dacce_cfa_reg_rule libdw_rule(const Dwarf_Op *ops, size_t n)
{
	struct dacce_cfa_reg_rule rule = { .kind = DACCE_CFA_UNDEFINED };
	bool value = n > 0 && ops[n - 1].atom == DW_OP_stack_value;

	if (n == 0) {
		/* No operations and no array: "same value"; its own empty array: "undefined". */
		rule.kind = ops ? DACCE_CFA_UNDEFINED : DACCE_CFA_SAME;
		return rule;
	}
	if (value)
		n--;
	if (n >= 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		rule.kind = value ? DACCE_CFA_IS : DACCE_CFA_AT;
		if (n == 2 && ops[1].atom == DW_OP_plus_uconst)
			rule.offset = (int64_t)ops[1].number;
		else if (n == 3 && ops[2].atom == DW_OP_plus)
			rule.offset = (int64_t)ops[1].number;
		else if (n == 3 && ops[2].atom == DW_OP_minus)
			rule.offset = -(int64_t)ops[1].number;
		else if (n != 1)
			rule.kind = DACCE_CFA_UNDEFINED;
	} else if (!value && n == 1 && ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31) {
		rule.kind = DACCE_CFA_IN_REG;
		rule.reg = ops[0].atom - DW_OP_reg0;
	} else if (!value && n == 1 && ops[0].atom == DW_OP_regx) {
		rule.kind = DACCE_CFA_IN_REG;
		rule.reg = (int)ops[0].number;
	}
	return rule;
}

struct libdw_row {
	bool found;	 /* an FDE covers the address */
	bool cfa_simple; /* the CFA is a register plus an offset */
	struct dacce_cfa_row row;
	uintptr_t lo, hi;
};

static struct libdw_row libdw_row_at(Dwarf_CFI *cfi, uintptr_t bias, uintptr_t addr)
{
	struct libdw_row out = { 0 };
	Dwarf_Op ops_mem[3], *ops = NULL;
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr start, end;
	size_t n = 0;
	bool signal;

	if (dwarf_cfi_addrframe(cfi, addr - bias, &frame) != 0)
		return out;
	out.found = true;
	EXPECT(dwarf_frame_info(frame, &start, &end, &signal) >= 0, "libdw: no row range");
	out.lo = start + bias;
	out.hi = end + bias;
	if (dwarf_frame_cfa(frame, &ops, &n) == 0 && n == 1)
		out.cfa_simple = breg_of(&ops[0], &out.row.cfa_reg, &out.row.cfa_offset);
	for (int reg = 0; reg < DACCE_CFA_REGS; reg++) {
		EXPECT(dwarf_frame_register(frame, reg, ops_mem, &ops, &n) == 0, "libdw: register %d", reg);
		out.row.regs[reg] = libdw_rule(ops, n);
	}
	/*
	 * libdw's x86-64 starting rules call register 0 (%rax) callee-saved and
	 * 3 (%rbx) lost; the psABI says the opposite, and so does the reader.
	 */
	if (out.row.regs[0].kind == DACCE_CFA_SAME)
		out.row.regs[0].kind = DACCE_CFA_UNDEFINED;
	if (out.row.regs[3].kind == DACCE_CFA_UNDEFINED)
		out.row.regs[3].kind = DACCE_CFA_SAME;
	free(frame);
	return out;
}

static void assert_same_row(const struct dacce_cfa_row *ours, const struct libdw_row *want,
			    const char *path, uintptr_t addr)
{
	EXPECT(ours->cfa_reg == want->row.cfa_reg && ours->cfa_offset == want->row.cfa_offset,
		      "%s+%#lx: CFA r%d%+ld, libdw r%d%+ld", path, (unsigned long)addr, ours->cfa_reg,
		      (long)ours->cfa_offset, want->row.cfa_reg, (long)want->row.cfa_offset);
	for (int reg = 0; reg < DACCE_CFA_REGS; reg++) {
		const struct dacce_cfa_reg_rule *a = &ours->regs[reg], *b = &want->row.regs[reg];

		EXPECT(a->kind == b->kind &&
				      (a->kind != DACCE_CFA_IN_REG || a->reg == b->reg) &&
				      ((a->kind != DACCE_CFA_AT && a->kind != DACCE_CFA_IS) ||
				       a->offset == b->offset),
			      "%s+%#lx: register %d: kind %d reg %d offset %ld, libdw %d %d %ld", path,
			      (unsigned long)addr, reg, a->kind, a->reg, (long)a->offset, b->kind,
			      b->reg, (long)b->offset);
	}
}

/* Every executable address of m: our row and libdw's; returns the rows compared. */
/*
 * The walk's answer at addr equals the one-shot reader's (both are asked in
 * increasing order by compare_module, each row's start, then its last byte).
 */
static void assert_walk_agrees(struct dacce_eh_frame_walk *walk, const struct dacce_eh_frame *eh,
			       uintptr_t addr, const char *path, uintptr_t bias)
{
	struct dacce_cfa_row want, got;
	uintptr_t want_lo = 0, want_hi = 0, lo = 0, hi = 0;
	int want_err, err;

	memset(&want, 0, sizeof(want));
	memset(&got, 0, sizeof(got));
	want_err = dacce_eh_frame_row(eh, addr, &want, &want_lo, &want_hi);
	err = dacce_eh_frame_walk_row(walk, addr, &got, &lo, &hi);
	EXPECT(err == want_err, "%s+%#lx: the walk says %d, the reader %d", path,
	       (unsigned long)(addr - bias), err, want_err);
	if (err)
		return;
	EXPECT(lo == want_lo && hi == want_hi && memcmp(&got, &want, sizeof(got)) == 0,
	       "%s+%#lx: the walk's row [%#lx, %#lx) is not the reader's [%#lx, %#lx)", path,
	       (unsigned long)(addr - bias), (unsigned long)(lo - bias), (unsigned long)(hi - bias),
	       (unsigned long)(want_lo - bias), (unsigned long)(want_hi - bias));
}

static size_t compare_module(const struct dacce_module_info *m)
{
	const char *path = m->is_main ? "/proc/self/exe" : m->path;
	struct dacce_eh_frame_walk *walk;
	struct dacce_eh_frame eh;
	size_t rows = 0;
	Dwarf_CFI *cfi;
	Elf *elf;
	int fd;

	EXPECT(m->eh_frame_hdr.start != 0, "%s: no PT_GNU_EH_FRAME found", m->path);
	ck_assert_int_eq(dacce_eh_frame_init(&eh, m->eh_frame_hdr.start, m->unwind_readable.start,
					     m->unwind_readable.end),
			 0);
	walk = dacce_eh_frame_walk_new(&eh);
	ck_assert_ptr_nonnull(walk);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ck_assert_ptr_nonnull(elf);
	cfi = dwarf_getcfi_elf(elf);
	ck_assert_ptr_nonnull(cfi);
	for (size_t i = 0; i < m->n_exec; i++) {
		uintptr_t addr = m->exec[i].start;

		while (addr < m->exec[i].end) {
			struct libdw_row want = libdw_row_at(cfi, m->bias, addr);
			struct dacce_cfa_row ours;
			uintptr_t lo = 0, hi = 0;
			int err = dacce_eh_frame_row(&eh, addr, &ours, &lo, &hi);

			assert_walk_agrees(walk, &eh, addr, m->path, m->bias);
			if (!want.found) {
				EXPECT(err == -ENOENT, "%s+%#lx: %d where libdw has no FDE",
					      m->path, (unsigned long)(addr - m->bias), err);
				addr++;
				continue;
			}
			if (!want.cfa_simple) {
				EXPECT(err == -ENOTSUP, "%s+%#lx: %d for a CFA expression",
					      m->path, (unsigned long)(addr - m->bias), err);
				addr = want.hi > addr ? want.hi : addr + 1;
				continue;
			}
			EXPECT(err == 0, "%s+%#lx: %d where libdw has a row", m->path,
				      (unsigned long)(addr - m->bias), err);
			assert_same_row(&ours, &want, m->path, addr - m->bias);
			/*
			 * After DW_CFA_restore_state libdw gives the remembered row's
			 * start as well: its range can begin earlier than the row does.
			 */
			EXPECT(lo >= want.lo && lo <= addr && hi == want.hi,
				      "%s+%#lx: row [%#lx, %#lx), libdw [%#lx, %#lx)", m->path,
				      (unsigned long)(addr - m->bias), (unsigned long)(lo - m->bias),
				      (unsigned long)(hi - m->bias), (unsigned long)(want.lo - m->bias),
				      (unsigned long)(want.hi - m->bias));
			rows++;
			/* The row's last byte, then the next row: the walk goes on twice. */
			if (hi - 1 > addr)
				assert_walk_agrees(walk, &eh, hi - 1, m->path, m->bias);
			addr = hi;
		}
	}
	dacce_eh_frame_walk_free(walk);
	dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
	return rows;
}

static bool ends_with(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');

	return strcmp(base ? base + 1 : path, name) == 0;
}

START_TEST(test_rows_equal_libdw_in_every_module)
{
	static const char *const wanted[] = { "libc.so.6", "ld-linux-x86-64.so.2", "libdw.so.1",
					      "libstdc++.so.6" };
	void *cxx = dlopen("libstdc++.so.6", RTLD_NOW);
	struct dacce_modules mods;
	size_t total = 0;

	ck_assert_ptr_nonnull(cxx);
	ck_assert_int_eq(elf_version(EV_CURRENT) != EV_NONE, 1);
	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	for (size_t w = 0; w < sizeof(wanted) / sizeof(wanted[0]); w++) {
		size_t rows = 0;

		for (size_t i = 0; i < mods.n; i++)
			if (ends_with(mods.mods[i].path, wanted[w]))
				rows = compare_module(&mods.mods[i]);
		/* Hundreds of functions each: a module missed or read empty would show. */
		ck_assert_msg(rows > 1000, "%s: %zu rows compared", wanted[w], rows);
		total += rows;
	}
	ck_assert_uint_gt(compare_module(&mods.mods[0]), 10);
	printf("rows equal to libdw's: %zu\n", total);
	dacce_modules_fini(&mods);
	dlclose(cxx);
}
END_TEST

/*
 * Function discovery (runtime/funcs.c) calls an FDE whose CFA at its start is
 * not %rsp + 8 a fragment (foo.cold): the same verdict as libdw's rows give.
 */
START_TEST(test_fragments_are_the_fdes_libdw_reads_inside_a_frame)
{
	void *cxx = dlopen("libstdc++.so.6", RTLD_NOW);
	struct dacce_modules mods;
	size_t checked = 0, fragments = 0;

	ck_assert_ptr_nonnull(cxx);
	ck_assert_int_eq(elf_version(EV_CURRENT) != EV_NONE, 1);
	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	for (size_t i = 0; i < mods.n; i++) {
		const struct dacce_module_info *m = &mods.mods[i];
		struct dacce_funcs funcs;
		Dwarf_CFI *cfi;
		Elf *elf;
		int fd;

		if (!ends_with(m->path, "libstdc++.so.6") && !ends_with(m->path, "libc.so.6"))
			continue;
		ck_assert_int_eq(dacce_funcs_load(m, &funcs), 0);
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
		ck_assert_ptr_nonnull(cfi);
		for (size_t f = 0; f < funcs.n; f++) {
			const struct dacce_func *fn = &funcs.funcs[f];
			struct libdw_row want;

			if (!(fn->flags & DACCE_FUNC_FDE))
				continue;
			want = libdw_row_at(cfi, m->bias, fn->start);
			if (!want.found || !want.cfa_simple)
				continue;
			EXPECT(!(fn->flags & DACCE_FUNC_FRAGMENT) ==
				       (want.row.cfa_reg == 7 && want.row.cfa_offset == 8),
			       "%s+%#lx: fragment %d, libdw's CFA r%d%+ld", m->path,
			       (unsigned long)(fn->start - m->bias), !!(fn->flags & DACCE_FUNC_FRAGMENT),
			       want.row.cfa_reg, (long)want.row.cfa_offset);
			fragments += (fn->flags & DACCE_FUNC_FRAGMENT) != 0;
			checked++;
		}
		dwarf_cfi_end(cfi);
		elf_end(elf);
		close(fd);
		dacce_funcs_fini(&funcs);
	}
	/* libstdc++ has .cold parts: a reader that never saw one would show here. */
	ck_assert_uint_gt(checked, 3000);
	ck_assert_uint_gt(fragments, 10);
	dacce_modules_fini(&mods);
	dlclose(cxx);
}
END_TEST

/* A copy of [lo, hi) with an inaccessible page on each side: a stray read faults. */
struct fenced {
	uint8_t *map;
	size_t map_size;
	uint8_t *copy;
};

static struct fenced fence_copy(const void *src, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t inner = (size + (size_t)page - 1) & ~((size_t)page - 1);
	struct fenced f = { .map_size = inner + 2 * (size_t)page };

	f.map = mmap(NULL, f.map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(f.map, MAP_FAILED);
	ck_assert_int_eq(mprotect(f.map + page, inner, PROT_READ | PROT_WRITE), 0);
	/* Flush against the upper fence: a read past the end faults at once. */
	f.copy = f.map + page + (inner - size);
	if (src)
		memcpy(f.copy, src, size);
	return f;
}

static const struct dacce_module_info *libc_module(struct dacce_modules *mods)
{
	for (size_t i = 0; i < mods->n; i++)
		if (ends_with(mods->mods[i].path, "libc.so.6"))
			return &mods->mods[i];
	ck_abort_msg("libc not found");
	return NULL;
}

/* Looks up every 16th address of libc's text in tables at eh; counts the rows found. */
static size_t sweep(const struct dacce_eh_frame *eh, const struct dacce_module_info *libc,
		    intptr_t delta)
{
	size_t found = 0;

	for (uintptr_t a = libc->exec[0].start; a < libc->exec[0].end; a += 16) {
		struct dacce_cfa_row row;
		uintptr_t lo, hi;
		int err = dacce_eh_frame_row(eh, a + (uintptr_t)delta, &row, &lo, &hi);

		EXPECT(err == 0 || err == -ENOENT || err == -ENOTSUP || err == -EINVAL, "error %d", err);
		if (err == 0) {
			EXPECT(lo <= a + (uintptr_t)delta && hi > a + (uintptr_t)delta,
			       "row [%#lx, %#lx) misses %#lx", (unsigned long)lo, (unsigned long)hi,
			       (unsigned long)(a + (uintptr_t)delta));
			found++;
		}
	}
	return found;
}

START_TEST(test_a_moved_copy_reads_alike_and_flipped_bytes_never_read_outside)
{
	struct dacce_modules mods;
	const struct dacce_module_info *libc;
	struct dacce_eh_frame original, copied;
	struct fenced f;
	size_t size, found;
	intptr_t delta;
	unsigned seed = 7;

	ck_assert_int_eq(dacce_modules_scan(&mods), 0);
	libc = libc_module(&mods);
	size = libc->unwind_readable.end - libc->eh_frame_hdr.start;
	f = fence_copy((const void *)libc->eh_frame_hdr.start, size);
	delta = (intptr_t)((uintptr_t)f.copy - libc->eh_frame_hdr.start);
	ck_assert_int_eq(dacce_eh_frame_init(&original, libc->eh_frame_hdr.start,
					     libc->unwind_readable.start, libc->unwind_readable.end),
			 0);
	ck_assert_int_eq(dacce_eh_frame_init(&copied, (uintptr_t)f.copy, (uintptr_t)f.copy,
					     (uintptr_t)f.copy + size),
			 0);
	/* Relative pointers: the copy describes the code as if it had moved with it. */
	found = sweep(&original, libc, 0);
	ck_assert_uint_gt(found, 1000);
	ck_assert_uint_eq(sweep(&copied, libc, delta), found);
	for (int round = 0; round < 40; round++) {
		for (int flip = 0; flip < 64; flip++) {
			seed = seed * 1103515245u + 12345u;
			f.copy[(seed >> 4) % size] ^= (uint8_t)(1u << (seed % 8));
		}
		if (dacce_eh_frame_init(&copied, (uintptr_t)f.copy, (uintptr_t)f.copy,
					(uintptr_t)f.copy + size) == 0)
			sweep(&copied, libc, delta);
	}
	munmap(f.map, f.map_size);
	dacce_modules_fini(&mods);
}
END_TEST

static uint32_t next_random(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static void put32(uint8_t *at, uint32_t value)
{
	memcpy(at, &value, sizeof(value));
}

/*
 * Well-formed headers over random instructions: a CIE ("zR", PC-relative
 * FDE pointers, CFA %rsp + 8) and 16 FDEs near the end of the buffer, whose
 * random instructions run to the last byte before the fence.
 */
static void random_tables(uint8_t *buf, size_t size, uintptr_t code, unsigned *seed)
{
	static const uint8_t cie_entry[] = { 20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78,
					     16, 1, 0x1b, DW_CFA_def_cfa, 7, 8, 0x80 | 16, 1 };
	const size_t cie = 256, n = 16;

	for (size_t i = 0; i < size; i++)
		buf[i] = (uint8_t)next_random(seed);
	memcpy(buf, "\x01\x1b\x03\x3b", 4);
	put32(buf + 8, (uint32_t)n);
	memcpy(buf + cie, cie_entry, sizeof(cie_entry));
	for (size_t i = 0; i < n; i++) {
		size_t fde = size - 24 - next_random(seed) % 200;
		uintptr_t field = (uintptr_t)buf + fde + 8;

		put32(buf + 12 + 8 * i, (uint32_t)(code + 64 * i - (uintptr_t)buf));
		put32(buf + 16 + 8 * i, (uint32_t)fde);
		put32(buf + fde, (uint32_t)(size - fde - 4));
		put32(buf + fde + 4, (uint32_t)(fde + 4 - cie));
		put32(buf + fde + 8, (uint32_t)(code + 64 * i - field)); /* pc_begin */
		put32(buf + fde + 12, 64);				 /* pc_range */
		buf[fde + 16] = 0;					 /* no augmentation data */
	}
}

START_TEST(test_random_tables_never_read_outside)
{
	const size_t size = 8192;
	struct fenced f = fence_copy(NULL, size);
	uintptr_t code = (uintptr_t)f.copy + (1u << 20);
	size_t rows = 0;
	unsigned seed = 11;

	for (int round = 0; round < 2000; round++) {
		struct dacce_eh_frame eh;

		random_tables(f.copy, size, code, &seed);
		ck_assert_int_eq(dacce_eh_frame_init(&eh, (uintptr_t)f.copy, (uintptr_t)f.copy,
						     (uintptr_t)f.copy + size),
				 0);
		for (int i = 0; i < 64; i++) {
			struct dacce_cfa_row row;
			uintptr_t lo, hi, addr = code - 32 + next_random(&seed) % (16 * 64 + 64);

			rows += dacce_eh_frame_row(&eh, addr, &row, &lo, &hi) == 0;
		}
	}
	/* Some random instructions make sense: the rows were really read. */
	ck_assert_uint_gt(rows, 100);
	munmap(f.map, f.map_size);
}
END_TEST

/* A header whose search table does not fit, or is not the sorted kind: no tables. */
START_TEST(test_refused_headers)
{
	struct fenced f = fence_copy(NULL, 64);
	struct dacce_eh_frame eh;
	uint32_t count = 100;

	memcpy(f.copy, "\x01\x1b\x03\x3b", 4);
	memcpy(f.copy + 8, &count, 4);
	ck_assert_int_eq(dacce_eh_frame_init(&eh, (uintptr_t)f.copy, (uintptr_t)f.copy,
					     (uintptr_t)f.copy + 64),
			 -ENOENT);
	count = 6;
	memcpy(f.copy + 8, &count, 4);
	ck_assert_int_eq(dacce_eh_frame_init(&eh, (uintptr_t)f.copy, (uintptr_t)f.copy,
					     (uintptr_t)f.copy + 64),
			 0);
	f.copy[3] = 0x03; /* udata4 entries: unsorted as far as the reader knows */
	ck_assert_int_eq(dacce_eh_frame_init(&eh, (uintptr_t)f.copy, (uintptr_t)f.copy,
					     (uintptr_t)f.copy + 64),
			 -ENOENT);
	f.copy[3] = 0x3b;
	f.copy[0] = 2; /* an unknown version */
	ck_assert_int_eq(dacce_eh_frame_init(&eh, (uintptr_t)f.copy, (uintptr_t)f.copy,
					     (uintptr_t)f.copy + 64),
			 -ENOENT);
	munmap(f.map, f.map_size);
}
END_TEST

static Suite *cfa_suite(void)
{
	Suite *s = suite_create("rt_cfa");
	TCase *tc = tcase_create("cfa");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_rows_equal_libdw_in_every_module);
	tcase_add_test(tc, test_fragments_are_the_fdes_libdw_reads_inside_a_frame);
	tcase_add_test(tc, test_a_moved_copy_reads_alike_and_flipped_bytes_never_read_outside);
	tcase_add_test(tc, test_random_tables_never_read_outside);
	tcase_add_test(tc, test_refused_headers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(cfa_suite());
}
