/* SPDX-License-Identifier: MIT */
/* tracer's subcommands: `tracer NAME ARGS...`. Each returns the process exit status
 * (0 success, 1 failure, 2 usage error); argv[0] is the subcommand's name. */
#ifndef TRACER_COMMANDS_H
#define TRACER_COMMANDS_H

#include <stddef.h>

int cmd_record(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_packs(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_help(int argc, char **argv);

/* The one table of subcommands: main dispatches through it, help lists it. */
struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* what it is for, in one line */
};

extern const struct command commands[];
extern const size_t commands_cnt;

/* The command called name, or NULL. */
const struct command *command__find(const char *name);

#endif
