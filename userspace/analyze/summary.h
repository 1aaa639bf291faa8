/* SPDX-License-Identifier: MIT */
/* What the recording says, printed when it stops: per span name, count and latency
 * percentiles; per thread, where its time went. */
#ifndef TRACER_SUMMARY_H
#define TRACER_SUMMARY_H

#include "events.h"
#include "probe/resolve.h"
#include "analyze/sketch.h"
#include "record/threads.h"

#include <stdio.h>
#include <uthash.h>

/* Distinct span names kept apart (name_from can make many); the rest share one row. */
#define SUMMARY_MAX_NAMES 512
#define SUMMARY_OTHER "(other names)"

struct span_stats {
	char *name;
	enum category cat;
	uint64_t count, total_ns, self_ns, incomplete;
	uint64_t shown_count; /* as the live view last showed it */
	/* self time inside the live view's current interval: a span longer than the interval
	 * brings only its part inside it, so one thread never shows more than 100% */
	uint64_t recent_self_ns;
	struct sketch sketch;
	UT_hash_handle hh; /* summary.by_name */
};

/* Names past SUMMARY_MAX_NAMES remembered to count them, at most this many. */
#define SUMMARY_MAX_FOLDED 65536

struct folded_name {
	UT_hash_handle hh;
	char name[];
};

struct summary {
	struct span_stats **names; /* one per distinct span name, in order of appearance */
	size_t nnames;
	struct span_stats *by_name; /* the same, by name */
	struct folded_name *folded; /* distinct names counted in SUMMARY_OTHER */
	size_t nfolded;
	uint64_t py_spans; /* Python spans (CNT_SPANS counts the probes' spans only) */
	uint64_t gil_spans; /* GIL waits told from the scheduler (python/py_spans.h) */
	uint64_t recent_from; /* the live view's current interval started here (monotonic ns) */
};

void summary__init(struct summary *s);
/* A span [start_ns, end_ns); self_ns: its duration less the time of the spans nested inside */
void summary__span(struct summary *s, const char *name, enum category cat, uint64_t start_ns,
		   uint64_t end_ns, uint64_t self_ns, bool incomplete);
struct report;
/* counters: the BPF counters summed over CPUs (CNT_MAX entries). rep: tracer report on the file
 * just written, whose stages and verdict are printed (NULL: the live estimate's). */
void summary__print(FILE *f, const struct summary *s, const struct threads *threads,
		    uint64_t wall_ns, const uint64_t *counters, const struct report *rep);
/* The stages and the verdict; now: the present of a live view (0 when the threads are
 * finished). */
void summary__print_stages(FILE *f, const struct threads *threads, uint64_t now);
/* The live view's span table, at most rows: the work, then the waits, each with the most self
 * time over the interval since the last call first (sort: an enum report_sort; SORT_SELF, or the
 * largest total, count, p99 since the start), with its rate; totals and percentiles since the
 * start. now: the interval's end (monotonic ns), the next one's start. */
void summary__print_recent(FILE *f, struct summary *s, uint64_t interval_ns, uint64_t now,
			   int sort, size_t rows);
void summary__free(struct summary *s);

#endif
