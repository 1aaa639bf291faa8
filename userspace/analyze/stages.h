/* SPDX-License-Identifier: MIT */
/* Pipeline stages and the bottleneck verdict, shared by `tracer report` and the recorder's
 * summary. Threads are grouped by name with trailing indices folded ("decode-0", "decode-1" ->
 * "decode[*]", like Scanner's replicas), within their process ("python3 pid 42" when processes
 * share a name); a saturated thread among idle namesakes, and a thread with spans among
 * namesakes without any, is a stage of its own ("ffmpeg tid 7"), never averaged with them; each stage's time is split into running, runnable
 * (waiting for a CPU), waiting inside queue-category spans, blocked elsewhere and idle, as
 * shares of its threads' observed time; the verdict names what bounds the pipeline. */
#ifndef TRACER_STAGES_H
#define TRACER_STAGES_H

#include "probe/probe_spec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What one thread did: filled by the report from a trace file, or by the recorder from its
 * struct thread (see thread_time__from_states). */
struct thread_time {
	const char *name; /* its (last) name */
	const char *role; /* what its Python code says it is ("DataLoader worker"), or NULL */
	int pid, tid;
	uint64_t running_ns;
	uint64_t runnable_ns;	/* woken or preempted, waiting for a CPU */
	uint64_t queue_wait_ns; /* sleeping or blocked inside queue-category spans */
	uint64_t blocked_ns;	/* uninterruptible (D) outside queue spans: I/O, page faults */
	uint64_t idle_ns;	/* sleeping outside queue spans */
	uint64_t cat_ns[CAT_MAX]; /* inside spans of each category (categories may overlap) */
	uint64_t spans;
	int64_t woken_by; /* without spans of its own: the thread that wakes it most (a majority) */
	/* false: the trace has no scheduler states; then running_ns is the time inside spans
	 * that are not queue spans, idle_ns the rest of the time from its first span to its
	 * last, and runnable_ns and blocked_ns are 0 */
	bool has_states;
};

/* The thread's observed time: the five shares add up to it. */
uint64_t thread_time__wall(const struct thread_time *t);

/* Fills the state times from per-state totals such as the recorder's (struct thread's
 * state_ns[] and queue_ns). in_queue_ns is the time inside queue spans whatever the state;
 * queue spans are waits, so the part of it that fits into sleeping + blocked counts as queue
 * wait, taken from sleeping first. */
void thread_time__from_states(struct thread_time *t, uint64_t running, uint64_t runnable,
			      uint64_t sleeping, uint64_t blocked, uint64_t in_queue_ns);

#define STAGE_NAME_LEN 64

struct stage_stats {
	char name[STAGE_NAME_LEN]; /* folded: "decode[*]"; or "ffmpeg tid 12", "python3 pid 4" */
	uint32_t threads;
	uint64_t spans;
	uint64_t wall_ns; /* the sum of its threads' observed times */
	uint64_t max_wall_ns; /* the longest-observed thread's */
	uint64_t running_ns, runnable_ns, queue_wait_ns, blocked_ns, idle_ns;
	uint64_t cat_ns[CAT_MAX];
	bool has_states;
	/* a thread with spans among namesakes without any (ffmpeg's caller of the decoder API
	 * and its frame threads): those namesakes, and their running, runnable and blocked time */
	uint32_t helpers;
	uint64_t helper_busy_ns;
};

/* Python functions where a thread waits for another (queue.Queue.get, Condition.wait,
 * multiprocessing's Connection.recv, ...): their spans count as queue waits, as queue spans
 * do. */
bool stage__python_wait(const char *qualname);
/* The role a Python function gives the thread that runs it ("DataLoader worker" for PyTorch's
 * _worker_loop, "Pool worker" for multiprocessing's), or NULL. */
const char *stage__python_role(const char *qualname);
#define HELPER_QUEUE_FEEDER "queue feeder" /* a role that waits whatever the pipeline does */

/* Folds a trailing index: "decode-0", "worker 3", "op_12", "Pipeline[0]" -> "decode[*]",
 * "worker[*]", "op[*]", "Pipeline[*]". Other names are kept. */
void stage__fold(const char *name, char *out, size_t len);
/* A share of the stage's wall time, 0..1. */
double stage__share(const struct stage_stats *s, uint64_t ns);

/* Each thread's stage name, as stages__from_threads groups them. 0 or -ENOMEM. */
int stages__names(const struct thread_time *t, size_t n, char (*names)[STAGE_NAME_LEN]);
/* Groups threads into stages, busiest first. *out is malloc'ed. 0 or -errno. */
int stages__from_threads(const struct thread_time *t, size_t n, struct stage_stats **out,
			 size_t *nout);
/* The stage table, aligned, within 100 columns. */
void stages__print(FILE *f, const struct stage_stats *s, size_t n);
/* One line (no newline) starting "bottleneck: ". ncpus: CPUs the pipeline could use (0 if
 * unknown). */
void stages__verdict(char *buf, size_t len, const struct stage_stats *s, size_t n, int ncpus);

#endif
