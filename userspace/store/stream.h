/* SPDX-License-Identifier: MIT */
/* `tracer record --to`: rows into ClickHouse while the recording runs. A thread of its own
 * reads the trace file behind the writer (spans, queue depths) and the writer's scheduler text
 * (thread states) — the network is never on the recording's path — and sends each second the
 * rows written since, numbered as `tracer push` numbers them, so the push of the whole file at
 * the end replaces them rather than adding to them. When the server is slow, down or refuses,
 * nothing more is read: the rows wait in the files themselves — the spool, beside nothing,
 * bounded by a batch or two in memory — and go when it answers again, or with the push at the
 * end, or with `tracer push` later. */
#ifndef TRACER_STREAM_H
#define TRACER_STREAM_H

#include <stdint.h>

struct stream;

struct stream_sent {
	uint64_t spans, states, counters; /* rows sent */
};

/* Starts the thread for the plain (not .gz) trace file at path and the writer's scheduler
 * text (trace_writer__sched_fd; -1: none). NULL when it cannot start (then the push at the
 * end still runs). */
struct stream *stream__start(const char *path, int sched_fd, const char *url);
/* Stops the thread and frees it; *sent: the rows it sent. */
void stream__stop(struct stream *s, struct stream_sent *sent);

#endif
