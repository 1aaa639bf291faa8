// SPDX-License-Identifier: MIT
/* tracer: attach to a running pipeline and write a Chrome trace of its threads.
 * This file only dispatches: each subcommand lives in cmd/, the library in the folders beside it. */
#include "cmd/commands.h"
#include "util/util.h"

#include <string.h>

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "record", cmd_record },
	{ "list", cmd_list },
	{ "packs", cmd_packs },
	{ "report", cmd_report },
	{ "merge", cmd_merge },
	{ "export", cmd_export },
	{ "repair", cmd_repair },
};

int main(int argc, char **argv)
{
	cmdline_argc = argc;
	cmdline_argv = argv;
	for (size_t i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	/* no subcommand: record */
	return cmd_record(argc, argv);
}
