/* SPDX-License-Identifier: MIT */
/* `tracer diff --html FILE`: both runs on one self-contained page (inline CSS and SVG, no
 * script): both verdicts, the compared rows with each one's median in A and B drawn as a pair of
 * bars, and each run's stage chart (report_html's) side by side. */
#ifndef TRACER_DIFF_HTML_H
#define TRACER_DIFF_HTML_H

#include "analyze/diff.h"

#include <stdio.h>

/* 0, or -EIO if f had a write error. */
int diff_html__write(FILE *f, const struct diff *d, const struct diff_opts *o);

#endif
