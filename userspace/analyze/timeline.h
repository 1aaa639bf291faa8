/* SPDX-License-Identifier: MIT */
/* The timeline of `tracer report --html`: what each thread did in a window of the recording,
 * drawn from aggregates so that a million spans and a few hundred threads stay readable and the
 * page stays small. The window is cut into TL_COLS pixel columns; for each thread (lane) and
 * column the page gets the dominant category of its spans at each nesting depth and its dominant
 * scheduler state, not the spans themselves. This file is the pure logic (columns, nesting,
 * dominance, the default window); timeline_read.c fills it from a trace, timeline_html.c draws
 * it. */
#ifndef TRACER_TIMELINE_H
#define TRACER_TIMELINE_H

#include "analyze/stages.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_COLS 1000	     /* pixel columns of the window */
#define TL_DEPTH 6	     /* span rows per lane; deeper spans are drawn in the last */
#define TL_MAX_LANES 400     /* threads drawn; the rest are counted in a note */
/* Spans of the window kept to nest them (24 bytes each); past it only those at least a column
 * long, up to twice as many: a short span is never the parent of a longer one, so their depths
 * stay right. TRACER_TIMELINE_MAX_SPANS overrides it (tests). */
#define TL_MAX_SPANS 2000000
#define TL_MAX_FLOWS 4000    /* wake-up arrows drawn (merged per lane pair and column) */
#define TL_FLOWS_SHOWN 300   /* more arrows than this start hidden: they cover the lanes */
#define TL_MAX_COUNTERS 16   /* counter tracks drawn */
#define TL_SLICES 200	     /* the recording's slices when choosing the default window */
#define TL_SPANS_PER_LANE 40 /* the default window holds about this many spans per thread */

/* A row cell: 0 empty, else 1 + category * 4 + coverage (0..3: how much of the column the
 * spans at that depth fill). */
#define TL_CELL(cat, cov) (1 + (cat) * 4 + (cov))

enum tl_state { TS_NONE, TS_RUNNING, TS_RUNNABLE, TS_SLEEPING, TS_BLOCKED, TS_QUEUE, TS_MAX };

struct tl_window {
	int64_t start, dur; /* trace-relative ns; dur > 0 */
};

struct tl_span {
	int64_t s, e;
	uint8_t cat;
};

struct tl_iv {
	int64_t s, e;
};

/* Which of n equal bins of [start, start + dur) holds t, clamped into 0 .. n - 1; and where
 * bin i starts. */
int tl__bin(int64_t start, int64_t dur, int n, int64_t t);
int64_t tl__bin_start(int64_t start, int64_t dur, int n, int i);
/* The column of time t in the window, clamped into 0 .. TL_COLS - 1. */
int tl__col(const struct tl_window *w, int64_t t);

/* Nests a lane's spans by time (sorts sp by start, longest first; a span's depth is the number
 * of spans still open at its start) and fills rows[depth][col] with the dominant category of
 * the time at that depth in that column (ties to the lower category). Returns the rows used
 * (0..TL_DEPTH). Spans are clipped to the window; deeper ones go to the last row. */
int tl__nest(const struct tl_window *w, struct tl_span *sp, size_t n, uint8_t rows[][TL_COLS]);

/* The union of the queue spans of sp (after tl_nest: sorted) in *out (malloc'ed, sorted,
 * disjoint); returns the count. is_queue[cat] says which categories are waits. */
size_t tl__queue_union(const struct tl_span *sp, size_t n, const bool *is_queue,
		       struct tl_iv **out);

/* Adds [s, e) spent in state st to the per-column totals acc[col][state]. Sleeping and blocked
 * time inside q (a queue union) counts as TS_QUEUE. */
void tl__add_state(const struct tl_window *w, uint64_t (*acc)[TS_MAX], enum tl_state st,
		   int64_t s, int64_t e, const struct tl_iv *q, size_t nq);

/* The dominant state of each column (TS_NONE where nothing is known). */
void tl__states(uint64_t (*acc)[TS_MAX], uint8_t *out);

/* The default window: the recording [start, end) cut into TL_SLICES slices, spans[i] the spans
 * ending in slice i and busy[i] the busiest stage's busy time there. The window is k slices
 * long, k such that it holds about TL_SPANS_PER_LANE spans per lane on average (the whole
 * recording when it holds fewer), at the k slices with the most busy time (earliest on ties). */
struct tl_window tl__default_window(int64_t start, int64_t end, const uint64_t *spans,
				    const uint64_t *busy, size_t lanes);

#endif
