// SPDX-License-Identifier: MIT
/* Helpers of `dacce launch` (see launch_util.h). */
#include "launch_util.h"
#include "commands.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t dacce_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int dacce_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int usable(const char *path, char *out, size_t out_len)
{
	if (access(path, R_OK) < 0 || !realpath(path, out))
		return -ENOENT;
	(void)out_len;
	return 0;
}

int dacce_find_runtime(const char *explicit_path, char *out, size_t out_len, char *why,
		       size_t why_len)
{
	const char *env = getenv("DACCE_RUNTIME");
	char self[PATH_MAX], candidate[PATH_MAX + 64];
	ssize_t n;

	if (out_len < PATH_MAX)
		return -EINVAL;
	if (explicit_path || (env && *env)) {
		const char *path = explicit_path ? explicit_path : env;

		if (usable(path, out, out_len) == 0)
			return 0;
		snprintf(why, why_len, "cannot read the runtime %s: %s", path, strerror(errno));
		return -ENOENT;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		snprintf(candidate, sizeof(candidate), "%s/libdacce.so", dirname(self));
		if (usable(candidate, out, out_len) == 0)
			return 0;
		snprintf(candidate, sizeof(candidate), "%s/../lib/dacce/libdacce.so", self);
		if (usable(candidate, out, out_len) == 0)
			return 0;
	}
	snprintf(why, why_len,
		 "cannot find libdacce.so next to dacce; build it (make) or say where with "
		 "--runtime or DACCE_RUNTIME");
	return -ENOENT;
}

/* execvp's search: the file program names. */
static int resolve(const char *program, char *out, size_t out_len)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int err = -ENOENT;

	if (strchr(program, '/')) {
		snprintf(out, out_len, "%s", program);
		return access(out, F_OK) == 0 ? 0 : -errno;
	}
	copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!copy)
		return -ENOMEM;
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, out_len, "%s/%s", *dir ? dir : ".", program);
		if (access(out, X_OK) == 0) {
			err = 0;
			break;
		}
	}
	free(copy);
	return err;
}

/* 1: the ELF file at fd has a PT_INTERP (is dynamically linked); 0: static; <0: not x86-64 ELF. */
static int elf_is_dynamic(int fd)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
	    eh.e_phentsize != sizeof(ph))
		return -ENOEXEC;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    sizeof(ph))
			return -ENOEXEC;
		if (ph.p_type == PT_INTERP)
			return 1;
	}
	return 0;
}

int dacce_check_program(const char *program, char *why, size_t why_len)
{
	char path[PATH_MAX + 256], head[2];
	struct stat st;
	int fd, dynamic, err;

	err = resolve(program, path, sizeof(path));
	if (err) {
		snprintf(why, why_len, "cannot run %s: %s", program, strerror(-err));
		return err;
	}
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
		snprintf(why, why_len, "cannot run %s: %s", program,
			 S_ISDIR(st.st_mode) ? "is a directory" : "not an executable file");
		return -EACCES;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_len, "cannot read %s: %s", path, strerror(errno));
		return -errno;
	}
	if (pread(fd, head, 2, 0) == 2 && head[0] == '#' && head[1] == '!') {
		close(fd);
		return 0; /* a script: its interpreter gets the runtime */
	}
	dynamic = elf_is_dynamic(fd);
	close(fd);
	if (dynamic < 0) {
		snprintf(why, why_len, "%s is not an x86-64 ELF program", path);
		return dynamic;
	}
	if (dynamic == 0) {
		snprintf(why, why_len,
			 "%s is statically linked: the runtime cannot be preloaded into it", path);
		return -ENOEXEC;
	}
	return 0;
}

void dacce_err(const char *fmt, ...)
{
	va_list ap;

	fputs("dacce: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
