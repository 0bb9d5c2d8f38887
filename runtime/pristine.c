// SPDX-License-Identifier: MIT
#include "pristine.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "funcs.h"

#define MAX_SEGMENTS 8

struct segment {
	uintptr_t start, end; /* run-time addresses of the bytes the file holds */
	off_t offset;	      /* file offset of start */
};

static struct {
	int fd;
	struct segment segs[MAX_SEGMENTS];
	size_t n;
} file = { .fd = -1 };

/* The executable PT_LOAD segments of the program (dl_iterate_phdr lists it first). */
static int note_segments(struct dl_phdr_info *info, size_t size, void *unused)
{
	(void)size;
	(void)unused;
	for (size_t i = 0; i < info->dlpi_phnum && file.n < MAX_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_filesz == 0)
			continue;
		file.segs[file.n++] = (struct segment){
			.start = info->dlpi_addr + ph->p_vaddr,
			.end = info->dlpi_addr + ph->p_vaddr + ph->p_filesz,
			.offset = (off_t)ph->p_offset,
		};
	}
	return 1; /* the main program only */
}

int dacce_pristine_open(const struct dacce_module_info *m)
{
	if (!m || !m->is_main)
		return -EINVAL;
	dacce_pristine_close();
	file.fd = open(dacce_funcs_file_of(m), O_RDONLY | O_CLOEXEC);
	if (file.fd < 0)
		return -errno;
	dl_iterate_phdr(note_segments, NULL);
	return 0;
}

static const struct segment *segment_of(uintptr_t addr, size_t len)
{
	for (size_t i = 0; i < file.n; i++)
		if (addr >= file.segs[i].start && len <= file.segs[i].end - addr &&
		    addr < file.segs[i].end)
			return &file.segs[i];
	return NULL;
}

int dacce_pristine_mend(uintptr_t addr, uint8_t *bytes, size_t len, size_t *offsets,
			size_t max)
{
	const struct segment *seg;
	uint8_t *from_file;
	ssize_t got;
	int mended = 0;

	if (!bytes || !memchr(bytes, DACCE_INT3, len))
		return 0;
	seg = segment_of(addr, len);
	if (file.fd < 0 || !seg)
		return 0;
	from_file = malloc(len);
	if (!from_file)
		return -ENOMEM;
	got = pread(file.fd, from_file, len, seg->offset + (off_t)(addr - seg->start));
	if (got != (ssize_t)len) {
		free(from_file);
		return got < 0 ? -errno : -EIO;
	}
	for (size_t i = 0; i < len; i++) {
		if (bytes[i] != DACCE_INT3 || from_file[i] == DACCE_INT3)
			continue;
		bytes[i] = from_file[i];
		if (offsets && (size_t)mended < max)
			offsets[mended] = i;
		mended++;
	}
	free(from_file);
	return mended;
}

void dacce_pristine_close(void)
{
	if (file.fd >= 0)
		close(file.fd);
	file.fd = -1;
	file.n = 0;
}
