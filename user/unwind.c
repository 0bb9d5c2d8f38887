// SPDX-License-Identifier: MIT
/*
 * Why our own steps over libdw's CFI (dwarf_cfi_addrframe) rather than
 * libdwfl's unwinder (dwfl_attach_state + dwfl_getthread_frames): on x86-64
 * libdwfl falls back to the frame-pointer rule by itself wherever the CFI
 * step fails (no FDE, no module, a failed read), so a guessed frame would
 * pass for a verified one; it cannot be told how to step out of generated
 * code; and it ends with "no more frames" or an error code where validation
 * must say which stop it was.  libdw still does the hard part: finding the
 * FDE (through .eh_frame_hdr), running CIE and FDE instructions, the ABI's
 * default rules.  What is left here is evaluating the rules it returns.
 *
 * Why a module table of our own rather than a Dwfl: the capture knows every
 * module's run-time range and bias exactly, and libdwfl would work the bias
 * out again from the file (differently for ET_EXEC and ET_DYN); a sorted
 * array maps a pc to its module in a binary search.
 *
 * Why module files are mapped (ELF_C_READ_MMAP) where the symbolizer reads
 * them: libdw then uses .eh_frame in place, shared through the page cache
 * by every unwinder (one per process image) instead of copied into each;
 * and libelf's read path leaks a section's data on some corrupt files
 * (elfutils 0.188: elf_strptr() when .eh_frame has lost its name).  libelf
 * still checks every offset against the file's size at open.  The cost: a
 * file truncated in place while mapped would fault (SIGBUS); upgrades and
 * linkers replace files by a new inode, which leaves the mapped one whole.
 */
#include "stack_unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUILD_ID_MAX 64
/* x86-64 user space ends at 2^47 (4-level page tables): no stack lies above. */
#define USER_ADDRESS_END (1ULL << 47)
/* Bounds on a DWARF expression's work: more means corrupt CFI. */
#define EXPR_STACK_MAX 64
#define EXPR_STEPS_MAX 1024
#define ALL_REGS       ((1u << DACCE_UNWIND_NREGS) - 1)
#define REG_BIT(r)     (1u << (r))

/* A read-only, file-backed piece of a PT_LOAD segment, link-time. */
struct ro_segment {
	uint64_t vaddr, size, offset;
};

/* A module file, opened once however many ranges map it. */
struct module_file {
	char *path;
	uint8_t build_id[BUILD_ID_MAX]; /* expected; not checked when build_id_len is 0 */
	size_t build_id_len;
	int err;	 /* < 0: the file cannot be used, why says why */
	const char *why; /* static text */
	int fd;
	uint64_t size;
	Elf *elf;
	Dwarf_CFI *eh;	  /* .eh_frame; NULL: none */
	Dwarf *dwarf;	  /* for .debug_frame, opened when .eh_frame first has no answer */
	Dwarf_CFI *debug; /* .debug_frame; NULL: none */
	bool debug_tried;
	struct ro_segment *ro;
	size_t n_ro;
};

/* The common head of module and code ranges, run-time [start, end). */
struct span {
	uint64_t start, end;
};

struct module_range {
	struct span span;
	uint64_t bias;
	struct module_file *file;
};

struct code_range {
	struct span span;
	struct dacce_code_step step;
};

/* A sorted array of non-overlapping ranges of one type. */
struct span_array {
	void *v;
	size_t n, cap, stride;
};

struct dacce_unwinder {
	struct span_array modules; /* struct module_range, by start */
	struct span_array code;	   /* struct code_range, by start */
	struct module_file **files;
	size_t n_files, cap_files;
};

/* Registers of one frame, by DWARF number; RIP holds the frame's pc. */
struct frame_state {
	uint64_t reg[DACCE_UNWIND_NREGS];
	uint32_t known;
	bool exact; /* the pc is not a return address: look up its CFI as is */
};

struct stop_info {
	uint8_t why; /* enum dacce_unwind_stop */
	uint64_t address;
	const char *detail;
};

/* One dacce_unwind() call. */
struct walk {
	const struct dacce_unwinder *u;
	const struct dacce_unwind_sample *sample;
	unsigned flags;
};

/* What a DWARF expression is evaluated against. */
struct expr_env {
	const struct walk *w;
	const struct frame_state *frame;
	uint64_t pc; /* the frame's own pc, named in stops (its rip differs under LIKE_PC) */
	uint64_t cfa;
	bool have_cfa; /* false while the CFA itself is computed */
	struct stop_info *stop;
};

static const char *const reg_names[DACCE_UNWIND_NREGS] = {
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
	"r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip",
};

/* ------------------------------------------------------------ small helpers */

static bool set_stop(struct stop_info *stop, enum dacce_unwind_stop why, uint64_t address,
		     const char *detail)
{
	stop->why = (uint8_t)why;
	stop->address = address;
	stop->detail = detail;
	return false;
}

static bool reg_known(const struct frame_state *f, unsigned reg)
{
	return f->known & REG_BIT(reg);
}

static void set_reg(struct frame_state *f, unsigned reg, uint64_t value)
{
	f->reg[reg] = value;
	f->known |= REG_BIT(reg);
}

/* ------------------------------------------------------------ sorted ranges */

static struct span *span_at(const struct span_array *a, size_t i)
{
	return (struct span *)((char *)a->v + i * a->stride);
}

/* The index of the first range starting above address. */
static size_t first_above(const struct span_array *a, uint64_t address)
{
	size_t lo = 0, hi = a->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (span_at(a, mid)->start <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void *find_span(const struct span_array *a, uint64_t address)
{
	size_t i = first_above(a, address);
	struct span *s;

	if (i == 0)
		return NULL;
	s = span_at(a, i - 1);
	return address < s->end ? s : NULL;
}

/* Inserts a copy of item (a struct starting with its span); -EEXIST if it overlaps one. */
static int insert_span(struct span_array *a, const void *item)
{
	const struct span *s = item;
	size_t i = first_above(a, s->start);

	if ((i > 0 && span_at(a, i - 1)->end > s->start) ||
	    (i < a->n && span_at(a, i)->start < s->end))
		return -EEXIST;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		void *grown = reallocarray(a->v, cap, a->stride);

		if (!grown)
			return -ENOMEM;
		a->v = grown;
		a->cap = cap;
	}
	memmove(span_at(a, i + 1), span_at(a, i), (a->n - i) * a->stride);
	memcpy(span_at(a, i), item, a->stride);
	a->n++;
	return 0;
}

/* ------------------------------------------------------------ module files */

static const char *open_failure_reason(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR: return "no such file";
	case EACCES:
	case EPERM: return "permission denied";
	case ENOMEM: return "out of memory";
	default: return "cannot open file";
	}
}

/* Opens f->path if it is a regular file; never blocks on a FIFO. */
static int open_regular_file(struct module_file *f)
{
	struct stat st;

	f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f->fd < 0) {
		f->why = open_failure_reason(errno);
		return -errno;
	}
	if (fstat(f->fd, &st) != 0) {
		f->why = "cannot read file status";
		return -errno;
	}
	if (S_ISDIR(st.st_mode)) {
		f->why = "is a directory";
		return -EISDIR;
	}
	if (!S_ISREG(st.st_mode)) {
		f->why = "not a regular file";
		return -ENOEXEC;
	}
	f->size = (uint64_t)st.st_size;
	return 0;
}

static int check_elf_header(struct module_file *f)
{
	GElf_Ehdr ehdr;

	if (elf_kind(f->elf) != ELF_K_ELF) {
		f->why = "not an ELF file";
		return -ENOEXEC;
	}
	if (!gelf_getehdr(f->elf, &ehdr)) {
		f->why = "corrupt ELF file";
		return -EBADMSG;
	}
	if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != EM_X86_64 ||
	    (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)) {
		f->why = "not an x86-64 executable or shared library";
		return -ENOEXEC;
	}
	return 0;
}

static int check_build_id(struct module_file *f)
{
	const void *bits;
	ssize_t len;

	if (!f->build_id_len)
		return 0;
	len = dwelf_elf_gnu_build_id(f->elf, &bits);
	if (len < 0) {
		f->why = "corrupt ELF file";
		return -EBADMSG;
	}
	if (len == 0) {
		f->why = "no build-id in file";
		return -ESTALE;
	}
	if ((size_t)len != f->build_id_len || memcmp(bits, f->build_id, f->build_id_len) != 0) {
		f->why = "build-id mismatch";
		return -ESTALE;
	}
	return 0;
}

/* Notes the file-backed parts of read-only PT_LOAD segments, which memory reads may use. */
static int read_ro_segments(struct module_file *f)
{
	size_t n;

	if (elf_getphdrnum(f->elf, &n) != 0) {
		f->why = "corrupt ELF file";
		return -EBADMSG;
	}
	f->ro = calloc(n ? n : 1, sizeof(*f->ro));
	if (!f->ro) {
		f->why = "out of memory";
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, (int)i, &ph)) {
			f->why = "corrupt ELF file";
			return -EBADMSG;
		}
		if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) || !ph.p_filesz)
			continue;
		if (ph.p_offset > f->size || ph.p_filesz > f->size - ph.p_offset) {
			f->why = "corrupt ELF file";
			return -EBADMSG;
		}
		f->ro[f->n_ro++] = (struct ro_segment){ ph.p_vaddr, ph.p_filesz, ph.p_offset };
	}
	return 0;
}

/* Opens the file and checks it; the result goes to f->err and f->why. */
static void load_file(struct module_file *f)
{
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		f->why = "libelf is unusable";
		err = -ENOTSUP;
		goto cleanup;
	}
	err = open_regular_file(f);
	if (err)
		goto cleanup;
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf) {
		f->why = "not an ELF file";
		err = -ENOEXEC;
		goto cleanup;
	}
	err = check_elf_header(f);
	if (!err)
		err = check_build_id(f);
	if (!err)
		err = read_ro_segments(f);
	if (!err)
		f->eh = dwarf_getcfi_elf(f->elf); /* NULL: no .eh_frame, maybe .debug_frame */
cleanup:
	f->err = err;
}

static void free_file(struct module_file *f)
{
	if (!f)
		return;
	if (f->eh)
		dwarf_cfi_end(f->eh);
	if (f->dwarf)
		dwarf_end(f->dwarf); /* frees f->debug too */
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->ro);
	free(f->path);
	free(f);
}

/* The file for (path, build-id), opened on first use; NULL only when out of memory. */
static struct module_file *get_file(struct dacce_unwinder *u, const char *path,
				    const uint8_t *build_id, size_t build_id_len)
{
	struct module_file *f, **files;

	for (size_t i = 0; i < u->n_files; i++) {
		f = u->files[i];
		if (f->build_id_len == build_id_len && strcmp(f->path, path) == 0 &&
		    (!build_id_len || memcmp(f->build_id, build_id, build_id_len) == 0))
			return f;
	}
	if (u->n_files == u->cap_files) {
		size_t cap = u->cap_files ? 2 * u->cap_files : 16;

		files = reallocarray(u->files, cap, sizeof(*files));
		if (!files)
			return NULL;
		u->files = files;
		u->cap_files = cap;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fd = -1;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	if (build_id_len)
		memcpy(f->build_id, build_id, build_id_len);
	f->build_id_len = build_id_len;
	load_file(f);
	if (f->err == -ENOMEM) {
		free_file(f); /* not remembered: the next add tries again */
		return NULL;
	}
	u->files[u->n_files++] = f;
	return f;
}

/* .debug_frame, looked for only when .eh_frame has no answer. */
static Dwarf_CFI *debug_frame(struct module_file *f)
{
	if (!f->debug_tried) {
		f->debug_tried = true;
		f->dwarf = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
		if (f->dwarf)
			f->debug = dwarf_getcfi(f->dwarf);
	}
	return f->debug;
}

/* ------------------------------------------------------------ the public set-up */

struct dacce_unwinder *dacce_unwinder_new(void)
{
	struct dacce_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->modules.stride = sizeof(struct module_range);
	u->code.stride = sizeof(struct code_range);
	return u;
}

void dacce_unwinder_free(struct dacce_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n_files; i++)
		free_file(u->files[i]);
	free(u->files);
	free(u->modules.v);
	free(u->code.v);
	free(u);
}

int dacce_unwinder_add_module(struct dacce_unwinder *u, const char *path, const uint8_t *build_id,
			      size_t build_id_len, uint64_t start, uint64_t end, uint64_t bias,
			      const char **why)
{
	const char *reason = "bad arguments";
	struct module_range range;
	int err = -EINVAL;

	if (!u || !path || !*path || start >= end || (build_id_len && !build_id) ||
	    build_id_len > BUILD_ID_MAX)
		goto cleanup;
	range = (struct module_range){ .span = { start, end }, .bias = bias };
	/* Checked before the file is opened: a refused range leaves nothing behind. */
	err = -EEXIST;
	reason = "overlaps a module added before";
	if (find_span(&u->modules, start) ||
	    first_above(&u->modules, start) != first_above(&u->modules, end - 1))
		goto cleanup;
	err = -ENOMEM;
	reason = "out of memory";
	range.file = get_file(u, path, build_id, build_id_len);
	if (!range.file)
		goto cleanup;
	err = insert_span(&u->modules, &range);
	if (err)
		goto cleanup;
	err = range.file->err;
	reason = range.file->why;
cleanup:
	if (why)
		*why = err ? reason : NULL;
	return err;
}

int dacce_unwinder_add_code(struct dacce_unwinder *u, uint64_t start, uint64_t size,
			    const struct dacce_code_step *step)
{
	struct code_range range;

	if (!u || !step || !size || start + size < start || step->rule > DACCE_CODE_LIKE_PC)
		return -EINVAL;
	range = (struct code_range){ .span = { start, start + size }, .step = *step };
	return insert_span(&u->code, &range);
}

/* ------------------------------------------------------------ memory */

/* Reads from a read-only, file-backed segment of the module at address. */
static bool read_module_file(const struct dacce_unwinder *u, uint64_t address, unsigned size,
			     uint8_t *bytes)
{
	const struct module_range *m = find_span(&u->modules, address);
	const struct module_file *f;
	uint64_t link;

	if (!m || m->file->err)
		return false;
	f = m->file;
	link = address - m->bias;
	for (size_t i = 0; i < f->n_ro; i++) {
		const struct ro_segment *s = &f->ro[i];

		if (link < s->vaddr || link - s->vaddr >= s->size ||
		    size > s->size - (link - s->vaddr))
			continue;
		return pread(f->fd, bytes, size, (off_t)(s->offset + (link - s->vaddr))) ==
		       (ssize_t)size;
	}
	return false;
}

/* Reads size (1..8) little-endian bytes at address: from the stack copy, else a module file. */
static bool read_memory(const struct walk *w, uint64_t address, unsigned size, uint64_t *value,
			struct stop_info *stop)
{
	const struct dacce_unwind_sample *s = w->sample;
	uint64_t offset = address - s->stack_start;
	uint8_t bytes[8] = { 0 };

	if (address >= s->stack_start && offset < s->stack_len && size <= s->stack_len - offset)
		memcpy(bytes, (const uint8_t *)s->stack + offset, size);
	else if (!read_module_file(w->u, address, size, bytes))
		/* Above the copy lies the rest of the stack (or other memory: we cannot tell). */
		return set_stop(stop,
				address >= s->stack_start && address < USER_ADDRESS_END
					? DACCE_UNWIND_STACK_TRUNCATED
					: DACCE_UNWIND_BAD_READ,
				address, NULL);
	*value = 0;
	for (unsigned i = 0; i < size; i++)
		*value |= (uint64_t)bytes[i] << (8 * i);
	return true;
}

/* ------------------------------------------------------------ DWARF expressions */

struct expr_stack {
	uint64_t v[EXPR_STACK_MAX];
	size_t n;
};

static bool malformed(const struct expr_env *env)
{
	return set_stop(env->stop, DACCE_UNWIND_BAD_CFI, env->pc, "malformed DWARF expression");
}

static bool push(const struct expr_env *env, struct expr_stack *st, uint64_t value)
{
	if (st->n == EXPR_STACK_MAX)
		return malformed(env);
	st->v[st->n++] = value;
	return true;
}

static bool pop(const struct expr_env *env, struct expr_stack *st, uint64_t *value)
{
	if (st->n == 0)
		return malformed(env);
	*value = st->v[--st->n];
	return true;
}

/* Pushes a copy of the entry depth places below the top. */
static bool pick(const struct expr_env *env, struct expr_stack *st, uint64_t depth)
{
	if (depth >= st->n)
		return malformed(env);
	return push(env, st, st->v[st->n - 1 - depth]);
}

static bool reg_value(const struct expr_env *env, uint64_t reg, uint64_t *value)
{
	if (reg >= DACCE_UNWIND_NREGS)
		return set_stop(env->stop, DACCE_UNWIND_BAD_CFI, env->pc,
				"register number out of range");
	if (!reg_known(env->frame, (unsigned)reg))
		return set_stop(env->stop, DACCE_UNWIND_REG_UNKNOWN, env->pc, reg_names[reg]);
	*value = env->frame->reg[reg];
	return true;
}

static bool is_binary_op(uint8_t atom)
{
	switch (atom) {
	case DW_OP_and:
	case DW_OP_or:
	case DW_OP_xor:
	case DW_OP_plus:
	case DW_OP_minus:
	case DW_OP_mul:
	case DW_OP_div:
	case DW_OP_mod:
	case DW_OP_shl:
	case DW_OP_shr:
	case DW_OP_shra:
	case DW_OP_eq:
	case DW_OP_ne:
	case DW_OP_lt:
	case DW_OP_le:
	case DW_OP_gt:
	case DW_OP_ge: return true;
	default: return false;
	}
}

/* a OP b, b being the top of the stack; false on a division by zero. */
static bool binary_op(uint8_t atom, uint64_t a, uint64_t b, uint64_t *r)
{
	int64_t sa = (int64_t)a, sb = (int64_t)b;

	switch (atom) {
	case DW_OP_and: *r = a & b; break;
	case DW_OP_or: *r = a | b; break;
	case DW_OP_xor: *r = a ^ b; break;
	case DW_OP_plus: *r = a + b; break;
	case DW_OP_minus: *r = a - b; break;
	case DW_OP_mul: *r = a * b; break;
	case DW_OP_shl: *r = b < 64 ? a << b : 0; break;
	case DW_OP_shr: *r = b < 64 ? a >> b : 0; break;
	case DW_OP_shra: *r = (uint64_t)(sa >> (b < 63 ? b : 63)); break;
	case DW_OP_eq: *r = sa == sb; break;
	case DW_OP_ne: *r = sa != sb; break;
	case DW_OP_lt: *r = sa < sb; break;
	case DW_OP_le: *r = sa <= sb; break;
	case DW_OP_gt: *r = sa > sb; break;
	case DW_OP_ge: *r = sa >= sb; break;
	case DW_OP_div:
		if (b == 0 || (sa == INT64_MIN && sb == -1))
			return false;
		*r = (uint64_t)(sa / sb);
		break;
	case DW_OP_mod:
		if (b == 0)
			return false;
		*r = a % b;
		break;
	default: return false;
	}
	return true;
}

/* Operators with one operand, the top of the stack, replaced by the result. */
static bool unary_op(const struct expr_env *env, const Dwarf_Op *op, struct expr_stack *st)
{
	uint64_t a;

	if (!pop(env, st, &a))
		return false;
	switch (op->atom) {
	case DW_OP_plus_uconst: a += op->number; break;
	case DW_OP_abs: a = (int64_t)a < 0 ? -a : a; break;
	case DW_OP_neg: a = -a; break;
	case DW_OP_not: a = ~a; break;
	case DW_OP_deref:
		if (!read_memory(env->w, a, 8, &a, env->stop))
			return false;
		break;
	default: /* DW_OP_deref_size */
		if (op->number < 1 || op->number > 8)
			return malformed(env);
		if (!read_memory(env->w, a, (unsigned)op->number, &a, env->stop))
			return false;
		break;
	}
	return push(env, st, a);
}

/* The entries a, b, c (c on top) become c, a, b (b on top): DW_OP_rot. */
static bool rotate(const struct expr_env *env, struct expr_stack *st)
{
	uint64_t a, b, c;

	return pop(env, st, &c) && pop(env, st, &b) && pop(env, st, &a) && push(env, st, c) &&
	       push(env, st, a) && push(env, st, b);
}

/* Executes one operation that is neither a branch nor one that ends the expression. */
static bool exec_op(const struct expr_env *env, const Dwarf_Op *op, struct expr_stack *st)
{
	uint8_t atom = op->atom;
	uint64_t a, b, r;

	if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31)
		return push(env, st, atom - DW_OP_lit0);
	if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31)
		return reg_value(env, atom - DW_OP_breg0, &a) && push(env, st, a + op->number);
	if (is_binary_op(atom))
		return pop(env, st, &b) && pop(env, st, &a) &&
		       (binary_op(atom, a, b, &r) || malformed(env)) && push(env, st, r);
	switch (atom) {
	case DW_OP_addr:
	case DW_OP_const1u:
	case DW_OP_const1s:
	case DW_OP_const2u:
	case DW_OP_const2s:
	case DW_OP_const4u:
	case DW_OP_const4s:
	case DW_OP_const8u:
	case DW_OP_const8s:
	case DW_OP_constu:
	case DW_OP_consts:
		return push(env, st, op->number); /* libdw sign-extends the signed forms */
	case DW_OP_bregx: return reg_value(env, op->number, &a) && push(env, st, a + op->number2);
	case DW_OP_call_frame_cfa:
		/* Only register rules may use the CFA: CFI computes the CFA without it. */
		return (env->have_cfa || malformed(env)) && push(env, st, env->cfa);
	case DW_OP_dup: return pick(env, st, 0);
	case DW_OP_over: return pick(env, st, 1);
	case DW_OP_pick: return pick(env, st, op->number);
	case DW_OP_drop: return pop(env, st, &a);
	case DW_OP_swap:
		return pop(env, st, &b) && pop(env, st, &a) && push(env, st, b) && push(env, st, a);
	case DW_OP_rot: return rotate(env, st);
	case DW_OP_plus_uconst:
	case DW_OP_abs:
	case DW_OP_neg:
	case DW_OP_not:
	case DW_OP_deref:
	case DW_OP_deref_size: return unary_op(env, op, st);
	case DW_OP_nop: return true;
	default:
		return set_stop(env->stop, DACCE_UNWIND_BAD_CFI, env->pc,
				"unsupported DWARF operation");
	}
}

/* Where DW_OP_skip or DW_OP_bra at ops[at] goes: an op index, or nops for the end. */
static bool branch_target(const Dwarf_Op *ops, size_t nops, size_t at, size_t *next)
{
	/* libdw keeps the signed 2-byte operand sign-extended; it counts from the next op. */
	uint64_t target = ops[at].offset + 3 + ops[at].number;

	for (size_t i = 0; i < nops; i++)
		if (ops[i].offset == target) {
			*next = i;
			return true;
		}
	if (target > ops[nops - 1].offset) {
		*next = nops;
		return true;
	}
	return false;
}

static bool is_register_location(uint8_t atom)
{
	return (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) || atom == DW_OP_regx;
}

/*
 * Evaluates a DWARF expression of CFI.  *result is the top of the stack;
 * *is_value says it is the value itself (DW_OP_stack_value, or DW_OP_regN:
 * "in register N") rather than the address the value is stored at.
 */
static bool eval_expr(const struct expr_env *env, const Dwarf_Op *ops, size_t nops,
		      uint64_t *result, bool *is_value)
{
	struct expr_stack st = { .n = 0 };
	size_t i = 0;
	uint64_t cond;

	*is_value = false;
	for (unsigned steps = 0; i < nops; steps++) {
		const Dwarf_Op *op = &ops[i];

		if (steps == EXPR_STEPS_MAX)
			return malformed(env); /* a loop */
		if (op->atom == DW_OP_stack_value || is_register_location(op->atom)) {
			if (i + 1 != nops)
				return malformed(env);
			*is_value = true;
			if (op->atom == DW_OP_stack_value)
				break;
			return reg_value(env,
					 op->atom == DW_OP_regx ? op->number
								: (uint64_t)(op->atom - DW_OP_reg0),
					 result);
		}
		if (op->atom == DW_OP_bra) {
			if (!pop(env, &st, &cond))
				return false;
			if (!cond) {
				i++;
				continue;
			}
		}
		if (op->atom == DW_OP_skip || op->atom == DW_OP_bra) {
			if (!branch_target(ops, nops, i, &i))
				return malformed(env);
			continue;
		}
		if (!exec_op(env, op, &st))
			return false;
		i++;
	}
	if (st.n == 0)
		return malformed(env);
	*result = st.v[st.n - 1];
	return true;
}

/* ------------------------------------------------------------ stepping by CFI */

enum rule_outcome { RULE_VALUE, RULE_UNDEFINED, RULE_FAILED };

/* The caller's value of register reg, by frame's rule for it. */
static enum rule_outcome caller_reg(const struct expr_env *env, Dwarf_Frame *frame, unsigned reg,
				    uint64_t *value)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	bool is_value;

	if (dwarf_frame_register(frame, (int)reg, mem, &ops, &nops) != 0) {
		set_stop(env->stop, DACCE_UNWIND_BAD_CFI, env->pc, dwarf_errmsg(-1));
		return RULE_FAILED;
	}
	if (nops == 0) {
		/* ops NULL: "same value", the callee left it alone; else "undefined". */
		if (!ops && reg == DACCE_REG_RIP) {
			/* The caller would run where this frame runs, forever. */
			set_stop(env->stop, DACCE_UNWIND_BAD_CFI, env->pc,
				 "return address rule is \"same value\"");
			return RULE_FAILED;
		}
		if (ops || !reg_known(env->frame, reg))
			return RULE_UNDEFINED;
		*value = env->frame->reg[reg];
		return RULE_VALUE;
	}
	if (!eval_expr(env, ops, nops, value, &is_value))
		return RULE_FAILED;
	if (!is_value && !read_memory(env->w, *value, 8, value, env->stop))
		return RULE_FAILED;
	return RULE_VALUE;
}

/* The CFA of frame, evaluated against the registers of the frame it describes. */
static bool frame_cfa(struct expr_env *env, Dwarf_Frame *frame)
{
	Dwarf_Op *ops;
	size_t nops;
	bool is_value;

	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops == 0)
		return set_stop(env->stop, DACCE_UNWIND_BAD_CFI, env->pc, "CFA undefined");
	if (!eval_expr(env, ops, nops, &env->cfa, &is_value))
		return false;
	env->have_cfa = true;
	return true;
}

/* The caller's registers by frame's rules: pc and rsp must be had, the rest if they can. */
static bool apply_rules(const struct expr_env *env, Dwarf_Frame *frame, struct frame_state *caller)
{
	struct stop_info ignored;
	struct expr_env quiet = *env;
	uint64_t value;

	memset(caller, 0, sizeof(*caller));
	switch (caller_reg(env, frame, DACCE_REG_RIP, &value)) {
	case RULE_UNDEFINED: return set_stop(env->stop, DACCE_UNWIND_OUTERMOST, 0, NULL);
	case RULE_FAILED: return false;
	case RULE_VALUE: set_reg(caller, DACCE_REG_RIP, value);
	}
	/* x86-64: the CFA is the caller's rsp, unless a rule (a signal frame's) says otherwise. */
	switch (caller_reg(env, frame, DACCE_REG_RSP, &value)) {
	case RULE_FAILED: return false;
	case RULE_UNDEFINED:
		value = env->cfa;
		/* fall through */
	case RULE_VALUE: set_reg(caller, DACCE_REG_RSP, value);
	}
	/* A register that cannot be recovered is unknown; it stops only a step that needs it. */
	quiet.stop = &ignored;
	for (unsigned reg = 0; reg < DACCE_UNWIND_NREGS; reg++)
		if (reg != DACCE_REG_RIP && reg != DACCE_REG_RSP &&
		    caller_reg(&quiet, frame, reg, &value) == RULE_VALUE)
			set_reg(caller, reg, value);
	return true;
}

/* Finds the CFI row for link-time address pc: .eh_frame first, then .debug_frame. */
static bool find_frame(struct module_file *f, uint64_t pc, uint64_t run_pc, Dwarf_Frame **frame,
		       struct stop_info *stop)
{
	/* libdw's message says whether no FDE covers pc or the CFI is unreadable. */
	const char *why = "module has no CFI";
	Dwarf_CFI *debug;

	if (f->eh) {
		if (dwarf_cfi_addrframe(f->eh, pc, frame) == 0)
			return true;
		why = dwarf_errmsg(-1);
	}
	debug = debug_frame(f);
	if (debug) {
		if (dwarf_cfi_addrframe(debug, pc, frame) == 0)
			return true;
		why = dwarf_errmsg(-1);
	}
	return set_stop(stop, DACCE_UNWIND_NO_CFI, run_pc, why);
}

/*
 * Steps from cur by the CFI of module m at run-time address lookup (cur's pc,
 * minus one for a return address); stops name pc.
 */
static bool step_by_cfi(const struct walk *w, const struct module_range *m, uint64_t lookup,
			const struct frame_state *cur, uint64_t pc, struct frame_state *caller,
			struct stop_info *stop)
{
	struct expr_env env = { .w = w, .frame = cur, .pc = pc, .stop = stop };
	Dwarf_Frame *frame = NULL;
	bool signal_frame = false, ok = false;
	Dwarf_Addr row_start, row_end;
	int ra;

	if (m->file->err)
		return set_stop(stop, DACCE_UNWIND_MODULE_UNUSABLE, pc, m->file->why);
	if (!find_frame(m->file, lookup - m->bias, pc, &frame, stop))
		return false;
	ra = dwarf_frame_info(frame, &row_start, &row_end, &signal_frame);
	if (ra != DACCE_REG_RIP) {
		set_stop(stop, DACCE_UNWIND_BAD_CFI, pc, "return address column is not rip");
		goto cleanup;
	}
	if (!frame_cfa(&env, frame) || !apply_rules(&env, frame, caller))
		goto cleanup;
	/* A signal frame's caller was interrupted, not calling: its pc is exact. */
	caller->exact = signal_frame;
	ok = true;
cleanup:
	free(frame);
	return ok;
}

/* ------------------------------------------------------------ other steps */

static bool step_by_fp(const struct walk *w, const struct frame_state *cur,
		       struct frame_state *caller, struct stop_info *stop)
{
	uint64_t rbp = cur->reg[DACCE_REG_RBP], saved_rbp, ra;

	if (!reg_known(cur, DACCE_REG_RBP))
		return set_stop(stop, DACCE_UNWIND_REG_UNKNOWN, cur->reg[DACCE_REG_RIP], "rbp");
	/* The psABI asks the outermost frame to set rbp to 0 (glibc's _start does). */
	if (rbp == 0)
		return set_stop(stop, DACCE_UNWIND_OUTERMOST, 0, "frame-pointer chain ends");
	if (rbp < cur->reg[DACCE_REG_RSP] || (rbp & 7))
		return set_stop(stop, DACCE_UNWIND_BAD_FRAME, cur->reg[DACCE_REG_RIP],
				"rbp is no frame pointer");
	if (!read_memory(w, rbp, 8, &saved_rbp, stop) || !read_memory(w, rbp + 8, 8, &ra, stop))
		return false;
	memset(caller, 0, sizeof(*caller));
	set_reg(caller, DACCE_REG_RIP, ra);
	set_reg(caller, DACCE_REG_RSP, rbp + 16);
	set_reg(caller, DACCE_REG_RBP, saved_rbp);
	return true;
}

static bool step_by_code(const struct walk *w, const struct code_range *code,
			 const struct frame_state *cur, struct frame_state *caller,
			 struct stop_info *stop)
{
	const struct dacce_code_step *rule = &code->step;
	uint64_t rsp = cur->reg[DACCE_REG_RSP] + (uint64_t)(int64_t)rule->sp_offset, ra;
	const struct module_range *m;
	struct frame_state like;

	switch (rule->rule) {
	case DACCE_CODE_RETURN_AT_SP:
		if (!read_memory(w, rsp, 8, &ra, stop))
			return false;
		*caller = *cur;
		caller->exact = false;
		set_reg(caller, DACCE_REG_RIP, ra);
		set_reg(caller, DACCE_REG_RSP, rsp + 8);
		return true;
	case DACCE_CODE_LIKE_PC:
		like = *cur;
		like.exact = true;
		set_reg(&like, DACCE_REG_RIP, rule->like_pc);
		set_reg(&like, DACCE_REG_RSP, rsp);
		m = find_span(&w->u->modules, rule->like_pc);
		if (!m)
			return set_stop(stop, DACCE_UNWIND_NO_MODULE, rule->like_pc,
					"like_pc in no module");
		return step_by_cfi(w, m, rule->like_pc, &like, cur->reg[DACCE_REG_RIP], caller,
				   stop);
	default: return set_stop(stop, DACCE_UNWIND_GENERATED_CODE, cur->reg[DACCE_REG_RIP], NULL);
	}
}

/* Whether a caller found by any rule can be real. */
static bool plausible(const struct frame_state *cur, const struct frame_state *caller,
		      struct stop_info *stop)
{
	if (caller->reg[DACCE_REG_RIP] == 0)
		return set_stop(stop, DACCE_UNWIND_BAD_FRAME, cur->reg[DACCE_REG_RIP],
				"return address 0");
	/* Each call pushes a return address; only a signal may move to another stack. */
	if (!caller->exact && caller->reg[DACCE_REG_RSP] <= cur->reg[DACCE_REG_RSP])
		return set_stop(stop, DACCE_UNWIND_BAD_FRAME, cur->reg[DACCE_REG_RIP],
				"stack pointer did not move up");
	return true;
}

/* Finds the caller of cur; false with *stop saying why there is none. */
static bool step(const struct walk *w, const struct frame_state *cur, struct frame_state *caller,
		 uint8_t *how, struct stop_info *stop)
{
	uint64_t pc = cur->reg[DACCE_REG_RIP];
	uint64_t lookup = cur->exact ? pc : pc - 1; /* inside the call, not past it */
	const struct code_range *code = find_span(&w->u->code, lookup);
	const struct module_range *m;
	bool ok;

	if (code) {
		*how = DACCE_FRAME_BY_CODE;
		ok = step_by_code(w, code, cur, caller, stop);
	} else if (!(m = find_span(&w->u->modules, lookup))) {
		return set_stop(stop, DACCE_UNWIND_NO_MODULE, pc, NULL);
	} else {
		*how = DACCE_FRAME_BY_CFI;
		ok = step_by_cfi(w, m, lookup, cur, pc, caller, stop);
		if (!ok && (w->flags & DACCE_UNWIND_FP_FALLBACK) &&
		    (stop->why == DACCE_UNWIND_NO_CFI ||
		     stop->why == DACCE_UNWIND_MODULE_UNUSABLE)) {
			*how = DACCE_FRAME_BY_FP;
			ok = step_by_fp(w, cur, caller, stop);
		}
	}
	return ok && plausible(cur, caller, stop);
}

/* ------------------------------------------------------------ unwinding */

static struct dacce_unwind_frame frame_of(const struct frame_state *f, uint8_t how)
{
	return (struct dacce_unwind_frame){ .pc = f->reg[DACCE_REG_RIP],
					    .sp = f->reg[DACCE_REG_RSP],
					    .how = how,
					    .exact = f->exact };
}

int dacce_unwind(struct dacce_unwinder *u, const struct dacce_unwind_sample *sample, unsigned flags,
		 struct dacce_unwind_frame *frames, uint32_t max_frames,
		 struct dacce_unwind_result *result)
{
	const uint32_t needed = REG_BIT(DACCE_REG_RIP) | REG_BIT(DACCE_REG_RSP);
	struct walk w = { .u = u, .sample = sample, .flags = flags };
	struct frame_state cur, caller;
	uint32_t n = 0;

	if (!u || !sample || !frames || !result || !max_frames ||
	    (sample->regs.known & needed) != needed || (sample->stack_len && !sample->stack))
		return -EINVAL;
	memset(result, 0, sizeof(*result));
	memcpy(cur.reg, sample->regs.value, sizeof(cur.reg));
	cur.known = sample->regs.known & ALL_REGS;
	cur.exact = true;
	frames[n++] = frame_of(&cur, DACCE_FRAME_SAMPLED);
	for (;;) {
		struct stop_info stop = { .why = DACCE_UNWIND_OUTERMOST };
		uint8_t how = DACCE_FRAME_BY_CFI;

		if (!step(&w, &cur, &caller, &how, &stop)) {
			result->stop = stop.why;
			result->stop_address = stop.address;
			result->detail = stop.detail;
			break;
		}
		if (n == max_frames) {
			result->stop = DACCE_UNWIND_MAX_FRAMES;
			break;
		}
		frames[n++] = frame_of(&caller, how);
		cur = caller;
	}
	result->n_frames = n;
	return 0;
}

const char *dacce_unwind_stop_text(int stop)
{
	switch (stop) {
	case DACCE_UNWIND_OUTERMOST: return "reached the outermost frame";
	case DACCE_UNWIND_MAX_FRAMES: return "too many frames";
	case DACCE_UNWIND_STACK_TRUNCATED: return "stack copy too short";
	case DACCE_UNWIND_BAD_READ: return "bad memory read";
	case DACCE_UNWIND_NO_MODULE: return "pc in no module";
	case DACCE_UNWIND_NO_CFI: return "no CFI for pc";
	case DACCE_UNWIND_MODULE_UNUSABLE: return "module file unusable";
	case DACCE_UNWIND_GENERATED_CODE: return "pc in generated code without unwind rule";
	case DACCE_UNWIND_REG_UNKNOWN: return "register unknown";
	case DACCE_UNWIND_BAD_CFI: return "bad CFI";
	case DACCE_UNWIND_BAD_FRAME: return "impossible frame";
	default: return "unknown stop";
	}
}
