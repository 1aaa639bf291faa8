// SPDX-License-Identifier: MIT
/* tracer diff: options, usage, one call into analyze/diff. */
#include "analyze/diff.h"
#include "analyze/diff_html.h"
#include "cmd/commands.h"
#include "cmd/unknown_option.h"
#include "trace/outfile.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

static const char diff_usage[] =
	"Usage: tracer diff A.json[.gz] B.json[.gz] [--by name|category|thread|stage] [--top N]\n"
	"                   [--json] [--html FILE]\n"
	"\n"
	"Did B get faster or slower than A, and where? Per span name (or category, thread,\n"
	"stage): the count, self time, p50 and p99 in A and in B, the median's ratio B/A and a\n"
	"significance test, what moved most first (waits after the work they wait for); then\n"
	"each stage's shares in A and B side by side, and both verdicts.\n"
	"\n"
	"The test is Mann-Whitney U (two-sided, normal approximation with tie correction) on\n"
	"the durations of every call, read from the report's quantile sketches (1% buckets, so\n"
	"memory stays bounded and no call is sampled away). DELTA is Cliff's delta, P(B > A) -\n"
	"P(B < A). A row is significant (*) when p < 0.001, |DELTA| >= 0.147 and the median\n"
	"moved 5% or more: with thousands of calls the test alone flags shifts too small to\n"
	"matter.\n"
	"\n"
	"  --by KEY         compare spans by name (default), category, thread or stage\n"
	"  --top N          rows to show (default 20 in the table, all with --json; 0: all)\n"
	"  --json           everything as one JSON object: a, b, rows, verdict_a, verdict_b\n"
	"  --html FILE      also write both runs as one self-contained HTML page\n"
	"  -h, --help       this text\n"
	"\n"
	"Examples:\n"
	"  tracer diff before.json after.json\n"
	"  tracer diff before.json after.json --by stage --html diff.html\n";

static int write_html(const char *path, const struct diff *d, const struct diff_opts *o)
{
	struct outfile *out;
	char msg[1024];
	FILE *f;
	int err = outfile__open(&out, path, msg, sizeof(msg));

	if (err) {
		pr_err("%s", msg);
		return err;
	}
	f = outfile__stdio(out);
	err = f ? diff_html__write(f, d, o) : -ENOMEM;
	if (f && fclose(f) && !err)
		err = -EIO;
	err = outfile__close(out, !err) ?: err;
	if (err)
		pr_err("cannot write %s: %s", path, strerror(-err));
	return err;
}

int cmd_diff(int argc, char **argv)
{
	enum { OPT_TOP = 256, OPT_BY, OPT_JSON, OPT_HTML };
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, OPT_TOP },
		{ "by", required_argument, NULL, OPT_BY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct diff_opts o = { .top = -1, .format = FMT_TABLE };
	const char *html = NULL;
	struct diff d;
	char err[1024];
	int ch;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_TOP:
			if (parse_long(optarg, 0, LONG_MAX, &o.top))
				return usage_error("diff", "bad --top '%s': want a number of rows",
						   optarg);
			break;
		case OPT_BY:
			if (report_by__parse(optarg, &o.by))
				return usage_error("diff", "bad --by '%s': want name, category, "
							   "thread or stage",
						   optarg);
			break;
		case OPT_JSON:
			o.format = FMT_JSON;
			break;
		case OPT_HTML:
			html = optarg;
			break;
		case 'h':
			fputs(diff_usage, stdout);
			return 0;
		case ':':
			return usage_error("diff", "option '%s' needs a value", argv[optind - 1]);
		default:
			return unknown_option("diff", argv[optind - 1], longopts);
		}
	}
	if (argc - optind < 2)
		return usage_error("diff", "give two traces: tracer diff A.json B.json");
	if (argc - optind > 2)
		return usage_error("diff", "unexpected argument '%s'", argv[optind + 2]);
	o.a = argv[optind];
	o.b = argv[optind + 1];
	if (diff__run(&d, &o, err, sizeof(err))) {
		pr_err("%s", err);
		diff__free(&d);
		return 1;
	}
	if (d.a.truncated || d.b.truncated)
		pr_warn("%s ends before its closing bracket (recording killed?): comparing the "
			"complete events before the cut",
			d.a.truncated ? o.a : o.b);
	diff__print(stdout, &d, &o);
	if (html && write_html(html, &d, &o)) {
		diff__free(&d);
		return 1;
	}
	diff__free(&d);
	if (fflush(stdout) || ferror(stdout)) {
		pr_err("cannot write the comparison: %s", strerror(errno));
		return 1;
	}
	return 0;
}
