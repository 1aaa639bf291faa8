/* SPDX-License-Identifier: MIT */
/* `tracer record --to`: spans into ClickHouse while the recording runs. A thread of its own
 * reads the trace file behind the writer (the network is never on the recording's path) and
 * sends each second the span lines written since, numbered as `tracer push` numbers them, so
 * the push of the whole file at the end replaces them rather than adding to them. When the
 * server is slow, down or refuses, nothing more is read: the rows wait in the file itself —
 * the spool, beside nothing, bounded by nothing more than one batch in memory — and go when it
 * answers again, or with the push at the end, or with `tracer push` later. */
#ifndef TRACER_STREAM_H
#define TRACER_STREAM_H

#include <stdint.h>

struct stream;

/* Starts the thread for the plain (not .gz) trace file at path. NULL when it cannot start
 * (then the push at the end still runs). */
struct stream *stream__start(const char *path, const char *url);
/* Stops the thread and frees it; *rows: the span rows it sent. */
void stream__stop(struct stream *s, uint64_t *rows);

#endif
