// SPDX-License-Identifier: MIT
#include "codecache.h"
#include "probes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Keep clear of the rel32 edge: instructions add a few bytes to their target. */
#define REACH ((uintptr_t)INT32_MAX - (1u << 20))
#define LOWEST_ADDRESS ((uintptr_t)1 << 16)
#define HIGHEST_ADDRESS ((uintptr_t)1 << 47)
/* A window search that fails on a snapshot older than this reads maps again. */
#define MAPS_STALE_NS 50000000ull

void dacce_codecache_init(struct dacce_codecache *cache)
{
	memset(cache, 0, sizeof(*cache));
}

void dacce_codecache_fini(struct dacce_codecache *cache)
{
	if (!cache)
		return;
	for (size_t i = 0; i < cache->n; i++) {
		munmap((void *)cache->regions[i].exec, cache->regions[i].size);
		munmap(cache->regions[i].write, cache->regions[i].size);
	}
	free(cache->regions);
	free(cache->by_exec);
	free(cache->maps);
	dacce_kept_fd_close(&cache->maps_file);
	memset(cache, 0, sizeof(*cache));
}

static uintptr_t distance(uintptr_t a, uintptr_t b)
{
	return a > b ? a - b : b - a;
}

/* Every byte of [start, start+size) and of [near_lo, near_hi) within rel32 of each other. */
static bool region_reaches(uintptr_t start, size_t size, uintptr_t near_lo, uintptr_t near_hi)
{
	/* The farthest pairs are the opposite ends. */
	return distance(start + size, near_lo) <= REACH && distance(near_hi, start) <= REACH;
}

/*
 * The process's mappings, sorted (as /proc/self/maps lists them), read from
 * fd at offset 0 (which makes the kernel list them anew).  Without stdio:
 * this may run with the program's threads stopped, one of them perhaps
 * holding a stdio lock.
 */
static int parse_mappings(int fd, struct dacce_address_range **out, size_t *n_out)
{
	struct dacce_address_range *list = NULL, *grown;
	size_t n = 0, cap = 0, have = 0;
	char buf[4096];
	off_t at = 0;
	int err = 0;

	for (;;) {
		ssize_t got = pread(fd, buf + have, sizeof(buf) - 1 - have, at);
		char *line = buf, *end;

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			goto cleanup;
		}
		have += (size_t)got;
		at += got;
		buf[have] = '\0';
		while ((end = strchr(line, '\n'))) {
			unsigned long start, stop;

			*end = '\0';
			if (sscanf(line, "%lx-%lx", &start, &stop) == 2) {
				if (n == cap) {
					cap = cap ? cap * 2 : 64;
					grown = realloc(list, cap * sizeof(*list));
					if (!grown) {
						err = -ENOMEM;
						goto cleanup;
					}
					list = grown;
				}
				list[n++] = (struct dacce_address_range){ .start = start, .end = stop };
			}
			line = end + 1;
		}
		/* Keep the unfinished line for the next read. */
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (got == 0)
			break;
	}
	*out = list;
	*n_out = n;
	list = NULL;
cleanup:
	free(list);
	return err;
}

/*
 * The mappings, through the process leader's maps kept open (keptfd.h: the
 * policy thread builds code while the program runs).  Opened while the main
 * thread lives, it stays readable after main has called pthread_exit; opened
 * after that, it lists nothing (the leader has no memory left), and the
 * calling thread's own maps are read instead, opened for the call.
 */
static int read_mappings(struct dacce_codecache *cache, struct dacce_address_range **out,
			 size_t *n_out)
{
	int fd = dacce_kept_fd_get(&cache->maps_file, "/proc/self/maps", O_RDONLY), err;

	if (fd >= 0 && (err = parse_mappings(fd, out, n_out)) == 0) {
		if (*n_out > 0)
			return 0;
		free(*out);
	}
	dacce_kept_fd_close(&cache->maps_file);
	fd = open("/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = parse_mappings(fd, out, n_out);
	close(fd);
	return err;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Replaces the snapshot by what /proc/self/maps shows now. */
static int reread_maps(struct dacce_codecache *cache)
{
	struct dacce_address_range *maps;
	size_t n;
	int err = read_mappings(cache, &maps, &n);

	if (err)
		return err;
	free(cache->maps);
	cache->maps = maps;
	cache->n_maps = cache->cap_maps = n;
	cache->maps_read_ns = now_ns();
	return 0;
}

/* Adds a mapping of ours to the snapshot, in address order. */
static void note_mapped(struct dacce_codecache *cache, uintptr_t start, size_t size)
{
	size_t at = cache->n_maps;

	if (!cache->maps)
		return; /* the next search reads maps anyway */
	if (cache->n_maps == cache->cap_maps) {
		size_t cap = cache->cap_maps * 2 + 16;
		struct dacce_address_range *grown = realloc(cache->maps, cap * sizeof(*grown));

		if (!grown) { /* forget the snapshot rather than keep a wrong one */
			free(cache->maps);
			cache->maps = NULL;
			cache->n_maps = cache->cap_maps = 0;
			return;
		}
		cache->maps = grown;
		cache->cap_maps = cap;
	}
	while (at > 0 && cache->maps[at - 1].start > start)
		at--;
	memmove(&cache->maps[at + 1], &cache->maps[at], (cache->n_maps - at) * sizeof(*cache->maps));
	cache->maps[at] = (struct dacce_address_range){ .start = start, .end = start + size };
	cache->n_maps++;
}

/* Closest free spot of size bytes, within reach, or 0. */
static uintptr_t find_gap(const struct dacce_address_range *maps, size_t n, uintptr_t near_lo,
			  uintptr_t near_hi, size_t size)
{
	uintptr_t best = 0, best_distance = UINTPTR_MAX;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i <= n; i++) {
		uintptr_t gap_lo = i == 0 ? LOWEST_ADDRESS : maps[i - 1].end;
		uintptr_t gap_hi = i == n ? HIGHEST_ADDRESS : maps[i].start;
		uintptr_t candidates[2];

		/* Leave a guard page on each side of the region. */
		gap_lo += page;
		if (gap_hi < page || gap_hi - page < gap_lo || gap_hi - page - gap_lo < size)
			continue;
		gap_hi -= page;
		/* The two ends of the gap nearest to the code. */
		candidates[0] = gap_lo;
		candidates[1] = (gap_hi - size) & ~(page - 1);
		for (int c = 0; c < 2; c++) {
			uintptr_t at = candidates[c];
			uintptr_t how_far = at > near_hi ? at - near_hi
					    : at + size < near_lo ? near_lo - at : 0;

			if (at < gap_lo || !region_reaches(at, size, near_lo, near_hi))
				continue;
			if (how_far < best_distance) {
				best = at;
				best_distance = how_far;
			}
		}
	}
	return best;
}

/* A free page some start in [lo, hi) of which leaves len bytes, or 0. */
static uintptr_t find_window_page(const struct dacce_address_range *maps, size_t n, uintptr_t lo,
				  uintptr_t hi, size_t len)
{
	uintptr_t found = 0;

	for (size_t i = 0; i <= n && !found; i++) {
		uintptr_t gap_lo = i == 0 ? LOWEST_ADDRESS : maps[i - 1].end;
		uintptr_t gap_hi = i == n ? HIGHEST_ADDRESS : maps[i].start;
		/* The page holding lo, or the gap's first page: whichever comes later. */
		uintptr_t page = lo & ~(uintptr_t)(DACCE_WINDOW_PAGE - 1);

		if (page < gap_lo)
			page = (gap_lo + DACCE_WINDOW_PAGE - 1) & ~(uintptr_t)(DACCE_WINDOW_PAGE - 1);
		if (page + DACCE_WINDOW_PAGE > gap_hi || page >= hi)
			continue;
		/* Some start in the window, inside this page. */
		if ((lo > page ? lo : page) <= page + DACCE_WINDOW_PAGE - len)
			found = page;
	}
	return found;
}

/*
 * A second view of the shared pages at src, at the address at (0: anywhere),
 * with src's protection.  at must be a mapping of ours (a reservation, or
 * the view it replaces, in one step).  Returns the view or MAP_FAILED.
 */
static void *second_view(void *src, size_t size, uintptr_t at)
{
	if (at)
		return mremap(src, 0, size, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)at);
	return mremap(src, 0, size, MREMAP_MAYMOVE);
}

/*
 * Shared anonymous memory rather than a memfd: /proc/PID/maps names it
 * "/dev/zero (deleted)", which perf reads as anonymous code and names from
 * /tmp/perf-PID.map (runtime/perfmap.h); a memfd's name it would look for as
 * a file.  mremap with old size 0 gives the second view of the same pages.
 */
static int map_region(uintptr_t at, size_t size, struct dacce_code_region *region)
{
	void *reserve, *exec = MAP_FAILED, *write = MAP_FAILED;
	int err;

	/*
	 * The address is claimed first: a mapping someone made in the gap
	 * meanwhile stays, and the writable view cannot land there (the kernel
	 * puts a mapping without an address in the highest gap that fits,
	 * often the very one chosen: every retry failed the same way).
	 */
	reserve = mmap((void *)at, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);
	if (reserve == MAP_FAILED)
		return -errno;
	if ((uintptr_t)reserve != at) { /* kernels without MAP_FIXED_NOREPLACE treat it as a hint */
		err = -EEXIST;
		goto cleanup;
	}
	write = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (write == MAP_FAILED) {
		err = -errno;
		goto cleanup;
	}
	/*
	 * int3 in unused cache: a stray jump into it traps instead of sliding.
	 * A small region (a window page) is filled now; a large one page by
	 * page as it is carved (fill_to), so pages no code reached cost no
	 * memory and no fault (CPython's start-up used 7 of its 1 MiB regions
	 * but touched 4 MiB of them).
	 */
	if (size <= DACCE_WINDOW_PAGE)
		memset(write, 0xcc, size);
	exec = second_view(write, size, at);
	if (exec == MAP_FAILED) {
		err = -errno;
		goto cleanup;
	}
	reserve = MAP_FAILED; /* replaced by the view */
	/* Nothing runs there yet: read+write becomes read+execute, never both. */
	if (mprotect(exec, size, PROT_READ | PROT_EXEC) < 0) {
		err = -errno;
		goto cleanup;
	}
	*region = (struct dacce_code_region){ .exec = at, .write = write, .size = size,
					      .filled = size <= DACCE_WINDOW_PAGE ? size : 0 };
	return 0;
cleanup:
	if (exec != MAP_FAILED)
		munmap(exec, size);
	if (reserve != MAP_FAILED)
		munmap(reserve, size);
	if (write != MAP_FAILED)
		munmap(write, size);
	return err;
}

/* Room in the region list for one more. */
static int reserve_region_slot(struct dacce_codecache *cache)
{
	size_t cap = cache->cap ? cache->cap * 2 : 8;
	struct dacce_code_region *grown;

	struct dacce_region_key *keys;

	if (cache->n < cache->cap)
		return 0;
	keys = realloc(cache->by_exec, cap * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	cache->by_exec = keys;
	grown = realloc(cache->regions, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	cache->regions = grown;
	cache->cap = cap;
	return 0;
}

/* How many keys start at or below addr. */
static size_t keys_up_to(const struct dacce_codecache *cache, uintptr_t addr)
{
	size_t lo = 0, hi = cache->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cache->by_exec[mid].exec <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Appends region (room reserved) and puts it in its place in the sorted index. */
static struct dacce_code_region *append_region(struct dacce_codecache *cache,
					       const struct dacce_code_region *region)
{
	size_t at = keys_up_to(cache, region->exec);

	memmove(&cache->by_exec[at + 1], &cache->by_exec[at],
		(cache->n - at) * sizeof(*cache->by_exec));
	cache->by_exec[at] = (struct dacce_region_key){ .exec = region->exec, .size = region->size,
							.index = cache->n };
	cache->regions[cache->n] = *region;
	return &cache->regions[cache->n++];
}

/* Where a new region must go: within rel32 of [lo, hi) (size bytes), or a window page. */
struct placement {
	bool window; /* a page some start in [lo, hi) of which leaves len bytes */
	uintptr_t lo, hi;
	size_t size, len;
};

static uintptr_t find_place(const struct dacce_codecache *cache, const struct placement *want)
{
	if (want->window)
		return find_window_page(cache->maps, cache->n_maps, want->lo, want->hi, want->len);
	return find_gap(cache->maps, cache->n_maps, want->lo, want->hi, want->size);
}

/*
 * Maps a region where want says, found in the snapshot of the address space.
 * maps is read again when there is no snapshot, when the place it showed
 * free was taken meanwhile (by another thread, dlopen, the program), and
 * when it shows no place at all: always for a region near code, which is
 * rare; for a window page, which often has no room, only once it is older
 * than MAPS_STALE_NS.
 */
static int map_placed(struct dacce_codecache *cache, const struct placement *want,
		      struct dacce_code_region *region)
{
	bool fresh = false;
	int err = -EEXIST;

	for (int attempt = 0; attempt < 8 && err == -EEXIST; attempt++) {
		uintptr_t at;

		if (!cache->maps || attempt > 0) {
			err = reread_maps(cache);
			if (err)
				return err;
			fresh = true;
		}
		at = find_place(cache, want);
		if (!at && !fresh &&
		    (!want->window || now_ns() - cache->maps_read_ns > MAPS_STALE_NS)) {
			err = reread_maps(cache);
			if (err)
				return err;
			fresh = true;
			at = find_place(cache, want);
		}
		if (!at)
			return -ENOSPC;
		err = map_region(at, want->size, region);
	}
	if (!err)
		note_mapped(cache, region->exec, region->size);
	return err;
}

static int add_region(struct dacce_codecache *cache, uintptr_t near_lo, uintptr_t near_hi,
		      size_t min_size)
{
	struct placement want = { .lo = near_lo, .hi = near_hi, .size = DACCE_CODE_REGION_SIZE };
	struct dacce_code_region region;
	int err;

	while (want.size < min_size)
		want.size *= 2;
	err = reserve_region_slot(cache);
	if (err)
		return err;
	err = map_placed(cache, &want, &region);
	if (err)
		return err;
	append_region(cache, &region);
	DACCE_PROBE(code_region, region.exec, region.size);
	return 0;
}

/* Fills r with int3 up to the page holding byte end - 1 (see map_region). */
static void fill_to(struct dacce_code_region *r, size_t end)
{
	size_t to = (end + DACCE_WINDOW_PAGE - 1) & ~(size_t)(DACCE_WINDOW_PAGE - 1);

	if (to > r->size)
		to = r->size;
	if (to <= r->filled)
		return;
	memset(r->write + r->filled, 0xcc, to - r->filled);
	r->filled = to;
}

static bool carve(struct dacce_code_region *r, uintptr_t near_lo, uintptr_t near_hi, size_t len,
		  size_t align, uintptr_t *exec, uint8_t **write)
{
	size_t offset = (r->used + align - 1) & ~(align - 1);

	if (offset > r->size || r->size - offset < len)
		return false;
	if (!region_reaches(r->exec + offset, len, near_lo, near_hi))
		return false;
	fill_to(r, offset + len);
	*exec = r->exec + offset;
	*write = r->write + offset;
	r->used = offset + len;
	return true;
}

int dacce_codecache_alloc(struct dacce_codecache *cache, uintptr_t near_lo, uintptr_t near_hi,
			  size_t len, size_t align, uintptr_t *exec, uint8_t **write)
{
	int err;

	if (!cache || !exec || !write || len == 0 || !align || (align & (align - 1)) ||
	    near_hi < near_lo || near_hi - near_lo > REACH)
		return -EINVAL;
	if (cache->last < cache->n &&
	    carve(&cache->regions[cache->last], near_lo, near_hi, len, align, exec, write))
		return 0;
	for (size_t i = 0; i < cache->n; i++)
		if (carve(&cache->regions[i], near_lo, near_hi, len, align, exec, write)) {
			cache->last = i;
			return 0;
		}
	err = add_region(cache, near_lo, near_hi, len + align);
	if (err)
		return err;
	cache->last = cache->n - 1;
	return carve(&cache->regions[cache->n - 1], near_lo, near_hi, len, align, exec, write)
		       ? 0
		       : -ENOSPC;
}

void dacce_codecache_trim(struct dacce_codecache *cache, uintptr_t exec, size_t len, size_t used)
{
	struct dacce_code_region *r;

	if (!cache || cache->last >= cache->n || used >= len)
		return;
	/* The piece was carved from the last region used, or from the region just added. */
	r = &cache->regions[cache->last];
	if (r->window_page || exec < r->exec || exec - r->exec + len != r->used)
		return;
	r->used = exec - r->exec + used;
}

/* ------------------------------------------------------------ window pages */

static bool granules_free(const struct dacce_code_region *r, size_t g0, size_t g1, bool take)
{
	for (size_t g = g0; g <= g1; g++) {
		bool used = r->granules[g / 64] & (1ull << (g % 64));

		if (!take && used)
			return false;
		if (take)
			((struct dacce_code_region *)r)->granules[g / 64] |= 1ull << (g % 64);
	}
	return true;
}

/* A start in [lo, hi) whose len bytes are free in window page r. */
static bool window_carve(struct dacce_code_region *r, uintptr_t lo, uintptr_t hi, size_t len,
			 uintptr_t *exec, uint8_t **write)
{
	uintptr_t first = lo > r->exec ? lo : r->exec;
	uintptr_t last = r->exec + r->size - len; /* the highest start that fits */

	if (hi == 0 || hi - 1 < last)
		last = hi - 1;
	for (uintptr_t at = first; at <= last && at >= first;) {
		size_t g0 = (at - r->exec) / 16, g1 = (at + len - 1 - r->exec) / 16;

		if (granules_free(r, g0, g1, false)) {
			granules_free(r, g0, g1, true);
			*exec = at;
			*write = r->write + (at - r->exec);
			return true;
		}
		at = r->exec + (g0 + 1) * 16; /* the next piece */
	}
	return false;
}

int dacce_codecache_alloc_window(struct dacce_codecache *cache, uintptr_t lo, uintptr_t hi,
				 size_t len, uintptr_t *exec, uint8_t **write)
{
	struct placement want = { .window = true, .lo = lo, .hi = hi, .size = DACCE_WINDOW_PAGE,
				  .len = len };
	struct dacce_code_region region;
	int err;

	if (!cache || !exec || !write || len == 0 || len > 64 || hi <= lo)
		return -EINVAL;
	for (size_t i = 0; i < cache->n; i++)
		if (cache->regions[i].window_page &&
		    window_carve(&cache->regions[i], lo, hi, len, exec, write))
			return 0;
	err = reserve_region_slot(cache);
	if (err)
		return err;
	err = map_placed(cache, &want, &region);
	if (err)
		return err;
	region.window_page = true;
	region.used = region.size; /* never carved by dacce_codecache_alloc */
	append_region(cache, &region);
	DACCE_PROBE(code_region, region.exec, region.size);
	return window_carve(&cache->regions[cache->n - 1], lo, hi, len, exec, write) ? 0 : -ENOSPC;
}

/*
 * Replaces one region's pages by a copy of its own, at the same addresses.
 * Other threads may be running there (the parent of a fork): the copy is
 * made read+execute before it replaces the executable view, in one step.
 */
static int copy_region(struct dacce_code_region *r)
{
	void *copy, *write = MAP_FAILED;
	int err;

	copy = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (copy == MAP_FAILED)
		return -errno;
	memcpy(copy, r->write, r->filled); /* the rest is filled as it is carved */
	if (mprotect(copy, r->size, PROT_READ | PROT_EXEC) < 0 ||
	    second_view(copy, r->size, r->exec) == MAP_FAILED) {
		err = -errno;
		goto cleanup;
	}
	/* From here on the region runs the copy: failing to write it is fatal to the caller. */
	write = second_view(copy, r->size, 0);
	if (write == MAP_FAILED || mprotect(write, r->size, PROT_READ | PROT_WRITE) < 0) {
		err = -errno;
		goto cleanup;
	}
	munmap(r->write, r->size);
	r->write = write;
	write = MAP_FAILED;
	err = 0;
cleanup:
	if (write != MAP_FAILED)
		munmap(write, r->size);
	munmap(copy, r->size);
	return err;
}

int dacce_codecache_unshare(struct dacce_codecache *cache)
{
	for (size_t i = 0; i < cache->n; i++) {
		int err = copy_region(&cache->regions[i]);

		if (err)
			return err;
	}
	return 0;
}

long dacce_codecache_region_index(const struct dacce_codecache *cache, uintptr_t addr)
{
	size_t n = cache ? keys_up_to(cache, addr) : 0;
	const struct dacce_region_key *k;

	if (n == 0)
		return -1;
	k = &cache->by_exec[n - 1];
	return addr - k->exec < k->size ? (long)k->index : -1;
}

uint8_t *dacce_codecache_writable(const struct dacce_codecache *cache, uintptr_t exec)
{
	long i = dacce_codecache_region_index(cache, exec);

	return i < 0 ? NULL : cache->regions[i].write + (exec - cache->regions[i].exec);
}

int dacce_codecache_contains(const struct dacce_codecache *cache, uintptr_t addr)
{
	return dacce_codecache_writable(cache, addr) != NULL;
}
