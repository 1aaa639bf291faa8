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

struct span_stats {
	char *name;
	enum category cat;
	uint64_t count, total_ns, self_ns, incomplete;
	uint64_t shown_count, shown_self_ns; /* as the live view last showed them */
	struct sketch sketch;
	UT_hash_handle hh; /* summary.by_name */
};

struct summary {
	struct span_stats **names; /* one per distinct span name, in order of appearance */
	size_t nnames;
	struct span_stats *by_name; /* the same, by name */
};

void summary__init(struct summary *s);
/* self_ns: dur_ns less the time of the spans nested inside it */
void summary__span(struct summary *s, const char *name, enum category cat, uint64_t dur_ns,
		   uint64_t self_ns, bool incomplete);
struct report;
/* counters: the BPF counters summed over CPUs (CNT_MAX entries). rep: tracer report on the file
 * just written, whose stages and verdict are printed (NULL: the live estimate's). */
void summary__print(FILE *f, const struct summary *s, const struct threads *threads,
		    uint64_t wall_ns, const uint64_t *counters, const struct report *rep);
/* The stages and the verdict; now: the present of a live view (0 when the threads are
 * finished). */
void summary__print_stages(FILE *f, const struct threads *threads, uint64_t now);
/* The live view's span table, at most rows: the work, then the waits, each with the most self
 * time over the interval since the last call first, with its rate; totals and percentiles since
 * the start. */
void summary__print_recent(FILE *f, struct summary *s, uint64_t interval_ns, size_t rows);
void summary__free(struct summary *s);

#endif
