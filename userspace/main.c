// SPDX-License-Identifier: MIT
/* tracer: attach to a running pipeline and write a Chrome trace of its threads.
 * This file only dispatches: each subcommand lives in cmd/, the library in the folders beside it. */
#include "cmd/commands.h"
#include "util/util.h"

int main(int argc, char **argv)
{
	const struct command *c = argc > 1 ? command__find(argv[1]) : NULL;

	cmdline_argc = argc;
	cmdline_argv = argv;
	if (c)
		return c->run(argc - 1, argv + 1);
	/* no subcommand: record */
	return cmd_record(argc, argv);
}
