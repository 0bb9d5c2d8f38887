/* SPDX-License-Identifier: MIT */
/*
 * Where the running program is: tests' build/programs/NAME, next to which
 * run-programs.sh puts the library it is built with (libNAME.so).
 */
#ifndef PROGRAMPLACE_H
#define PROGRAMPLACE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fills dir with the program's directory and returns its file name (static storage). */
static const char *program_place(char *dir, size_t size)
{
	static char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		exit(2);
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash || (size_t)snprintf(dir, size, "%.*s", (int)(slash - exe), exe) >= size)
		exit(2);
	return slash + 1;
}

/* libNAME.so next to the program, in out. */
static void library_next_to_program(char *out, size_t size)
{
	char dir[PATH_MAX];
	const char *name = program_place(dir, sizeof(dir));

	if ((size_t)snprintf(out, size, "%s/lib%s.so", dir, name) >= size)
		exit(2);
}

#endif
