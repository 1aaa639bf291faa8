// SPDX-License-Identifier: MIT
/* tracer diff as one HTML page, from report_html's parts. */
#include "analyze/diff_html.h"
#include "analyze/report_html.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>

#define HTML_TOP 20
#define BAR_W 240 /* the longer median of a row spans this many units */

static const char extra_css[] =
	"body{max-width:1280px}td{white-space:nowrap}"
	".runs{display:flex;gap:24px}.runs>div{flex:1;min-width:0;overflow-x:auto}"
	".runs table{font-size:11px}.runs th,.runs td{padding:2px 4px}"
	"tr.sig td{background:#fff6e0;font-weight:600}.a{fill:#90a4ae}.b{fill:#5c6bc0}";

static void median_bars(FILE *f, uint64_t a, uint64_t b)
{
	uint64_t m = a > b ? a : b;
	char x[32], y[32];

	fprintf(f, "<svg class=\"pair\" width=\"%d\" height=\"16\" viewBox=\"0 0 %d 16\">",
		BAR_W, BAR_W);
	if (m) {
		fprintf(f, "<rect class=\"a\" x=\"0\" y=\"1\" width=\"%.2f\" height=\"6\"><title>"
			   "A p50 %s</title></rect>",
			(double)BAR_W * a / m, fmt_duration(a, x, sizeof(x)));
		fprintf(f, "<rect class=\"b\" x=\"0\" y=\"9\" width=\"%.2f\" height=\"6\"><title>"
			   "B p50 %s</title></rect>",
			(double)BAR_W * b / m, fmt_duration(b, y, sizeof(y)));
	}
	fputs("</svg>", f);
}

static void write_rows(FILE *f, const struct diff *d, const struct diff_opts *o)
{
	size_t n = o->top < 0 ? HTML_TOP : (size_t)o->top;
	char w[6][32];

	if (!n || n > d->nrows)
		n = d->nrows;
	fputs("<h2>What moved</h2>\n<p class=\"note\">Mann-Whitney U on every call's duration; "
	      "highlighted: p &lt; 0.001, |&delta;| &ge; 0.147 and the median moved 5% or more. "
	      "Bars: the median in A (grey) and B (blue).</p>\n<table id=\"rows\">\n<tr><th>"
	      "group</th><th>count A</th><th>count B</th><th>p50 A</th><th>p50 B</th>"
	      "<th>p99 A</th><th>p99 B</th><th>&delta;</th><th>p</th><th>medians</th></tr>\n",
	      f);
	for (size_t i = 0; i < n; i++) {
		const struct diff_row *r = &d->rows[i];
		uint64_t a50 = r->a ? sketch__quantile(&r->a->sketch, 0.5) : 0;
		uint64_t b50 = r->b ? sketch__quantile(&r->b->sketch, 0.5) : 0;

		fprintf(f, "<tr class=\"%s\" data-significant=\"%d\"><td>",
			r->significant ? "sig" : "", r->significant);
		report_html__esc(f, r->key);
		fprintf(f, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%s</td><td>%s</td>"
			   "<td>%s</td><td>%s</td><td>%+.2f</td><td>%.2g</td><td>",
			r->a ? r->a->count : 0, r->b ? r->b->count : 0,
			fmt_duration(a50, w[0], 32), fmt_duration(b50, w[1], 32),
			fmt_duration(r->a ? sketch__quantile(&r->a->sketch, 0.99) : 0, w[2], 32),
			fmt_duration(r->b ? sketch__quantile(&r->b->sketch, 0.99) : 0, w[3], 32),
			r->mw.delta, r->mw.p);
		median_bars(f, a50, b50);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void write_run(FILE *f, const char *label, const struct report *r, const char *path)
{
	fprintf(f, "<div id=\"run-%c\"><h2>%s: ", label[0] == 'A' ? 'a' : 'b', label);
	report_html__esc(f, path);
	fputs("</h2>\n<p class=\"verdict\">", f);
	report_html__esc(f, r->verdict);
	fputs("</p>\n", f);
	report_html__stages(f, r);
	fputs("</div>\n", f);
}

int diff_html__write(FILE *f, const struct diff *d, const struct diff_opts *o)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>tracer diff: ",
	      f);
	report_html__esc(f, o->a);
	fputs(" vs ", f);
	report_html__esc(f, o->b);
	fprintf(f, "</title>\n<style>%s%s</style>\n</head>\n<body>\n<h1>tracer diff</h1>\n"
		   "<p class=\"meta\">A: <b>",
		report_html__css(), extra_css);
	report_html__esc(f, o->a);
	fputs("</b>, B: <b>", f);
	report_html__esc(f, o->b);
	fputs("</b></p>\n", f);
	write_rows(f, d, o);
	fputs("<div class=\"runs\">\n", f);
	write_run(f, "A", &d->a, o->a);
	write_run(f, "B", &d->b, o->b);
	fprintf(f, "</div>\n<p class=\"note\">Made by tracer %s.</p>\n</body>\n</html>\n",
		TRACER_VERSION);
	return fflush(f) || ferror(f) ? -EIO : 0;
}
