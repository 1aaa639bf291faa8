// SPDX-License-Identifier: MIT
/* The report as one HTML page. Everything is inline (CSS, SVG, script) and nothing is loaded:
 * the page opens from a mail attachment, an air-gapped machine or a CI artifact the same way.
 * Charts are SVG with <title> tooltips, and every number they show is also in a table; the
 * timeline (timeline_html.c) is a canvas drawn by an inline script. */
#include "analyze/report_html.h"
#include "analyze/timeline_html.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HTML_TOP 20	     /* span groups shown when --top is not given */
#define BINS_PER_DECADE 10   /* histogram bins: 10 per factor of 10 (each ~26% wide) */
#define MAX_BINS 240	     /* 1 ns .. 2^64 ns is under 20 decades */

/* Chart geometry, in SVG user units (pixels at 100%). */
#define STAGE_LABEL_W 200
#define STAGE_BAR_W 700
#define STAGE_ROW_H 28
#define HIST_W 900
#define HIST_H 190
#define HIST_LEFT 48
#define HIST_RIGHT 12
#define HIST_TOP 34 /* two lines for the percentile labels */
#define HIST_BOTTOM 24

enum share { SH_RUNNING, SH_RUNNABLE, SH_QUEUE, SH_BLOCKED, SH_IDLE, SH_MAX };

static const char *const share_names[SH_MAX] = { "running", "runnable", "queue wait", "blocked",
						 "idle" };
static const char *const share_classes[SH_MAX] = { "run", "rbl", "que", "blk", "idl" };

static const char css[] =
	"body{font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"DejaVu Sans\","
	"sans-serif;color:#1d2327;background:#fff;margin:24px auto;max-width:1240px;padding:0 16px}"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px "
	"solid #dde1e4;padding-bottom:4px}h3{font-size:14px;margin:18px 0 2px}"
	".meta{color:#58636b;margin:0}.note{color:#58636b;font-size:12px}"
	".verdict{font-size:16px;font-weight:600;background:#fff6e0;border-left:5px solid #e0a100;"
	"padding:10px 14px;margin:16px 0}"
	".warn{background:#fdecea;border-left:5px solid #c62828;padding:6px 12px}"
	"table{border-collapse:collapse;font-size:13px;margin:8px 0}"
	"th,td{padding:3px 8px;text-align:right;border-bottom:1px solid #eceff1;"
	"font-variant-numeric:tabular-nums}th{background:#f5f7f8}"
	"th:first-child,td:first-child{text-align:left}"
	"svg{display:block;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;"
	"fill:#1d2327}svg .in{fill:#fff}svg .axis{stroke:#9aa5ad;stroke-width:1}"
	".run{fill:#2e7d32;background:#2e7d32}.rbl{fill:#f9a825;background:#f9a825}"
	".que{fill:#1565c0;background:#1565c0}.blk{fill:#c62828;background:#c62828}"
	".idl{fill:#cfd8dc;background:#cfd8dc}.bar{fill:#5c6bc0}.pct{stroke:#37474f;"
	"stroke-dasharray:3 2}.legend span{display:inline-block;margin-right:14px}"
	".legend i{display:inline-block;width:12px;height:12px;margin-right:5px;"
	"vertical-align:-1px}";

/* Text or attribute content: under the text rule (util/util.h), and every character HTML
 * gives a meaning is escaped. */
void report_html__esc(FILE *f, const char *text)
{
	char *safe = text_safe_dup(text);

	for (const char *s = safe; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
	free(safe);
}

static const char *dur(uint64_t ns, char *buf)
{
	return fmt_duration(ns, buf, 32);
}

static uint64_t share_ns(const struct stage_stats *s, enum share k)
{
	switch (k) {
	case SH_RUNNING:
		return s->running_ns;
	case SH_RUNNABLE:
		return s->runnable_ns;
	case SH_QUEUE:
		return s->queue_wait_ns;
	case SH_BLOCKED:
		return s->blocked_ns;
	default:
		return s->idle_ns;
	}
}

/* Without scheduler states the recorder only knows spans: "running" is time inside spans. */
static const char *share_label(enum share k, bool states)
{
	return k == SH_RUNNING && !states ? "in spans" : share_names[k];
}

static void write_head(FILE *f, const struct report *r, const struct report_opts *o)
{
	char w[32];

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
	      f);
	fprintf(f, "<meta name=\"generator\" content=\"tracer %s\">\n<title>tracer report: ",
		TRACER_VERSION);
	report_html__esc(f, o->path);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>tracer report</h1>\n"
		   "<p class=\"meta\" id=\"summary\"><b>",
		css);
	report_html__esc(f, o->path);
	fprintf(f, "</b>: %" PRIu64 " span%s", r->spans, plural_s(r->spans));
	if (r->incomplete)
		fprintf(f, " (%" PRIu64 " incomplete)", r->incomplete);
	fprintf(f, " on %zu thread%s, %s recorded", r->nthreads, plural_s(r->nthreads),
		dur(r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0, w));
	if (r->cpus)
		fprintf(f, ", %d CPU%s", r->cpus, plural_s(r->cpus));
	fputs("</p>\n", f);
	if (r->truncated)
		fputs("<p class=\"warn\">The file ends before its closing bracket (recording "
		      "killed?): this is the report of the complete events before the cut.</p>\n",
		      f);
	fputs("<p class=\"verdict\" id=\"verdict\">", f);
	report_html__esc(f, r->verdict);
	fputs("</p>\n", f);
}

static void write_legend(FILE *f, bool states)
{
	fputs("<p class=\"legend\">", f);
	for (int k = 0; k < SH_MAX; k++) {
		if (!states && (k == SH_RUNNABLE || k == SH_BLOCKED))
			continue;
		fprintf(f, "<span><i class=\"%s\"></i>%s</span>", share_classes[k],
			share_label(k, states));
	}
	fputs("</p>\n", f);
}

/* One stacked bar per stage: its threads' observed time split into the five shares. */
static void write_stages(FILE *f, const struct report *r)
{
	bool states = r->has_sched;
	int h = (int)r->nstages * STAGE_ROW_H + 4;
	char w[32], all[32];

	fputs("<h2>Stages</h2>\n<p class=\"note\">Threads grouped by name (trailing indices "
	      "folded: decode-0, decode-1 &rarr; decode[*]); each bar is the stage's threads' "
	      "observed time.",
	      f);
	if (!states)
		fputs(" The trace has no scheduler states: only time inside spans is known.", f);
	fputs("</p>\n", f);
	write_legend(f, states);
	fprintf(f, "<svg id=\"stages\" role=\"img\" aria-label=\"time shares per stage\" "
		   "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		STAGE_LABEL_W + STAGE_BAR_W, h, STAGE_LABEL_W + STAGE_BAR_W, h);
	for (size_t i = 0; i < r->nstages; i++) {
		const struct stage_stats *s = &r->stages[i];
		int y = (int)i * STAGE_ROW_H + 2;
		double x = STAGE_LABEL_W;

		fprintf(f, "<g class=\"stage\" data-stage=\"");
		report_html__esc(f, s->name);
		fprintf(f, "\">\n<text x=\"0\" y=\"%d\">", y + STAGE_ROW_H / 2 + 4);
		report_html__esc(f, s->name);
		fprintf(f, " (%u thread%s)</text>\n", s->threads, s->threads == 1 ? "" : "s");
		if (!s->wall_ns) {
			fprintf(f, "<text x=\"%d\" y=\"%d\">no activity observed</text>\n</g>\n",
				STAGE_LABEL_W, y + STAGE_ROW_H / 2 + 4);
			continue;
		}
		for (int k = 0; k < SH_MAX; k++) {
			double share = stage__share(s, share_ns(s, k));
			double bw = share * STAGE_BAR_W;

			if (bw <= 0)
				continue;
			fprintf(f, "<rect class=\"%s\" data-share=\"%s\" data-value=\"%.4f\" "
				   "x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\"><title>",
				share_classes[k], share_names[k], share, x, y, bw, STAGE_ROW_H - 6);
			report_html__esc(f, s->name);
			fprintf(f, ": %s %.1f%% (%s of %s)</title></rect>\n",
				share_label(k, states), 100 * share, dur(share_ns(s, k), w),
				dur(s->wall_ns, all));
			if (bw >= 38)
				fprintf(f, "<text class=\"%s\" x=\"%.2f\" y=\"%d\" "
					   "text-anchor=\"middle\">%.0f%%</text>\n",
					k == SH_IDLE || k == SH_RUNNABLE ? "" : "in", x + bw / 2,
					y + (STAGE_ROW_H - 6) / 2 + 4, 100 * share);
			x += bw;
		}
		fputs("</g>\n", f);
	}
	fputs("</svg>\n<table id=\"stage-table\">\n<tr><th>stage</th><th>threads</th>"
	      "<th>spans</th>",
	      f);
	for (int k = 0; k < SH_MAX; k++)
		fprintf(f, "<th>%s</th>", share_label(k, states));
	fputs("</tr>\n", f);
	for (size_t i = 0; i < r->nstages; i++) {
		const struct stage_stats *s = &r->stages[i];

		fputs("<tr><td>", f);
		report_html__esc(f, s->name);
		fprintf(f, "</td><td>%u</td><td>%" PRIu64 "</td>", s->threads, s->spans);
		for (int k = 0; k < SH_MAX; k++) {
			double share = stage__share(s, share_ns(s, k));

			if (!s->wall_ns || (!states && (k == SH_RUNNABLE || k == SH_BLOCKED)))
				fputs("<td>-</td>", f);
			else
				fprintf(f, "<td>%.1f%%</td>", 100 * share);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

static int bin_of(double ns)
{
	return (int)floor(log10(ns < 1 ? 1 : ns) * BINS_PER_DECADE);
}

static double bin_start(int b)
{
	return pow(10, (double)b / BINS_PER_DECADE);
}

static double hist_x(double ns, int lo, int nbins)
{
	double pos = log10(ns < 1 ? 1 : ns) * BINS_PER_DECADE - lo;

	if (pos < 0)
		pos = 0;
	if (pos > nbins)
		pos = nbins;
	return HIST_LEFT + pos * (HIST_W - HIST_LEFT - HIST_RIGHT) / nbins;
}

/* A histogram of one group's durations on a log axis, from its sketch: the sketch's 1% buckets
 * are summed into bins of a tenth of a decade; p50 and p99 are marked. */
static void write_histogram(FILE *f, const struct report_group *g, size_t idx)
{
	const struct sketch *s = &g->sketch;
	uint64_t counts[MAX_BINS] = { 0 }, top = 0;
	int lo, hi, nbins, plot_h = HIST_H - HIST_TOP - HIST_BOTTOM;
	double bw;
	char a[32], b[32];

	if (!s->count)
		return;
	lo = bin_of(s->min);
	hi = bin_of(s->max);
	if (hi - lo + 1 > MAX_BINS)
		lo = hi - MAX_BINS + 1;
	nbins = hi - lo + 1;
	counts[0] += s->zeros;
	for (int i = 0; i < s->nb; i++) {
		int k;

		if (!s->buckets[i])
			continue;
		k = bin_of(sketch__bucket_value(s->lo + i)) - lo;
		k = k < 0 ? 0 : k >= nbins ? nbins - 1 : k;
		counts[k] += s->buckets[i];
	}
	for (int k = 0; k < nbins; k++)
		if (counts[k] > top)
			top = counts[k];
	bw = (double)(HIST_W - HIST_LEFT - HIST_RIGHT) / nbins;

	fprintf(f, "<svg class=\"hist\" id=\"hist-%zu\" data-group=\"", idx);
	report_html__esc(f, g->key);
	fprintf(f, "\" data-count=\"%" PRIu64 "\" role=\"img\" aria-label=\"latency histogram\" "
		   "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		s->count, HIST_W, HIST_H, HIST_W, HIST_H);
	for (int k = 0; k < nbins; k++) {
		double bh = top ? (double)counts[k] / top * plot_h : 0;

		if (!counts[k])
			continue;
		if (bh < 1)
			bh = 1; /* a bin with spans stays visible */
		fprintf(f, "<rect class=\"bar\" data-count=\"%" PRIu64 "\" x=\"%.2f\" y=\"%.2f\" "
			   "width=\"%.2f\" height=\"%.2f\"><title>%s to %s: %" PRIu64
			   " span%s</title></rect>\n",
			counts[k], HIST_LEFT + k * bw + 0.5, HIST_TOP + plot_h - bh,
			bw > 2 ? bw - 1 : bw, bh, dur((uint64_t)bin_start(lo + k), a),
			dur((uint64_t)bin_start(lo + k + 1), b), counts[k],
			counts[k] == 1 ? "" : "s");
	}
	/* axes: count at the top, a tick at every power of ten (and the range's ends) */
	fprintf(f, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", HIST_LEFT,
		HIST_TOP + plot_h, HIST_W - HIST_RIGHT, HIST_TOP + plot_h);
	fprintf(f, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", HIST_LEFT,
		HIST_TOP, HIST_LEFT, HIST_TOP + plot_h);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%" PRIu64 "</text>\n",
		HIST_LEFT - 4, HIST_TOP + 4, top);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", HIST_LEFT - 4,
		HIST_TOP + plot_h);
	for (int d = (lo + BINS_PER_DECADE - 1) / BINS_PER_DECADE * BINS_PER_DECADE;
	     d <= hi + 1; d += BINS_PER_DECADE) {
		double x = hist_x(bin_start(d), lo, nbins);
		/* labels at the ends stay inside the chart */
		const char *anchor = x > HIST_W - HIST_RIGHT - 20 ? "end" :
				     x < HIST_LEFT + 20 ? "start" : "middle";

		fprintf(f, "<line class=\"axis\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>"
			   "<text x=\"%.2f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n",
			x, HIST_TOP + plot_h, x, HIST_TOP + plot_h + 4, x, HIST_H - 6, anchor,
			dur((uint64_t)bin_start(d), a));
	}
	if (hi - lo < BINS_PER_DECADE) /* no power of ten inside: label the ends */
		fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text><text x=\"%d\" y=\"%d\" "
			   "text-anchor=\"end\">%s</text>\n",
			HIST_LEFT, HIST_H - 6, dur((uint64_t)bin_start(lo), a), HIST_W - HIST_RIGHT,
			HIST_H - 6, dur((uint64_t)bin_start(hi + 1), b));
	/* p50 and p99, each label on its own line, kept inside the chart */
	for (int q = 0; q < 2; q++) {
		uint64_t v = sketch__quantile(s, q ? 0.99 : 0.5);
		double x = hist_x(v, lo, nbins);
		bool right = x < HIST_W - 100;

		fprintf(f, "<line class=\"pct\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>"
			   "<text class=\"pct-label\" x=\"%.2f\" y=\"%d\" text-anchor=\"%s\">"
			   "%s %s</text>\n",
			x, HIST_TOP - (q ? 14 : 28), x, HIST_TOP + plot_h, x + (right ? 3 : -3),
			HIST_TOP - (q ? 4 : 18), right ? "start" : "end", q ? "p99" : "p50",
			dur(v, a));
	}
	fputs("</svg>\n", f);
}

static void write_groups(FILE *f, const struct report *r, const struct report_opts *o)
{
	static const char *const by_title[] = { "span name", "category", "thread", "stage" };
	static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	long top = o->top < 0 ? HTML_TOP : o->top;
	size_t n = top && (size_t)top < r->ngroups ? (size_t)top : r->ngroups;
	char w[32];

	fprintf(f, "<h2>Latency by %s</h2>\n<p class=\"note\">Durations on a log scale, %s "
		   "first; counts and percentiles from a quantile sketch, within %g%% "
		   "(relative).",
		by_title[o->by], report_sort__order(o->sort), 100 * SKETCH_REL_ERR);
	if (o->min_dur_ns)
		fprintf(f, " Spans under %s left out.", dur(o->min_dur_ns, w));
	fputs("</p>\n", f);
	if (!r->ngroups)
		fputs("<p>No spans.</p>\n", f);
	fputs("<table id=\"span-table\">\n<tr><th>group</th><th>category</th><th>count</th>"
	      "<th>total</th><th title=\"total less the spans nested inside\">self</th><th>mean</th><th>min</th><th>p50</th><th>p90</th><th>p99</th>"
	      "<th>p99.9</th><th>max</th></tr>\n",
	      f);
	for (size_t i = 0; i < n; i++) {
		const struct report_group *g = r->groups[i];

		fputs("<tr><td>", f);
		report_html__esc(f, g->key);
		fputs("</td><td>", f);
		report_html__esc(f, o->by == BY_NAME ? g->cat : "");
		fprintf(f, "</td><td>%" PRIu64 "</td><td>%s</td>", g->count, dur(g->total_ns, w));
		fprintf(f, "<td>%s</td>", dur(g->self_ns, w));
		fprintf(f, "<td>%s</td>", dur(g->count ? g->sum_ns / g->count : 0, w));
		fprintf(f, "<td>%s</td>", dur(g->sketch.count ? g->sketch.min : 0, w));
		for (size_t q = 0; q < sizeof(qs) / sizeof(qs[0]); q++)
			fprintf(f, "<td>%s</td>", dur(sketch__quantile(&g->sketch, qs[q]), w));
		fprintf(f, "<td>%s</td></tr>\n", dur(g->sketch.max, w));
	}
	fputs("</table>\n", f);
	if (n < r->ngroups)
		fprintf(f, "<p class=\"note\">%zu more groups (--top 0 shows all).</p>\n",
			r->ngroups - n);
	for (size_t i = 0; i < n; i++) {
		const struct report_group *g = r->groups[i];

		fputs("<h3>", f);
		report_html__esc(f, g->key);
		fprintf(f, "</h3>\n<p class=\"meta\">%" PRIu64 " spans, total %s", g->count,
			dur(g->total_ns, w));
		fprintf(f, ", p50 %s", dur(sketch__quantile(&g->sketch, 0.5), w));
		fprintf(f, ", p99 %s", dur(sketch__quantile(&g->sketch, 0.99), w));
		fprintf(f, ", max %s</p>\n", dur(g->sketch.max, w));
		write_histogram(f, g, i);
	}
}

int report_html__write(FILE *f, const struct report *r, const struct report_opts *o,
		       const struct timeline *tl)
{
	write_head(f, r, o);
	write_stages(f, r);
	if (tl)
		timeline_html__write(f, tl, r->start_ns, r->end_ns);
	write_groups(f, r, o);
	fprintf(f, "<p class=\"note\">Made by tracer %s from ", TRACER_VERSION);
	report_html__esc(f, o->path);
	fputs(". Open the trace itself in ui.perfetto.dev for every span of it."
	      "</p>\n</body>\n</html>\n",
	      f);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/* For pages built from report parts (tracer diff). */
const char *report_html__css(void)
{
	return css;
}

void report_html__stages(FILE *f, const struct report *r)
{
	write_stages(f, r);
}
