/* SPDX-License-Identifier: MIT */
/* The commands of the `dacce` multi-call binary (user/main.c dispatches). */
#ifndef DACCE_USER_COMMANDS_H
#define DACCE_USER_COMMANDS_H

int dacce_cmd_launch(int argc, char **argv);
int dacce_cmd_report(int argc, char **argv);
int dacce_cmd_decode(int argc, char **argv);

/* One-line error in git's style: "dacce: <what failed>: <why>". */
void dacce_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
