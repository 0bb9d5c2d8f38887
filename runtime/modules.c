// SPDX-License-Identifier: MIT
#include "modules.h"

#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define NOTE_NAME_GNU "GNU"

/* What the dl_iterate_phdr callback needs besides the list it fills. */
struct scan_ctx {
	struct dacce_modules *out;
	size_t cap;
	int err;
	uintptr_t vdso_ehdr;	/* AT_SYSINFO_EHDR: where the kernel mapped the vDSO */
	uintptr_t loader_base;	/* AT_BASE: the loader's bias, 0 when it ran as the program */
	const char *interp;	/* the main program's PT_INTERP, once seen */
};

static bool has_counters(size_t info_size)
{
	return info_size >= offsetof(struct dl_phdr_info, dlpi_subs) +
				    sizeof(((struct dl_phdr_info *)0)->dlpi_subs);
}

static size_t align_up(size_t n, size_t align)
{
	return (n + align - 1) & ~(align - 1);
}

/* Whether [vaddr, vaddr+size) lies within the file-backed part of a PT_LOAD. */
static bool mapped_from_file(const struct dl_phdr_info *info, ElfW(Addr) vaddr, size_t size)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr &&
		    size <= ph->p_filesz && vaddr - ph->p_vaddr <= ph->p_filesz - size)
			return true;
	}
	return false;
}

/* Looks for NT_GNU_BUILD_ID in one PT_NOTE segment; true when found. */
static bool build_id_in_note(const struct dl_phdr_info *info, const ElfW(Phdr) *note,
			     struct dacce_module_info *m)
{
	/* Notes are 4-byte aligned, except in segments that say 8 (gnu.property). */
	size_t align = note->p_align == 8 ? 8 : 4;
	const uint8_t *p = (const uint8_t *)(info->dlpi_addr + note->p_vaddr);
	size_t left = note->p_filesz;

	if (!mapped_from_file(info, note->p_vaddr, note->p_filesz))
		return false;
	while (left >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		size_t name_at, desc_at, next;

		memcpy(&nh, p, sizeof(nh));
		name_at = sizeof(nh);
		desc_at = align_up(name_at + nh.n_namesz, align);
		next = align_up(desc_at + nh.n_descsz, align);
		if (nh.n_namesz > left || nh.n_descsz > left || next > left)
			return false;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(NOTE_NAME_GNU) &&
		    memcmp(p + name_at, NOTE_NAME_GNU, sizeof(NOTE_NAME_GNU)) == 0) {
			if (nh.n_descsz == 0 || nh.n_descsz > DACCE_BUILD_ID_MAX)
				return false;
			memcpy(m->build_id, p + desc_at, nh.n_descsz);
			m->build_id_len = nh.n_descsz;
			return true;
		}
		p += next;
		left -= next;
	}
	return false;
}

static void read_build_id(const struct dl_phdr_info *info, struct dacce_module_info *m)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_NOTE &&
		    build_id_in_note(info, &info->dlpi_phdr[i], m))
			return;
}

static const char *read_interp(const struct dl_phdr_info *info)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *s = (const char *)(info->dlpi_addr + ph->p_vaddr);

		if (ph->p_type != PT_INTERP || ph->p_filesz == 0 ||
		    !mapped_from_file(info, ph->p_vaddr, ph->p_filesz))
			continue;
		/* Only a NUL-terminated string within the segment. */
		return memchr(s, '\0', ph->p_filesz) ? s : NULL;
	}
	return NULL;
}

/* Span of the PT_LOAD segments and the executable ones among them. */
static int read_segments(const struct dl_phdr_info *info, struct dacce_module_info *m)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	size_t n_exec = 0;

	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		n_exec += (ph->p_flags & PF_X) != 0;
	}
	if (lo >= hi)
		return -ENOENT;
	m->start = lo;
	m->end = hi;
	if (n_exec == 0)
		return 0;
	m->exec = calloc(n_exec, sizeof(*m->exec));
	if (!m->exec)
		return -ENOMEM;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		m->exec[m->n_exec].start = info->dlpi_addr + ph->p_vaddr;
		m->exec[m->n_exec].end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		m->n_exec++;
	}
	return 0;
}

/* The unwind tables' header and the segment around it, when the module has them. */
static void read_unwind_tables(const struct dl_phdr_info *info, struct dacce_module_info *m)
{
	const ElfW(Phdr) *hdr = NULL;

	for (size_t i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			hdr = &info->dlpi_phdr[i];
	if (!hdr)
		return;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || hdr->p_vaddr < ph->p_vaddr ||
		    hdr->p_vaddr + hdr->p_memsz > ph->p_vaddr + ph->p_filesz)
			continue;
		m->eh_frame_hdr.start = info->dlpi_addr + hdr->p_vaddr;
		m->eh_frame_hdr.end = m->eh_frame_hdr.start + hdr->p_memsz;
		m->unwind_readable.start = info->dlpi_addr + ph->p_vaddr;
		m->unwind_readable.end = m->unwind_readable.start + ph->p_filesz;
		return;
	}
}

/* The program's own file: /proc/self/exe names it even when PATH found it. */
static char *main_program_path(const char *reported)
{
	char buf[PATH_MAX];
	ssize_t len;

	/* Started as `ld.so ./prog`: /proc/self/exe is the loader; trust the name. */
	if (reported[0] != '\0') {
		char *resolved = realpath(reported, NULL);

		return resolved ? resolved : strdup(reported);
	}
	len = readlink("/proc/thread-self/exe", buf, sizeof(buf) - 1); /* see patch.c */
	if (len <= 0)
		return strdup("");
	buf[len] = '\0';
	return strdup(buf);
}

static void classify(const struct dl_phdr_info *info, struct scan_ctx *ctx,
		     struct dacce_module_info *m, bool first)
{
	/* glibc reports the main program first (the base namespace's head). */
	m->is_main = first;
	m->is_vdso = ctx->vdso_ehdr && ctx->vdso_ehdr >= m->start && ctx->vdso_ehdr < m->end;
	if (m->is_main) {
		ctx->interp = read_interp(info);
		return;
	}
	m->is_loader = !m->is_vdso &&
		       ((ctx->loader_base && info->dlpi_addr == ctx->loader_base) ||
			(ctx->interp && strcmp(info->dlpi_name, ctx->interp) == 0));
}

static int add_module(struct dl_phdr_info *info, struct scan_ctx *ctx)
{
	struct dacce_modules *out = ctx->out;
	struct dacce_module_info *m;
	bool first = out->n == 0;
	int err;

	if (out->n == ctx->cap) {
		size_t cap = ctx->cap ? 2 * ctx->cap : 16;
		struct dacce_module_info *grown = realloc(out->mods, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		out->mods = grown;
		ctx->cap = cap;
	}
	m = &out->mods[out->n];
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	err = read_segments(info, m);
	if (err == -ENOENT)
		return 0; /* nothing mapped: nothing to report */
	if (err)
		goto cleanup;
	classify(info, ctx, m, first);
	read_build_id(info, m);
	read_unwind_tables(info, m);
	if (m->is_main)
		m->path = main_program_path(info->dlpi_name ? info->dlpi_name : "");
	else if (m->is_vdso && (!info->dlpi_name || !info->dlpi_name[0]))
		m->path = strdup("[vdso]");
	else
		m->path = strdup(info->dlpi_name ? info->dlpi_name : "");
	if (!m->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	out->n++;
	return 0;
cleanup:
	free(m->exec);
	m->exec = NULL;
	return err;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan_ctx *ctx = data;

	if (has_counters(size) && ctx->out->n == 0 && ctx->err == 0) {
		ctx->out->adds = info->dlpi_adds;
		ctx->out->subs = info->dlpi_subs;
	}
	ctx->err = add_module(info, ctx);
	return ctx->err ? 1 : 0;
}

int dacce_modules_scan(struct dacce_modules *out)
{
	struct scan_ctx ctx = {
		.out = out,
		.vdso_ehdr = getauxval(AT_SYSINFO_EHDR),
		.loader_base = getauxval(AT_BASE),
	};

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	dl_iterate_phdr(scan_one, &ctx);
	if (ctx.err) {
		dacce_modules_fini(out);
		return ctx.err;
	}
	return 0;
}

void dacce_modules_fini(struct dacce_modules *mods)
{
	if (!mods)
		return;
	for (size_t i = 0; i < mods->n; i++) {
		free(mods->mods[i].path);
		free(mods->mods[i].exec);
	}
	free(mods->mods);
	memset(mods, 0, sizeof(*mods));
}

int dacce_module_info_copy(struct dacce_module_info *dst, const struct dacce_module_info *src)
{
	*dst = *src;
	dst->path = strdup(src->path);
	dst->exec = malloc((src->n_exec ? src->n_exec : 1) * sizeof(*dst->exec));
	if (!dst->path || !dst->exec) {
		dacce_module_info_fini(dst);
		return -ENOMEM;
	}
	memcpy(dst->exec, src->exec, src->n_exec * sizeof(*dst->exec));
	return 0;
}

void dacce_module_info_fini(struct dacce_module_info *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->exec);
	memset(m, 0, sizeof(*m));
}

bool dacce_module_info_same(const struct dacce_module_info *a, const struct dacce_module_info *b)
{
	return a->start == b->start && a->end == b->end && a->bias == b->bias &&
	       a->build_id_len == b->build_id_len &&
	       memcmp(a->build_id, b->build_id, a->build_id_len) == 0 && strcmp(a->path, b->path) == 0;
}

const struct dacce_module_info *dacce_modules_find(const struct dacce_modules *mods,
						   uintptr_t addr)
{
	if (!mods)
		return NULL;
	for (size_t i = 0; i < mods->n; i++)
		if (addr >= mods->mods[i].start && addr < mods->mods[i].end)
			return &mods->mods[i];
	return NULL;
}

bool dacce_module_is_exec(const struct dacce_module_info *mod, uintptr_t addr)
{
	if (!mod)
		return false;
	for (size_t i = 0; i < mod->n_exec; i++)
		if (addr >= mod->exec[i].start && addr < mod->exec[i].end)
			return true;
	return false;
}

struct counters {
	unsigned long long adds, subs;
	bool known;
};

static int read_counters(struct dl_phdr_info *info, size_t size, void *data)
{
	struct counters *c = data;

	if (has_counters(size)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
		c->known = true;
	}
	return 1; /* the counters are the same in every entry: one is enough */
}

bool dacce_modules_changed(const struct dacce_modules *mods)
{
	struct counters now = { 0 };

	if (!mods)
		return true;
	dl_iterate_phdr(read_counters, &now);
	/* Without counters (very old loader) nothing can be told: assume a change. */
	return !now.known || now.adds != mods->adds || now.subs != mods->subs;
}
