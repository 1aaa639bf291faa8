/* SPDX-License-Identifier: MIT */
/* `tracer diff A B`: two recordings compared. Each is reported as `tracer report` does (same
 * grouping, same bounded memory: both reports are held, so twice report's), the groups are
 * matched by key, and each pair of groups gets a Mann–Whitney U test on its calls' durations
 * (mann_whitney.h, on the groups' quantile sketches: every call, no sample). A row is
 * significant when p < DIFF_ALPHA and the effect is not negligible (|Cliff's delta| >=
 * DIFF_MIN_EFFECT) and the median moved by DIFF_MIN_MOVE or more: with thousands of calls a
 * test alone finds shifts too small to matter, and calls of one run are not independent. */
#ifndef TRACER_DIFF_H
#define TRACER_DIFF_H

#include "analyze/mann_whitney.h"
#include "analyze/report.h"

#include <stdbool.h>
#include <stdio.h>

#define DIFF_ALPHA 0.001
#define DIFF_MIN_EFFECT 0.147 /* Romano et al.: below it, a negligible effect */
#define DIFF_MIN_MOVE 0.05

struct diff_opts {
	const char *a, *b;
	enum report_by by;
	enum report_format format; /* FMT_TABLE or FMT_JSON */
	long top;		   /* rows to show; 0 for all, -1 for the default */
};

struct diff_row {
	const char *key;
	const char *cat;		   /* by name: the category (of A's group when both) */
	const struct report_group *a, *b; /* NULL when the key is in one run only */
	struct mann_whitney mw;
	double p50_ratio; /* b / a; 0 when either is missing or a's is 0 */
	bool significant;
	bool wait; /* a wait (queue, GIL): it moves because of what it waits for */
};

struct diff {
	struct report a, b;
	struct report_opts oa, ob;
	struct diff_row *rows; /* what moved most first */
	size_t nrows;
};

/* Reports both files and compares them. 0, or -errno with err filled. */
int diff__run(struct diff *d, const struct diff_opts *o, char *err, size_t errlen);
void diff__print(FILE *f, const struct diff *d, const struct diff_opts *o);
void diff__free(struct diff *d);
/* The significance rule, on a row's test and medians. */
bool diff__significant(const struct mann_whitney *mw, uint64_t p50_a, uint64_t p50_b);

#endif
