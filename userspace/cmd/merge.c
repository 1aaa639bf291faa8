// SPDX-License-Identifier: MIT
/* tracer merge: options, usage, one call into trace/merge. */
#include "cmd/commands.h"
#include "cmd/unknown_option.h"
#include "trace/merge.h"
#include "util/util.h"

#include <getopt.h>
#include <stdio.h>

static const char merge_usage[] =
	"Usage: tracer merge A.json[.gz] B.json[.gz] ... -o ALL.json[.gz]\n"
	"\n"
	"One timeline from several recordings (several hosts, processes or runs). Recordings of\n"
	"one boot are aligned on CLOCK_MONOTONIC (exact), of different boots on the wall clock\n"
	"(from each file's metadata). Processes stay apart: a pid or tid an earlier file already\n"
	"uses gets an unused number, and process names say which file they came from.\n"
	"\n"
	"  -o, --output F   the merged trace (.gz compresses); required\n"
	"  -h, --help       this text\n"
	"\n"
	"Example:\n"
	"  tracer merge decode-host.json infer-host.json -o all.json\n";

int cmd_merge(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out = NULL;
	int ch;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(merge_usage, stdout);
			return 0;
		case ':':
			return usage_error("merge", "option '%s' needs a value", argv[optind - 1]);
		default:
			return unknown_option("merge", argv[optind - 1], longopts);
		}
	}
	if (optind == argc)
		return usage_error("merge", "no traces given: tracer merge A.json B.json -o "
					       "ALL.json");
	if (!out)
		return usage_error("merge", "no output given: add -o ALL.json");
	return trace_merge(argv + optind, argc - optind, out) ? 1 : 0;
}
