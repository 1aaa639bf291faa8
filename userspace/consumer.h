/* SPDX-License-Identifier: MIT */
/* Turns ring-buffer records into trace events, per-thread state and summary statistics. */
#ifndef TRACER_CONSUMER_H
#define TRACER_CONSUMER_H

#include "resolve.h"
#include "summary.h"
#include "threads.h"
#include "trace_writer.h"

#include <stddef.h>

struct consumer {
	struct trace_writer *writer;
	const struct probe_table *probes;
	struct threads threads;
	struct summary summary;
	const int *pids; /* the traced processes */
	size_t npids;
	uint64_t records;
};

void consumer__init(struct consumer *c, struct trace_writer *w, const struct probe_table *probes,
		    const int *pids, size_t npids);
/* The ring_buffer__new() callback. */
int consumer__handle(void *ctx, void *data, size_t size);
/* Makes a thread known with its current name and state from /proc (before recording starts). */
void consumer__add_thread(struct consumer *c, int pid, int tid, uint64_t ts);
void consumer__free(struct consumer *c);

#endif
