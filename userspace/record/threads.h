/* SPDX-License-Identifier: MIT */
/* Per-thread state built from the scheduler records: name, current state and time spent in
 * each state, time inside queue-category spans. */
#ifndef TRACER_THREADS_H
#define TRACER_THREADS_H

#include "analyze/cover.h"
#include "events.h"

#include <stdbool.h>
#include <stdint.h>

/* The kernel's comm (COMM_LEN) or Python's threading name, which is longer: "Thread-1
 * (_handle_request)" was cut to "Thread-1 (_handl" */
#define THREAD_NAME_LEN 128

enum thread_state {
	TS_UNKNOWN,
	TS_RUNNING,
	TS_RUNNABLE, /* preempted or woken, waiting for a CPU */
	TS_SLEEPING,
	TS_BLOCKED, /* uninterruptible (D), usually I/O */
	TS_MAX,
};

struct thread {
	int pid, tid;
	char name[THREAD_NAME_LEN];
	bool named;  /* its thread_name event is in the trace */
	bool py_named; /* named by Python's threading: the kernel's comm no longer renames it */
	bool exited;
	bool switch_seen; /* a switch of it was recorded: the next one must be its opposite */
	enum thread_state state;
	uint64_t since; /* when it entered state */
	uint64_t first_seen, last_seen;
	uint64_t state_ns[TS_MAX];
	uint64_t queue_ns; /* inside queue-category spans, while its state is known */
	struct cover cover, queue_cover; /* its spans, its queue spans so far (analyze/cover.h) */
	const char *role; /* what its Python code says it is (stage__python_role) */
	uint64_t spans;
	/* A wake-up by a traced thread inside a span, waiting to be drawn as an arrow to this
	 * thread's span at or after flow_ns. */
	uint64_t flow_ns;
	int flow_pid, flow_tid;
};

struct threads {
	struct thread *v; /* open addressing on tid, flat: a lookup per event */
	uint32_t cap, cnt;
};

void threads__init(struct threads *ts);
void threads__free(struct threads *ts);
/* The thread with this tid (not 0: that marks a free slot), created (state unknown, unnamed)
 * if new. */
struct thread *threads__get(struct threads *ts, int pid, int tid);
/* The thread with this tid, or NULL. */
const struct thread *threads__find(const struct threads *ts, int tid);
/* Moves a thread to a new state at ts, adding the time spent in the previous one. */
/* Frees what the thread keeps of its spans (an exited thread has no more). */
void thread__forget_spans(struct thread *t);
void thread__set_state(struct thread *t, enum thread_state s, uint64_t ts);
/* A queue span [s, e) of it: queue_ns grows by the part of it no queue span covered before and
 * whose state is known (a stretch of unknown state is in no state's time either). */
void thread__queue_span(struct thread *t, uint64_t s, uint64_t e);
/* The other side of a switch may be any process: say which sides are traced. A thread switched
 * out twice, or in twice, lost a switch between (the kernel skipped the program, recursing):
 * the stretch since its last event counts as unknown, not as the state it seemed in. Returns
 * the sides that lost one: SWITCH_LOST_PREV, SWITCH_LOST_NEXT. */
enum { SWITCH_LOST_PREV = 1, SWITCH_LOST_NEXT = 2 };
unsigned threads__on_switch(struct threads *ts, const struct switch_rec *r, bool prev_traced,
			    bool next_traced);
void threads__on_wakeup(struct threads *ts, const struct wakeup_rec *r);
/* Closes every thread's current state at end (the end of the recording). */
void threads__finish(struct threads *ts, uint64_t end);
/* The state /proc reports ("R", "S", "D"...) as a starting state. */
enum thread_state thread_state__from_proc(char c);

#endif
