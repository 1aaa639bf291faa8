/* SPDX-License-Identifier: MIT */
/* A streaming reader of Chrome Trace Event JSON files (plain or gzip), for report, merge and
 * export. It never holds the file: it walks the top-level object byte by byte and hands out one
 * item at a time — an event of "traceEvents" (or of a bare top-level array), one ftrace text line
 * of the "systemTraceEvents" string, the raw "metadata" object — so memory is bounded by the
 * largest single event, not by the file. tracer's own files have one event per line, but any
 * valid layout (pretty-printed, reordered keys, bare arrays) reads the same. A file cut short
 * (a recording killed with SIGKILL) yields every complete item and then says it was truncated. */
#ifndef TRACER_TRACE_READER_H
#define TRACER_TRACE_READER_H

#include "trace/ftrace_line.h"
#include "trace/json_value.h" /* for the callers that read an event's members */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace_reader;

/* What to hand out; the rest is skipped without parsing. */
#define TR_EVENTS (1u << 0)
#define TR_SCHED (1u << 1)
#define TR_METADATA (1u << 2)
#define TR_ALL (TR_EVENTS | TR_SCHED | TR_METADATA)

/* Events and metadata larger than this are skipped and counted (bounded memory). */
#define TR_MAX_VALUE (64u << 20)
/* ftrace lines longer than this are cut (real ones are ~200 bytes). */
#define TR_MAX_SCHED_LINE 65536

enum trace_item_type {
	TI_END,
	TI_EVENT,
	TI_SCHED,
	TI_METADATA,
};

struct trace_event {
	const char *text; /* the event's JSON text, not NUL-terminated */
	size_t len;
	char ph;	  /* first letter of "ph"; 0 if absent */
	const char *name; /* unescaped; "" if absent */
	const char *cat;  /* unescaped; "" if absent */
	const char *arg_name; /* args.name unescaped (thread_name / process_name); NULL if absent */
	bool has_ts, has_dur, has_pid, has_tid;
	bool bad_time; /* a ts or dur that is not a usable time: the reader leaves it out */
	int64_t ts_ns, dur_ns; /* microseconds in the file, exact nanoseconds here */
	int64_t pid, tid;
	struct text_span ts_at, pid_at, tid_at, args_at, id_at, bind_id_at, name_at, cat_at;
};

struct trace_item {
	enum trace_item_type type;
	struct trace_event ev; /* TI_EVENT */
	const char *text;      /* TI_SCHED: one line, without '\n'; TI_METADATA: raw JSON */
	size_t len;
};

/* Opens path (plain or gzip) to hand out the items in want. 0 or -errno; on error, msg (if
 * not NULL) says what is wrong in a form fit for "tracer: ...". */
int trace_reader__open(struct trace_reader **r, const char *path, unsigned want, char *msg,
		       size_t msglen);
/* The next item, in file order: 1 with *it filled, 0 at the end, -errno on an error (then
 * trace_reader__error() says what and where). Pointers in *it stay valid until the next call. */
int trace_reader__next(struct trace_reader *r, struct trace_item *it);
/* "FILE:LINE: what is wrong" for the last error. */
const char *trace_reader__error(const struct trace_reader *r);
/* The file ended before its top-level value was closed. */
bool trace_reader__truncated(const struct trace_reader *r);
/* Events or metadata skipped because they were larger than TR_MAX_VALUE. */
uint64_t trace_reader__oversized(const struct trace_reader *r);
/* Events left out because their ts or dur is not a usable time (NaN, huge, negative dur). */
uint64_t trace_reader__bad_times(const struct trace_reader *r);
/* Warns, naming path, of every event skipped so far (oversized, bad times): none in silence. */
void trace_reader__warn_skipped(const struct trace_reader *r, const char *path);
/* No "traceEvents" array and no top-level array were seen (call at the end). */
bool trace_reader__no_events(const struct trace_reader *r);
void trace_reader__close(struct trace_reader *r);

#endif
