/* SPDX-License-Identifier: MIT */
/* A trace file as ClickHouse rows (doc/clickhouse.md): its spans and its threads' scheduler
 * states in batches of JSONEachRow text, each batch numbered, then the one row of the
 * recording (identity, counts, the verdict and the stages as `tracer report` computes them).
 * Reads complete files and cut ones alike (trace/trace_reader.h). */
#ifndef TRACER_SPANS_ROWS_H
#define TRACER_SPANS_ROWS_H

#include "trace/trace_reader.h"

#include <uthash.h>

#include <stddef.h>
#include <stdint.h>

/* Thread or process names by id (a tid or a pid), as the file's metadata events give them. */
struct name {
	int64_t id;
	int64_t pid;
	char *s;
	UT_hash_handle hh;
};

void name_set(struct name **h, int64_t id, int64_t pid, const char *s);
const struct name *name_get(struct name *h, int64_t id); /* NULL: not named */
void names_free(struct name **h);

/* JSONEachRow text being built. */
struct rows_text {
	char *p;
	size_t len, cap;
};

/* Called once per batch: table is "tracer_spans", "tracer_states" or "tracer_counters", seq
 * counts that table's batches from 0; rows is nrows JSON objects, one a line. Non-zero stops
 * the walk. */
typedef int (*rows_sink)(void *arg, const char *table, uint32_t seq, const char *rows,
			 size_t len, uint32_t nrows);

struct rows_totals {
	uint64_t spans, states, counters, batches;
	int truncated; /* the file was cut short */
};

/* The host the recording says it was made on (its "recording started" event, among the file's
 * first events), in host; 0, or -ENOENT when the file does not say (made before it did). */
int spans_rows__host(const char *path, char *host, size_t len);
/* The recording's id: a hash of host and the file's first 4 KB (its identity, its first
 * events), so the same file, or a cut copy of it, pushed again keeps its id. 16 hex digits. */
int spans_rows__id(const char *path, const char *host, char id[17], char *err, size_t errlen);
/* Hands the spans, the states, then the counters of path to sink, batch_rows at most per batch. 0, the
 * sink's non-zero, or -errno with err filled. */
int spans_rows__walk(const char *path, const char *id, const char *host, size_t batch_rows,
		     rows_sink sink, void *arg, struct rows_totals *t, char *err, size_t errlen);
/* The recording's row (one JSON object, malloc'ed) in *row. 0 or -errno with err filled. */
int spans_rows__recording(const char *path, const char *id, const char *host,
			  const struct rows_totals *t, char **row, char *err, size_t errlen);

/* One span's row (a line) appended to b: the same columns whoever builds it (push, the
 * streamer), so the same span has the same key. depth: spans_rows__before's count of the
 * spans that enclose it. clean/cap: a scratch buffer. */
void spans_rows__span(struct rows_text *b, const char *id, const char *host, uint32_t seq,
		      uint32_t row, const struct trace_event *ev, uint32_t depth,
		      const char *thread, const char *process, int64_t t0_realtime, char **clean,
		      size_t *cap);

/* A span's place for nesting, as the viewers and the timeline (analyze/timeline.h) nest a
 * thread's spans: by start, the longest first, then file order (idx). Its depth is the number
 * of the thread's spans before it in that order still open at its start. */
struct span_iv {
	int64_t s, e;
	uint64_t idx;
};
static inline int spans_rows__before(const struct span_iv *a, const struct span_iv *b)
{
	if (a->s != b->s)
		return a->s < b->s;
	if (a->e != b->e)
		return a->e > b->e;
	return a->idx < b->idx;
}

/* A state row and a counter row, as push and the streamer build them. */
void spans_rows__state(struct rows_text *b, const char *id, const char *host, uint32_t seq,
		       uint32_t row, int64_t pid, int64_t tid, const char *thread,
		       const char *state, int64_t start_ns, int64_t dur_ns);
void spans_rows__counter(struct rows_text *b, const char *id, const char *host, uint32_t seq,
			 uint32_t row, int64_t pid, const char *name, const char *key,
			 int64_t start_ns, double value);

/* Threads' scheduler states from the ftrace lines, fed in file order: each interval that ends
 * goes to emit (a thread's state when the lines stop has no end yet). */
struct sched_states {
	void *threads;
};
typedef int (*state_emit)(void *arg, int64_t tid, int64_t pid, const char *state,
			  int64_t since_ns, int64_t now_ns);
/* 0, or emit's non-zero. */
int sched_states__line(struct sched_states *st, const char *text, size_t len, state_emit emit,
		       void *arg);
void sched_states__free(struct sched_states *st);

#endif
