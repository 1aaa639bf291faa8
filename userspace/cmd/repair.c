// SPDX-License-Identifier: MIT
/* tracer repair: options, usage, one call into trace/repair. */
#include "cmd/commands.h"
#include "cmd/unknown_option.h"
#include "trace/repair.h"
#include "util/util.h"

#include <getopt.h>
#include <stdio.h>

static const char repair_usage[] =
	"Usage: tracer repair FILE\n"
	"\n"
	"Closes a trace that was cut short (tracer killed with SIGKILL, the machine stopped):\n"
	"every complete event is kept and the end a recording writes is added, so that Perfetto\n"
	"and chrome://tracing open it. The file's metadata says it was repaired; the file as it\n"
	"was stays beside it as FILE.cut. A complete file (whoever wrote it) is left as it is.\n"
	"A .json.gz is read as far as its gzip stream goes and repaired into a .json.gz.\n"
	"\n"
	"Options:\n"
	"  -h, --help       this text\n"
	"\n"
	"Example:\n"
	"  tracer repair tracer-ffmpeg-1234-20261122-101500.json\n";

int cmd_repair(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(repair_usage, stdout);
			return 0;
		}
		return unknown_option("repair", argv[optind - 1], longopts);
	}
	if (optind == argc)
		return usage_error("repair", "no trace given: tracer repair TRACE.json");
	if (optind + 1 < argc)
		return usage_error("repair", "unexpected argument '%s'", argv[optind + 1]);
	return trace_repair(argv[optind]) ? 1 : 0;
}
