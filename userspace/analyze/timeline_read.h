/* SPDX-License-Identifier: MIT */
/* The timeline of `tracer report --html`, read from a trace (timeline.h has the logic): lanes
 * for the report's threads grouped by stage, each with its spans bucketed by depth and its
 * scheduler states, the wake-up arrows and the counter tracks of the window. It streams the file
 * (once more to choose the default window); memory is fixed per lane plus the window's spans,
 * at most 2 * TL_MAX_SPANS. */
#ifndef TRACER_TIMELINE_READ_H
#define TRACER_TIMELINE_READ_H

#include "analyze/report.h"
#include "analyze/timeline.h"

struct tl_lane {
	int64_t tid, pid;
	char name[64];
	char stage[STAGE_NAME_LEN];
	int depth;	/* span rows used */
	uint64_t spans; /* its spans that overlap the window */
	uint8_t rows[TL_DEPTH][TL_COLS];
	uint8_t states[TL_COLS];
	/* while reading */
	struct tl_span *sp;
	size_t nsp, cap;
	struct tl_iv *queue;
	size_t nq;
	uint64_t (*acc)[TS_MAX];
	enum tl_state st;
	int64_t since;
	bool seen;
};

struct tl_flow { /* one arrow: the wake-ups from lane a to lane b ending in one column */
	int a, b;
	int64_t from, to; /* the first one's times */
	uint32_t count;
};

struct tl_counter {
	char name[96];
	int64_t pid;
	double max[TL_COLS]; /* the largest value held in each column */
	bool set[TL_COLS];
	double last, top;
	int64_t last_t;
	bool have;
};

struct timeline {
	struct tl_window w;
	bool chosen; /* the default window (no --window) */
	char busiest[STAGE_NAME_LEN]; /* the stage the default window follows */
	bool has_sched;
	struct tl_lane *lanes;
	size_t nlanes, other_threads; /* threads beyond TL_MAX_LANES, not drawn */
	struct tl_flow *flows;
	size_t nflows;
	uint64_t wakeups, flows_dropped; /* wake-ups into the window; past TL_MAX_FLOWS */
	struct tl_counter *counters;
	size_t ncounters, other_counters;
	uint64_t spans_dropped;	  /* past the bound (timeline.h): not drawn */
	uint64_t max_spans;	  /* the bound */
};

/* Builds the timeline of path for the report r. window: the one to draw, or NULL for the
 * default. 0, or -errno with err filled. */
int timeline__build(struct timeline *tl, const char *path, const struct report *r,
		    const struct tl_window *window, char *err, size_t errlen);
void timeline__free(struct timeline *tl);

#endif
