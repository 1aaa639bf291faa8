// SPDX-License-Identifier: MIT
/* tracer export: options, usage, one call into trace/export. */
#include "cmd/commands.h"
#include "cmd/unknown_option.h"
#include "trace/export.h"
#include "trace/speedscope.h"
#include "util/util.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>

static const char export_usage[] =
	"Usage: tracer export TRACE.json[.gz] --jsonl|--csv|--speedscope [-o FILE]\n"
	"\n"
	"One row per span, by start time: name, category, pid, tid, thread (its last name in the\n"
	"file: one name per thread, whatever renamed it), start_ns\n"
	"(from the trace's zero), dur_ns, args (JSON) — for BigQuery, DuckDB, Spark, pandas. Output\n"
	"goes to FILE (.gz compresses) or stdout. Or a profile for speedscope.\n"
	"\n"
	"  --jsonl          one JSON object per line\n"
	"  --csv            CSV with a header line; args as JSON text\n"
	"  --speedscope     speedscope's own format: one evented profile per thread, a frame\n"
	"                   per span name (its Chrome importer makes one per name and args)\n"
	"  -o, --output F   write to F instead of stdout\n"
	"  -h, --help       this text\n"
	"\n"
	"Examples:\n"
	"  tracer export run.json --jsonl -o spans.jsonl.gz\n"
	"  tracer export run.json --csv | duckdb -c \"SELECT name, quantile_cont(dur_ns, 0.99)\n"
	"      FROM read_csv_auto('/dev/stdin') GROUP BY name\"\n"
	"  tracer export run.json --speedscope -o run.speedscope.json\n";

int cmd_export(int argc, char **argv)
{
	enum { OPT_JSONL = 256, OPT_CSV, OPT_SPEEDSCOPE };
	static const struct option longopts[] = {
		{ "jsonl", no_argument, NULL, OPT_JSONL },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "speedscope", no_argument, NULL, OPT_SPEEDSCOPE },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out = NULL;
	int fmt = 0, ch;
	struct speedscope_stats ss = { 0 };
	uint64_t rows = 0;
	char err[1024];

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_JSONL:
		case OPT_CSV:
		case OPT_SPEEDSCOPE:
			if (fmt && fmt != ch)
				return usage_error("export", "--jsonl, --csv and --speedscope "
						   "exclude each other");
			fmt = ch;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(export_usage, stdout);
			return 0;
		case ':':
			return usage_error("export", "option '%s' needs a value", argv[optind - 1]);
		default:
			return unknown_option("export", argv[optind - 1], longopts);
		}
	}
	if (optind == argc)
		return usage_error("export", "no trace given: tracer export TRACE.json --jsonl");
	if (optind + 1 < argc)
		return usage_error("export", "unexpected argument '%s'", argv[optind + 1]);
	if (!fmt)
		return usage_error("export", "say which format: --jsonl or --csv (rows), or "
				   "--speedscope");
	if (fmt == OPT_SPEEDSCOPE ? trace_speedscope(argv[optind], out, &ss, err, sizeof(err)) :
				    trace_export(argv[optind], out, fmt == OPT_CSV, &rows, err,
						 sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	if (fmt == OPT_SPEEDSCOPE)
		rows = ss.spans;
	if (ss.clipped)
		pr_warn("%" PRIu64 " span%s overlapped the end of an enclosing span on its thread: "
			"cut there, as speedscope needs spans nested",
			ss.clipped, plural_s(ss.clipped));
	if (ss.ignored_be)
		pr_warn("%" PRIu64 " B/E events ignored: only complete (X) events are exported",
			ss.ignored_be);
	if (out)
		pr_info("wrote %" PRIu64 " span%s to %s", rows, plural_s(rows), out);
	return 0;
}
