// SPDX-License-Identifier: MIT
#include "env.h"

#include <string.h>
#include <unistd.h>

const char *dacce_env(const char *name)
{
	size_t len = strlen(name);

	if (!environ)
		return NULL;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}
