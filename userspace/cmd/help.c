// SPDX-License-Identifier: MIT
/* `tracer help [COMMAND]`, as `perf help` and `git help` do: the commands with what each is for,
 * or one command's options (its --help text). */
#include "cmd/commands.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

const struct command commands[] = {
	{ "record", cmd_record,
	  "attach, record spans and scheduler states into a Chrome trace, print a summary" },
	{ "top", cmd_top, "a live view: stages, verdict and the hottest spans, every second" },
	{ "list", cmd_list, "functions that can be probed, and what a probe on each costs" },
	{ "packs", cmd_packs, "the probe packs, and which apply to a process" },
	{ "report", cmd_report,
	  "where the time went: stages, verdict, percentiles (text, CSV, JSON, HTML)" },
	{ "diff", cmd_diff, "compare two recordings: what got slower or faster, and where" },
	{ "merge", cmd_merge, "one timeline of several recordings" },
	{ "export", cmd_export, "one row per span, for query engines; or a speedscope profile" },
	{ "repair", cmd_repair, "close a trace that was cut short" },
	{ "push", cmd_push, "load a recording into ClickHouse" },
	{ "fleet", cmd_fleet, "many hosts' recordings in ClickHouse, in one screen" },
	{ "help", cmd_help, "this list, or one command's options" },
};
const size_t commands_cnt = sizeof(commands) / sizeof(commands[0]);

const struct command *command__find(const char *name)
{
	for (size_t i = 0; i < commands_cnt; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void print_commands(void)
{
	printf("Usage: tracer [COMMAND] [ARGS...]    (no COMMAND: record)\n\n"
	       "Commands:\n");
	for (size_t i = 0; i < commands_cnt; i++)
		printf("  %-8s %s\n", commands[i].name, commands[i].summary);
	printf("\nSee 'tracer help COMMAND' (or 'tracer COMMAND --help') for a command's options,\n"
	       "and 'man tracer' for the whole manual.\n");
}

int cmd_help(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		print_commands();
		return 0;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		printf("Usage: tracer help [COMMAND]\n\n"
		       "The commands with what each is for; with COMMAND, its options (the same text\n"
		       "as tracer COMMAND --help).\n\n"
		       "  -h, --help   this text\n");
		return 0;
	}
	if (argc > 2) {
		fprintf(stderr, "tracer: one command at a time: tracer help COMMAND\n");
		return 2;
	}
	c = command__find(argv[1]);
	if (!c) {
		struct near_names near;
		char hint[256] = "";

		near_names__init(&near, argv[1]);
		for (size_t i = 0; i < commands_cnt; i++)
			near_names__offer(&near, commands[i].name);
		near_names__format(&near, hint, sizeof(hint));
		near_names__free(&near);
		fprintf(stderr, "tracer: no command '%s'%s (tracer help lists them)\n", argv[1], hint);
		return 2;
	}
	if (c->run == cmd_help) {
		print_commands();
		return 0;
	}
	char *args[] = { (char *)c->name, "--help", NULL };

	return c->run(2, args);
}
