// SPDX-License-Identifier: MIT
/* tracer report: options, usage, one call into analyze/report. */
#include "analyze/report.h"
#include "analyze/report_html.h"
#include "analyze/timeline_read.h"
#include "cmd/commands.h"
#include "cmd/unknown_option.h"
#include "trace/outfile.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
	"Usage: tracer report TRACE.json[.gz] [--top N] [--by name|category|thread|stage]\n"
	"                     [--sort self|total|count|p99] [--min-dur DUR] [--csv|--json]\n"
	"                     [--html FILE [--window START,DUR]]\n"
	"\n"
	"Where the time went in a recording: per span name (or category, thread, stage) the\n"
	"count, total, self, mean, min, max and p50/p90/p95/p99/p99.9 durations, most self time\n"
	"first (the work itself, not the frames that only wrap it);\n"
	"the pipeline's stages (threads grouped by name, trailing indices folded: decode-0,\n"
	"decode-1 -> decode[*]) with their shares of running, runnable, waiting in queue spans,\n"
	"blocked and idle time; and a verdict line starting 'bottleneck:'. Percentiles come from\n"
	"a quantile sketch within 1% (relative). Memory stays bounded whatever the file's size.\n"
	"\n"
	"  --top N          rows to show (default 20 in the table, all with --csv/--json; 0: all)\n"
	"  --by KEY         group spans by name (default), category, thread or stage\n"
	"  --sort COL       order the groups by self (default), total, count or p99, largest\n"
	"                   first\n"
	"  --min-dur DUR    leave out spans shorter than DUR (microseconds, or 50us, 2ms)\n"
	"  --csv            the span table as CSV\n"
	"  --json           everything as one JSON object (groups, stages, threads, verdict)\n"
	"  --html FILE      also write the report as one self-contained HTML page: a chart of\n"
	"                   each stage's time, a timeline (a lane per thread: spans by depth\n"
	"                   and category, scheduler states, wake-up arrows, counters), a\n"
	"                   latency histogram per group, the verdict\n"
	"  --window START,DUR  the timeline's window (trace time, microseconds or 5ms, 1.2s).\n"
	"                   Default: long enough for about 40 spans per thread (the whole\n"
	"                   recording when it holds fewer), where the busiest stage works most\n"
	"                   (its time in spans other than queue waits)\n"
	"  -h, --help       this text\n"
	"\n"
	"Examples:\n"
	"  tracer report run.json.gz\n"
	"  tracer report run.json --by stage --min-dur 1ms\n"
	"  tracer report run.json --json > report.json\n"
	"  tracer report run.json --html report.html\n"
	"  tracer report run.json --html report.html --window 1.5s,20ms\n";

/* "START,DUR": each microseconds or with a unit; START may be below 0 (a trace can start
 * there), DUR > 0. */
static int parse_window(const char *s, struct tl_window *w)
{
	const char *comma = strchr(s, ',');
	bool neg = *s == '-';
	uint64_t start, dur;
	char first[64];

	if (!comma || (size_t)(comma - s) >= sizeof(first))
		return -EINVAL;
	memcpy(first, s + neg, comma - s - neg);
	first[comma - s - neg] = 0;
	if (parse_duration(first, 1000, &start) || parse_duration(comma + 1, 1000, &dur) || !dur ||
	    start > INT64_MAX / 2 || dur > INT64_MAX / 2)
		return -EINVAL;
	w->start = neg ? -(int64_t)start : (int64_t)start;
	w->dur = (int64_t)dur;
	return 0;
}

static int report__write_html(const char *path, const struct report *r,
			      const struct report_opts *o, const struct tl_window *window)
{
	struct timeline tl;
	struct outfile *out;
	char msg[1024];
	FILE *f;
	int err;

	if (window && window->start >= r->end_ns) {
		char a[32], b[32];

		pr_err("--window starts at %s, after the recording's end (%s)",
		       fmt_duration(window->start, a, sizeof(a)),
		       fmt_duration(r->end_ns > 0 ? r->end_ns : 0, b, sizeof(b)));
		return -EINVAL;
	}
	err = timeline__build(&tl, o->path, r, window, msg, sizeof(msg));
	if (err) {
		pr_err("%s", msg);
		timeline__free(&tl);
		return err;
	}
	err = outfile__open(&out, path, msg, sizeof(msg));
	if (err) {
		pr_err("%s", msg);
		timeline__free(&tl);
		return err;
	}
	f = outfile__stdio(out);
	err = f ? report_html__write(f, r, o, &tl) : -ENOMEM;
	timeline__free(&tl);
	if (f && fclose(f) && !err)
		err = -EIO;
	err = outfile__close(out, !err) ?: err;
	if (err)
		pr_err("cannot write %s: %s", path, strerror(-err));
	return err;
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_TOP = 256, OPT_BY, OPT_MIN_DUR, OPT_CSV, OPT_JSON, OPT_HTML, OPT_WINDOW,
	       OPT_SORT };
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, OPT_TOP },
		{ "by", required_argument, NULL, OPT_BY },
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "min-dur", required_argument, NULL, OPT_MIN_DUR },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct report_opts o = { .top = -1 };
	struct report r;
	char err[1024];
	bool csv = false, json = false;
	const char *html = NULL;
	struct tl_window window;
	bool have_window = false;
	int ch, ret;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_TOP:
			if (parse_long(optarg, 0, LONG_MAX, &o.top))
				return usage_error("report", "bad --top '%s': want a number of rows",
							  optarg);
			break;
		case OPT_BY:
			if (report_by__parse(optarg, &o.by))
				return usage_error("report", "bad --by '%s': want name, category, "
							  "thread or stage",
							  optarg);
			break;
		case OPT_SORT:
			if (report_sort__parse(optarg, &o.sort))
				return usage_error("report", "bad --sort '%s': want self, total, "
							  "count or p99",
							  optarg);
			break;
		case OPT_MIN_DUR:
			if (parse_duration(optarg, 1000, &o.min_dur_ns))
				return usage_error("report", "bad --min-dur '%s': want "
							  "microseconds, or 50us, 2ms",
							  optarg);
			break;
		case OPT_CSV:
			csv = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_HTML:
			html = optarg;
			break;
		case OPT_WINDOW:
			if (parse_window(optarg, &window))
				return usage_error("report", "bad --window '%s': want START,DUR "
							  "(microseconds, or 1.5s,20ms)",
							  optarg);
			have_window = true;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		case ':':
			return usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		default:
			return unknown_option("report", argv[optind - 1], longopts);
		}
	}
	if (csv && json)
		return usage_error("report", "--csv and --json exclude each other");
	if (have_window && !html)
		return usage_error("report", "--window is the HTML timeline's: give --html FILE too");
	o.format = csv ? FMT_CSV : json ? FMT_JSON : FMT_TABLE;
	if (optind == argc)
		return usage_error("report", "no trace given: tracer report TRACE.json");
	if (optind + 1 < argc)
		return usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
	o.path = argv[optind];

	ret = report__run(&r, &o, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		report__free(&r);
		return 1;
	}
	if (r.truncated)
		pr_warn("%s ends before its closing bracket (recording killed?): reporting the "
			"complete events before the cut",
			o.path);
	if (r.ignored_be)
		pr_warn("%" PRIu64 " B/E events ignored: only complete (X) events are counted",
			r.ignored_be);
	if (r.approx)
		pr_warn("the file's events are far out of order: queue waits of %" PRIu64
			" spans are approximate",
			r.approx);
	report__print(stdout, &r, &o);
	if (html && report__write_html(html, &r, &o, have_window ? &window : NULL)) {
		report__free(&r);
		return 1;
	}
	report__free(&r);
	if (fflush(stdout) || ferror(stdout)) {
		pr_err("cannot write the report: %s", strerror(errno));
		return 1;
	}
	return 0;
}
