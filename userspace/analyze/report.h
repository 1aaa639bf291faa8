/* SPDX-License-Identifier: MIT */
/* `tracer report`: span statistics per name, category, thread or stage (count, total, mean, min,
 * max and percentiles from the quantile sketch), the stage table and the bottleneck verdict,
 * from a trace file of any size.
 *
 * Memory does not grow with the file. Pass 1 streams the file once for the statistics (one
 * sketch per group), the thread names, how each thread's first scheduler event says what it did
 * before, and the K longest spans. Pass 2 reads the file with two readers at once — the spans
 * and the scheduler lines — and sweeps them in time order to split each thread's time into
 * running, runnable, waiting inside queue spans, blocked and idle exactly. Spans arrive in
 * completion order, so a span may cover others that came before it; the K longest spans are
 * known in advance, and every other span is at most as long as the shortest of them (L), so only
 * the last L of each thread's spans and scheduler states are kept (plus the disorder of the
 * file, measured in pass 1). Self time takes either order: a span covers the spans read before
 * it (completion order), or is inside an open span read before it (start order). */
#ifndef TRACER_REPORT_H
#define TRACER_REPORT_H

#include "analyze/sketch.h"
#include "analyze/stages.h"

#include <uthash.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum report_by { BY_NAME, BY_CATEGORY, BY_THREAD, BY_STAGE };

/* Span names (or categories) kept apart at most; a small sketch each (sketch.h): some 300 MB. */
#define REPORT_MAX_GROUPS 1000000
#define REPORT_OTHER "(other names)"
enum report_format { FMT_TABLE, FMT_CSV, FMT_JSON };
/* The order of the groups: most self time first (the work itself, not the frames around it) by
 * default; or total, count, p99. */
enum report_sort { SORT_SELF, SORT_TOTAL, SORT_COUNT, SORT_P99 };

struct report_opts {
	const char *path;
	enum report_by by;
	enum report_format format;
	long top; /* rows to show; 0 for all, -1 for the default (20 in tables, all otherwise) */
	uint64_t min_dur_ns;
	/* for tracer diff, --by thread / stage: the waits (queue, GIL spans) left out of the
	 * groups, and threads keyed by name alone (tids differ from run to run) */
	bool compare;
	enum report_sort sort;
};

struct report_group {
	char *key;
	char cat[32]; /* by name: the category of its first span */
	uint64_t count, total_ns;
	uint64_t self_ns; /* total less the time of the spans nested directly inside */
	/* the spans' durations added up: the mean. --by thread and stage, total_ns is the time
	 * the spans cover instead, nested ones counted once (a thread is in one span at a time) */
	uint64_t sum_ns;
	struct sketch sketch;
	UT_hash_handle hh; /* in the report's table of groups */
};

struct report {
	struct report_group **groups; /* sorted by opts.sort, largest first */
	size_t ngroups;
	struct thread_time *threads; /* the pipeline's threads (named or with spans) */
	size_t nthreads;
	struct stage_stats *stages;
	size_t nstages;
	char verdict[512];
	uint64_t spans, incomplete, ignored_be;
	int64_t start_ns, end_ns; /* the recording, trace-relative */
	int cpus;		  /* CPUs seen in the scheduler lines, 0 if none */
	bool has_sched, truncated;
	uint64_t approx; /* spans whose scheduler history was gone (far out-of-order files) */
	/* --by name or category: past max_groups distinct keys, the spans of new ones are
	 * counted in one group, REPORT_OTHER (folded of them) */
	uint64_t folded;
	size_t max_groups;
	void *priv;
};

/* Reads path and computes everything. 0, or -errno with err filled ("FILE:LINE: what"). */
int report__run(struct report *r, const struct report_opts *o, char *err, size_t errlen);
/* "name", "category", "thread", "stage": 0 or -EINVAL. */
int report_by__parse(const char *s, enum report_by *by);
/* "self", "total", "count", "p99": 0 or -EINVAL. */
int report_sort__parse(const char *s, enum report_sort *sort);
/* The order in words: "most self time", "largest total", ... ("... first"). */
const char *report_sort__order(enum report_sort sort);
void report__print(FILE *f, const struct report *r, const struct report_opts *o);
void report__free(struct report *r);

#endif
