// SPDX-License-Identifier: MIT
#include "cmd/pid_options.h"
#include "cmd/unknown_option.h"
#include "util/util.h"

#include <getopt.h>
#include <stdio.h>

int pid_options__parse(int argc, char **argv, const char *cmd, const char *usage, int *pid)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pid(optarg, pid))
				return usage_error(cmd, "bad pid '%s': want a process id", optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			return usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		default:
			return unknown_option(cmd, argv[optind - 1], longopts);
		}
	}
	return -1;
}
