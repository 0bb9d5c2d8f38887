// SPDX-License-Identifier: MIT
/*
 * `dacce`: one binary, many commands (as perf and bpftool are).  Installed
 * under another name (dacce-launch), it runs that command directly.
 */
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "launch", dacce_cmd_launch, "run a program under DACCE and capture its contexts" },
	{ "report", dacce_cmd_report, "show a capture: top contexts, tree, forest, folded, pprof" },
	{ "decode", dacce_cmd_decode, "decode a raw context (epoch, id, ccStack) against a capture" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: dacce <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'dacce <command> --help' tells more; dacce-launch is 'dacce launch'.\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *self = basename(argv[0]);
	const struct command *cmd;

	/* dacce-launch, dacce-report, ...: the command is in the name. */
	if (strncmp(self, "dacce-", 6) == 0 && (cmd = find(self + 6)))
		return cmd->run(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("dacce 0.1\n");
		return 0;
	}
	cmd = find(argv[1]);
	if (!cmd) {
		dacce_err("'%s' is not a dacce command; see 'dacce help'", argv[1]);
		return 2;
	}
	return cmd->run(argc - 1, argv + 1);
}
