/* SPDX-License-Identifier: MIT */
/* Turns ring-buffer records into trace events, per-thread state and summary statistics. */
#ifndef TRACER_CONSUMER_H
#define TRACER_CONSUMER_H

#include "probe/resolve.h"
#include "analyze/summary.h"
#include "record/threads.h"
#include "trace/trace_writer.h"
#include "python/py_session.h"

#include <stddef.h>

/* Depth of one queue (push and pop probes with its identity), from the start of recording. */
struct queue_depth {
	int pid;
	uint64_t id;
	int64_t depth;
};

#define MAX_QUEUES 1024

struct consumer {
	struct trace_writer *writer;
	const struct probe_table *probes;
	struct threads threads;
	struct summary summary;
	int *pids; /* the traced processes, sorted */
	size_t npids;
	/* Called for a new process of a traced one (--follow), a traced process that execs or
	 * reached its entry point, and a process seen for the first time (-a). */
	void (*on_process)(void *ctx, const struct task_rec *r);
	void *ctx;
	bool flows;	 /* draw wake-up arrows between spans */
	bool no_args;	 /* the BPF side captured nothing: ignore capture fields */
	uint64_t max_bytes; /* --max-size: stop taking records once the file is this big */
	uint64_t records;
	uint64_t sched_gaps; /* threads switched out (or in) twice: a switch was not recorded */
	unsigned int budget; /* records left before the loop gets a turn (rings__consume) */
	uint64_t next_flow_id;
	struct py_session *py; /* Python frames: NULL when off */
	struct queue_depth queues[MAX_QUEUES];
	size_t nqueues;
};

void consumer__init(struct consumer *c, struct trace_writer *w, const struct probe_table *probes,
		    bool flows, bool no_args);
/* A process whose events are traced from now on; names it in the trace. */
void consumer__add_pid(struct consumer *c, int pid, const char *comm);
/* SIGUSR1: thread states are unknown while paused; marks the trace. */
void consumer__pause(struct consumer *c, bool paused, uint64_t ts);
/* The rings__consume() callback. Every CONSUME_BUDGET records it returns -EAGAIN, so that
 * rings__consume() returns to the event loop even when producers never let the rings run
 * empty (signals and -d must work under any load). */
#define CONSUME_BUDGET 65536
int consumer__handle(void *ctx, void *data, size_t size);
/* Makes a thread known with its current name and state from /proc (before recording starts). */
void consumer__add_thread(struct consumer *c, int pid, int tid, uint64_t ts);
/* Python's hooks into the summary and thread names (python/py_session.h). */
extern const struct py_session_ops consumer__py_ops;
void consumer__free(struct consumer *c);

#endif
