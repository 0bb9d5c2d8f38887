// SPDX-License-Identifier: MIT
#include "pristine.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "funcs.h"

#define MAX_SEGMENTS 8

struct segment {
	uintptr_t start, end; /* run-time addresses of the bytes the file holds */
	off_t offset;	      /* file offset of start */
	const uint8_t *bytes; /* the file's bytes of [start, end), mapped */
	void *map;	      /* the mapping (from the page holding offset) */
	size_t map_len;
};

/*
 * The file is mapped, not kept open: programs close every descriptor they
 * did not open (ssh's closefrom), and a number closed behind our back may
 * name another file by the next read.  A running program's file cannot be
 * truncated (ETXTBSY), so the mapping cannot fault.
 */
static struct {
	struct segment segs[MAX_SEGMENTS];
	size_t n;
} file;

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

/* Maps each segment's bytes from the file; one that cannot be is dropped. */
static void map_segments(int fd)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), kept = 0;

	for (size_t i = 0; i < file.n; i++) {
		struct segment *seg = &file.segs[i];
		off_t from = seg->offset & ~(off_t)(page - 1);
		size_t len = (size_t)(seg->offset - from) + (seg->end - seg->start);
		void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, from);

		if (map == MAP_FAILED)
			continue;
		seg->map = map;
		seg->map_len = len;
		seg->bytes = (const uint8_t *)map + (seg->offset - from);
		file.segs[kept++] = *seg;
	}
	file.n = kept;
}

int dacce_pristine_open(const struct dacce_module_info *m)
{
	int fd;

	if (!m || !m->is_main)
		return -EINVAL;
	dacce_pristine_close();
	fd = open(dacce_funcs_file_of(m), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dl_iterate_phdr(note_segments, NULL);
	map_segments(fd);
	close(fd);
	return file.n ? 0 : -ENOMEM;
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
	const uint8_t *from_file;
	int mended = 0;

	if (!bytes || !memchr(bytes, DACCE_INT3, len))
		return 0;
	seg = segment_of(addr, len);
	if (!seg)
		return 0;
	from_file = seg->bytes + (addr - seg->start);
	for (size_t i = 0; i < len; i++) {
		if (bytes[i] != DACCE_INT3 || from_file[i] == DACCE_INT3)
			continue;
		bytes[i] = from_file[i];
		if (offsets && (size_t)mended < max)
			offsets[mended] = i;
		mended++;
	}
	return mended;
}

void dacce_pristine_close(void)
{
	for (size_t i = 0; i < file.n; i++)
		munmap(file.segs[i].map, file.segs[i].map_len);
	file.n = 0;
}
