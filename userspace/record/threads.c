// SPDX-License-Identifier: MIT
#include "record/threads.h"
#include "trace/ftrace_line.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

void threads__init(struct threads *ts)
{
	ts->cap = 256;
	ts->cnt = 0;
	ts->v = xcalloc(ts->cap, sizeof(*ts->v));
}

void threads__free(struct threads *ts)
{
	for (uint32_t i = 0; i < ts->cap; i++)
		thread__forget_spans(&ts->v[i]);
	free(ts->v);
	ts->v = NULL;
	ts->cap = ts->cnt = 0;
}

static struct thread *slot(struct thread *v, uint32_t cap, int tid)
{
	uint32_t i = (uint32_t)tid * 2654435761u & (cap - 1);

	while (v[i].tid && v[i].tid != tid)
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static void grow(struct threads *ts)
{
	struct thread *old = ts->v;
	uint32_t old_cap = ts->cap;

	ts->cap *= 2;
	ts->v = xcalloc(ts->cap, sizeof(*ts->v));
	for (uint32_t i = 0; i < old_cap; i++)
		if (old[i].tid)
			*slot(ts->v, ts->cap, old[i].tid) = old[i];
	free(old);
}

struct thread *threads__get(struct threads *ts, int pid, int tid)
{
	struct thread *t;

	if ((ts->cnt + 1) * 4 > ts->cap * 3)
		grow(ts);
	t = slot(ts->v, ts->cap, tid);
	if (!t->tid) {
		t->tid = tid;
		t->pid = pid;
		ts->cnt++;
	}
	return t;
}

const struct thread *threads__find(const struct threads *ts, int tid)
{
	const struct thread *t;

	if (tid <= 0)
		return NULL;
	t = slot(ts->v, ts->cap, tid);
	return t->tid ? t : NULL;
}

void thread__forget_spans(struct thread *t)
{
	cover__free(&t->cover);
	cover__free(&t->queue_cover);
}

/* A stretch whose state is unknown (before the first switch, across a lost one, paused) is in
 * no state's time: the queue spans' time inside it is left out too, or a thread waiting
 * through it showed IN-QUEUE over 100%. Marked covered, later queue spans skip it; earlier
 * ones give back what they counted inside it. */
static void unknown_stretch(struct thread *t, uint64_t from, uint64_t to)
{
	uint64_t got;

	if (to <= from)
		return;
	got = cover__add(&t->queue_cover, (int64_t)from, (int64_t)to);
	t->queue_ns -= got < t->queue_ns ? got : t->queue_ns;
}

void thread__queue_span(struct thread *t, uint64_t s, uint64_t e)
{
	if (e > s) /* nested or overlapping queue spans count once */
		t->queue_ns += e - s - cover__add(&t->queue_cover, (int64_t)s, (int64_t)e);
}

void thread__set_state(struct thread *t, enum thread_state s, uint64_t ts)
{
	if (!t->first_seen)
		t->first_seen = ts;
	if (t->state != TS_UNKNOWN && ts > t->since)
		t->state_ns[t->state] += ts - t->since;
	else if (t->state == TS_UNKNOWN && !t->exited)
		unknown_stretch(t, t->since, ts);
	if (ts > t->last_seen)
		t->last_seen = ts;
	t->state = s;
	t->since = ts;
}

/* As the trace shows it (ftrace_prev_state): preempted is runnable whatever the state says;
 * an uninterruptible wait that does not count as load (TASK_NOLOAD) is idle, not blocked. */
static enum thread_state from_switch_state(uint32_t prev_state, bool preempt)
{
	if (preempt || !prev_state)
		return TS_RUNNABLE;
	if ((prev_state & 2) && !(prev_state & 0x400))
		return TS_BLOCKED;
	return TS_SLEEPING;
}

unsigned threads__on_switch(struct threads *ts, const struct switch_rec *r, bool prev_traced,
			    bool next_traced)
{
	unsigned lost = 0;
	struct thread *t;

	if (prev_traced) {
		t = threads__get(ts, r->prev_pid, r->prev_tid);
		if (t->switch_seen && t->state != TS_RUNNING) {
			t->state = TS_UNKNOWN; /* its switch in was not recorded */
			lost |= SWITCH_LOST_PREV;
		}
		t->switch_seen = true;
		thread__set_state(t, from_switch_state(r->prev_state, r->preempt), r->ts);
	}
	if (next_traced) {
		t = threads__get(ts, r->next_pid, r->next_tid);
		if (t->switch_seen && t->state == TS_RUNNING) {
			t->state = TS_UNKNOWN; /* its switch out was not recorded */
			lost |= SWITCH_LOST_NEXT;
		}
		t->switch_seen = true;
		thread__set_state(t, TS_RUNNING, r->ts);
	}
	return lost;
}

void threads__on_wakeup(struct threads *ts, const struct wakeup_rec *r)
{
	struct thread *t;

	if (r->kind == WAKEUP_WAKEUP)
		return; /* sched_waking already said it */
	t = threads__get(ts, r->pid, r->tid);
	if (t->state != TS_RUNNING)
		thread__set_state(t, TS_RUNNABLE, r->ts);
}

void threads__finish(struct threads *ts, uint64_t end)
{
	for (uint32_t i = 0; i < ts->cap; i++) {
		struct thread *t = &ts->v[i];

		if (t->tid && !t->exited && t->state != TS_UNKNOWN)
			thread__set_state(t, t->state, end);
		else if (t->tid && !t->exited)
			unknown_stretch(t, t->since, end);
	}
}

enum thread_state thread_state__from_proc(char c)
{
	switch (c) {
	case 'S':
	case 'I':
	case 'T':
	case 't':
		return TS_SLEEPING;
	case 'D':
		return TS_BLOCKED;
	default:
		return TS_UNKNOWN; /* 'R' does not say whether it is on a CPU */
	}
}
