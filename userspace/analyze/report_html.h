/* SPDX-License-Identifier: MIT */
/* `tracer report --html FILE`: the report as one self-contained HTML page — inline CSS, SVG and
 * script, no font or anything else from the network — with the verdict, a stacked bar per
 * stage (running / runnable / queue wait / blocked / idle), the timeline (timeline_html.h), a
 * latency histogram per span group drawn from its quantile sketch's buckets, and the span
 * table. */
#ifndef TRACER_REPORT_HTML_H
#define TRACER_REPORT_HTML_H

#include "analyze/report.h"
#include "analyze/timeline_read.h"

#include <stdio.h>

/* Writes the page for a report computed by report__run(), with the timeline tl (NULL: none).
 * 0, or -EIO if f had a write error. */
int report_html__write(FILE *f, const struct report *r, const struct report_opts *o,
		       const struct timeline *tl);
/* Text or attribute content, escaped for HTML. */
void report_html__esc(FILE *f, const char *text);

/* Parts of the page, for pages built from them (tracer diff): the style sheet, the stage chart
 * and table of one report. */
const char *report_html__css(void);
void report_html__stages(FILE *f, const struct report *r);

#endif
