/* SPDX-License-Identifier: MIT */
/* The Chrome Trace Event JSON writer (rules in doc/trace-format.md): one event per line inside
 * "traceEvents"; scheduler events as ftrace text in "systemTraceEvents", which both Perfetto and
 * catapult turn into native thread states and CPU tracks; a "metadata" object last. Output is a
 * plain file or gzip (".gz"). */
#ifndef TRACER_TRACE_WRITER_H
#define TRACER_TRACE_WRITER_H

#include "events.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace_writer;

/* t0_ns: CLOCK_MONOTONIC time of the trace's zero; every ts is relative to it. */
int trace_writer__open(struct trace_writer **w, const char *path, int fd, uint64_t t0_ns);

void trace_writer__process_name(struct trace_writer *w, int pid, const char *name);
void trace_writer__thread_name(struct trace_writer *w, int pid, int tid, const char *name);
/* One complete slice ("X"); an entry-only call (SPAN_INSTANT) as a thread instant ("i").
 * args: members of its "args" object as JSON text ("\"n\":3,\"q\":\"0x1f\""), or NULL. */
void trace_writer__span(struct trace_writer *w, const struct span_rec *r, const char *name,
			const char *cat, const char *args);
/* A thread-scoped instant ("i"): where recording paused, resumed, or lost data. */
void trace_writer__instant(struct trace_writer *w, int pid, int tid, uint64_t ts_ns,
			   const char *name, const char *args);
/* A counter track ("C") of the process: name's value at ts. */
void trace_writer__counter(struct trace_writer *w, int pid, uint64_t ts_ns, const char *name,
			   const char *key, int64_t value);
/* A flow arrow (v1 "s"/"f", both bound to the slice enclosing their ts) from one thread's
 * slice to another's. */
void trace_writer__flow(struct trace_writer *w, uint64_t id, int from_pid, int from_tid,
			uint64_t from_ns, int to_pid, int to_tid, uint64_t to_ns);
void trace_writer__switch(struct trace_writer *w, const struct switch_rec *r);
void trace_writer__wakeup(struct trace_writer *w, const struct wakeup_rec *r);

/* Events written so far, and bytes of output. */
uint64_t trace_writer__events(const struct trace_writer *w);
uint64_t trace_writer__bytes(const struct trace_writer *w);
/* 0, or the -errno of the first failed write: from then on nothing more is written. */
int trace_writer__error(const struct trace_writer *w);

/* The first event: a global "recording started" instant at 0 whose args (JSON members, no
 * braces, under 6 KB) say what a cut file needs to be read back: version, clock and zero, the
 * command line, the CPUs. */
void trace_writer__started(struct trace_writer *w, const char *args);
/* Writes what is buffered to the file now (a gzip stream up to a sync point): from then on a
 * kill leaves at least that, which `tracer repair` closes into a valid trace. */
void trace_writer__flush(struct trace_writer *w);
/* The scheduler text as written so far (an unlinked file, up to the last flush): read it with
 * pread on a dup, never move its offset. */
int trace_writer__sched_fd(const struct trace_writer *w);
/* Ends "traceEvents" with a global "recording stopped" instant at end_ns, appends the
 * scheduler text and metadata_json (a JSON object), closes the file. Returns 0 or the -errno of
 * the first failed write: a plain file is then cut at its last complete event line that leaves
 * room for the end (without the scheduler text), so it stays a valid trace. */
int trace_writer__close(struct trace_writer *w, uint64_t end_ns, const char *stop_reason,
			const char *metadata_json);

#endif
