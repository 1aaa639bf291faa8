// SPDX-License-Identifier: MIT
#include "record/consumer.h"
#include "analyze/stages.h"
#include "record/target.h"
#include "util/proc.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void consumer__init(struct consumer *c, struct trace_writer *w, const struct probe_table *probes,
		    bool flows, bool no_args)
{
	memset(c, 0, sizeof(*c));
	c->writer = w;
	c->probes = probes;
	c->flows = flows;
	c->no_args = no_args;
	threads__init(&c->threads);
	summary__init(&c->summary);
}

void consumer__free(struct consumer *c)
{
	free(c->pids);
	threads__free(&c->threads);
	summary__free(&c->summary);
}

static int int_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static bool traced(const struct consumer *c, uint32_t pid)
{
	int key = pid;

	return c->npids && bsearch(&key, c->pids, c->npids, sizeof(int), int_cmp);
}

void consumer__add_pid(struct consumer *c, int pid, const char *comm)
{
	if (traced(c, pid))
		return;
	c->pids = xrealloc(c->pids, c->npids + 1, sizeof(int));
	c->pids[c->npids++] = pid;
	qsort(c->pids, c->npids, sizeof(int), int_cmp);
	trace_writer__process_name(c->writer, pid, comm);
}

static void set_name(struct consumer *c, struct thread *t, const char *comm)
{
	if (t->py_named || (t->named && !strncmp(t->name, comm, COMM_LEN)))
		return;
	snprintf(t->name, sizeof(t->name), "%s", comm);
	trace_writer__thread_name(c->writer, t->pid, t->tid, t->name);
	t->named = true;
}

/* A thread first seen through a span: its name comes from /proc. */
static struct thread *thread_of(struct consumer *c, uint32_t pid, uint32_t tid)
{
	struct thread *t = threads__get(&c->threads, pid, tid);
	char comm[COMM_LEN];

	if (!t->named) {
		target__thread_name(pid, tid, comm);
		if (!comm[0])
			snprintf(comm, sizeof(comm), "tid %u", tid);
		set_name(c, t, comm);
	}
	return t;
}

void consumer__add_thread(struct consumer *c, int pid, int tid, uint64_t ts)
{
	struct thread *t = thread_of(c, pid, tid);
	struct proc_stat ps;

	thread__set_state(t, thread_state__from_proc(proc_stat__read(pid, tid, &ps) ? 0 : ps.state),
			  ts);
}

/* The span's "args" members: the spec's captured arguments and return value, in its order. */
static void format_args(char *buf, size_t len, const struct probe *p,
			const struct span_capture *cap)
{
	const struct probe_spec *spec = p->spec;
	size_t n = 0;
	int slot = 0;

	buf[0] = 0;
	for (int i = 0; i < spec->nargs && n < len; i++) {
		const struct arg_spec *a = &spec->args[i];
		uint64_t v = a->idx == ARG_RET ? cap->ret : cap->args[slot++ % MAX_ARGS];

		if (a->hex)
			n += snprintf(buf + n, len - n, "%s\"%s\":\"0x%llx\"", n ? "," : "", a->key,
				      (unsigned long long)v);
		else
			n += snprintf(buf + n, len - n, "%s\"%s\":%lld", n ? "," : "", a->key,
				      (long long)v);
	}
}

/* A push or pop completed: the queue's depth changes at its end (an instant: its start). */
static void queue_event(struct consumer *c, const struct span_rec *r, const struct probe *p,
			const struct span_capture *cap)
{
	uint64_t id = cap->args[p->queue_slot % MAX_ARGS];
	struct queue_depth *q = NULL;
	char name[48];

	for (size_t i = 0; i < c->nqueues && !q; i++)
		if (c->queues[i].id == id && c->queues[i].pid == (int)r->pid)
			q = &c->queues[i];
	if (!q) {
		if (c->nqueues == MAX_QUEUES)
			return;
		q = &c->queues[c->nqueues++];
		q->pid = r->pid;
		q->id = id;
		q->depth = 0;
	}
	/* Pushes minus pops completed since recording started. A pop can return before the push
	 * that fed it does (the push wakes it, then returns): that moment shows as 0, not -1. */
	q->depth += p->spec->queue_role == QUEUE_PUSH ? 1 : -1;
	snprintf(name, sizeof(name), "queue 0x%llx", (unsigned long long)id);
	trace_writer__counter(c->writer, r->pid, r->flags & SPAN_INSTANT ? r->start_ns : r->end_ns,
			      name, "depth", q->depth < 0 ? 0 : q->depth);
}

/* Draws the arrow of a pending wake-up to this span if the span is where the woken thread
 * went: the span around the wake-up, or the first one after it. */
static void bind_flow(struct consumer *c, struct thread *t, const struct span_rec *r)
{
	uint64_t to;

	if (!t->flow_ns || (r->flags & SPAN_INSTANT) || r->end_ns <= t->flow_ns)
		return;
	to = r->start_ns > t->flow_ns ? r->start_ns : t->flow_ns;
	trace_writer__flow(c->writer, ++c->next_flow_id, t->flow_pid, t->flow_tid, t->flow_ns,
			   r->pid, r->tid, to);
	t->flow_ns = 0;
}

static void on_span(struct consumer *c, const struct span_rec *r, const struct span_capture *cap)
{
	bool incomplete = r->flags & SPAN_INCOMPLETE;
	uint64_t dur = r->end_ns - r->start_ns;
	enum category cat;
	const struct probe *p;
	const char *name;
	struct thread *t;
	char args[1536], py[1024], dyn_name[SPAN_NAME_LEN];

	if (r->probe_id >= c->probes->cnt)
		return;
	p = &c->probes->v[r->probe_id];
	name = p->name;
	cat = p->cat;
	args[0] = 0;
	if (cap && !c->no_args) {
		if ((p->cfg.flags & PROBE_NAME_FROM) && cap->name[0]) {
			/* the ring buffer is read-only: terminate a copy */
			snprintf(dyn_name, sizeof(dyn_name), "%.*s", SPAN_NAME_LEN - 1, cap->name);
			name = dyn_name;
			if (p->spec)
				cat = probe_spec__category_of(p->spec, name);
		}
		format_args(args, sizeof(args), p, cap);
		if (p->queue_slot >= 0 && !incomplete)
			queue_event(c, r, p, cap);
	}
	/* the Python function and line that called it (and its callbacks end with it) */
	if (c->py && !incomplete &&
	    py_session__native(c->py, r, p->cfg.flags & PROBE_PY_WAIT, py, sizeof(py))) {
		size_t n = strlen(args);

		snprintf(args + n, sizeof(args) - n, "%s%s", n ? "," : "", py);
	}
	t = thread_of(c, r->pid, r->tid);
	t->spans++;
	if (cat == CAT_QUEUE)
		thread__queue_span(t, r->start_ns, r->end_ns);
	if (c->flows)
		bind_flow(c, t, r);
	summary__span(&c->summary, name, cat, r->start_ns, r->end_ns,
		      dur - cover__add(&t->cover, r->start_ns, r->end_ns), incomplete);
	trace_writer__span(c->writer, r, name, category__name(cat), args);
}

/* A switch of this thread was not recorded: said on its track, where the gap is. */
static void state_unknown(struct consumer *c, int pid, int tid, uint64_t ts)
{
	c->sched_gaps++;
	trace_writer__instant(c->writer, pid, tid, ts, "scheduler state unknown",
			      "\"why\":\"a context switch before this one was not recorded: the "
			      "thread's state since its last switch is unknown\"");
}

static void on_switch(struct consumer *c, const struct switch_rec *r)
{
	bool prev = r->prev_tid && traced(c, r->prev_pid);
	bool next = r->next_tid && traced(c, r->next_pid);
	unsigned lost;

	if (prev)
		set_name(c, threads__get(&c->threads, r->prev_pid, r->prev_tid), r->prev_comm);
	if (next)
		set_name(c, threads__get(&c->threads, r->next_pid, r->next_tid), r->next_comm);
	lost = threads__on_switch(&c->threads, r, prev, next);
	if (lost & SWITCH_LOST_PREV)
		state_unknown(c, r->prev_pid, r->prev_tid, r->ts);
	if (lost & SWITCH_LOST_NEXT)
		state_unknown(c, r->next_pid, r->next_tid, r->ts);
	if (next && c->py)
		py_session__switch_in(c->py, r->next_pid, r->next_tid, r->ts);
	trace_writer__switch(c->writer, r);
}

/* target_cpu: where its wake-up put it (the sched_wakeup line) */
static void on_wakeup(struct consumer *c, const struct wakeup_rec *r, uint32_t target_cpu)
{
	struct thread *t;

	if (!r->tid)
		return;
	t = threads__get(&c->threads, r->pid, r->tid);
	set_name(c, t, r->comm);
	threads__on_wakeup(&c->threads, r);
	if (r->kind == WAKEUP_WAKING && c->py)
		py_session__woken(c->py, r->pid, r->tid, r->ts);
	/* a traced thread inside a span woke another: an arrow from that span */
	/* (an interrupt's wake-up has depth 0: the BPF side never looks at the task under it) */
	if (c->flows && r->kind == WAKEUP_WAKING && r->waker_depth && r->waker_tid != r->tid &&
	    traced(c, r->waker_pid)) {
		t->flow_ns = r->ts;
		t->flow_pid = r->waker_pid;
		t->flow_tid = r->waker_tid;
	}
	trace_writer__wakeup(c->writer, r);
	/* sched_wakeup is not traced (it says nothing sched_waking did not): its line, which
	 * catapult reads, is written from the waking */
	if (r->kind == WAKEUP_WAKING) {
		struct wakeup_rec up = *r;

		up.kind = WAKEUP_WAKEUP;
		up.target_cpu = target_cpu;
		trace_writer__wakeup(c->writer, &up);
	}
}

/* A switch in that brings the waking of the thread it runs: the waking first (its time is
 * earlier), as if it had come alone, then the switch. */
static void on_switch_wake(struct consumer *c, const struct switch_wake_rec *r)
{
	const struct wake_info *w = &r->wake;
	struct wakeup_rec wr = {
		.type = REC_WAKEUP,
		.kind = WAKEUP_WAKING,
		.ts = w->ts,
		.pid = r->sw.next_pid,
		.tid = r->sw.next_tid,
		.prio = r->sw.next_prio,
		.target_cpu = w->target_cpu,
		.cpu = w->cpu,
		.waker_pid = w->waker_pid,
		.waker_tid = w->waker_tid,
		.waker_depth = w->waker_depth,
		.irq = w->irq,
	};

	memcpy(wr.comm, r->sw.next_comm, COMM_LEN);
	memcpy(wr.waker_comm, w->waker_comm, COMM_LEN);
	on_wakeup(c, &wr, r->sw.cpu);
	on_switch(c, &r->sw);
}

static void on_task(struct consumer *c, const struct task_rec *r)
{
	struct thread *t;

	if (!r->tid)
		return;
	t = threads__get(&c->threads, r->pid, r->tid);
	/* a process's events come from its main thread, but -a sees a process first on
	 * whichever thread calls a probed function */
	if (c->on_process && (r->event == TASK_SEEN ||
			      (r->pid == r->tid &&
			       ((r->event == TASK_NEW && r->parent_pid != r->pid) ||
				r->event == TASK_EXEC || r->event == TASK_AT_ENTRY))))
		c->on_process(c->ctx, r);
	switch (r->event) {
	case TASK_NEW:
	case TASK_RENAME:
		set_name(c, t, r->comm);
		break;
	case TASK_EXEC:
		if (c->py)
			py_session__exec(c->py, r->pid, r->ts);
		t->py_named = false;
		set_name(c, t, r->comm);
		if (r->tid == r->pid)
			trace_writer__process_name(c->writer, r->pid, r->comm);
		break;
	case TASK_SEEN:
		consumer__add_pid(c, r->pid, r->comm);
		break;
	case TASK_EXIT:
		if (c->py)
			py_session__thread_exit(c->py, r->pid, r->tid, r->ts);
		thread__set_state(t, t->state, r->ts);
		thread__forget_spans(t);
		t->exited = true;
		break;
	}
}

static void py_span(void *ctx, const char *name, const struct span_rec *r)
{
	struct consumer *c = ctx;
	struct thread *t = thread_of(c, r->pid, r->tid);
	uint64_t dur = r->end_ns - r->start_ns;

	/* Queue.get, Condition.wait, ...: waits, counted once with the thread's queue spans */
	if (stage__python_wait(name))
		thread__queue_span(t, r->start_ns, r->end_ns);
	if (stage__python_role(name))
		t->role = stage__python_role(name);
	t->spans++; /* as tracer report counts them: every span in the file */
	c->summary.py_spans++;
	summary__span(&c->summary, name, CAT_PYTHON, r->start_ns, r->end_ns,
		      dur - cover__add(&t->cover, r->start_ns, r->end_ns),
		      r->flags & SPAN_INCOMPLETE);
}

/* threading's name for a thread it did not start ("Dummy-3": a GStreamer streaming thread that
 * called into Python), which says less than the kernel's ("queue0:src") */
static bool py_dummy_name(const char *name)
{
	if (strncmp(name, "Dummy-", 6) || !name[6])
		return false;
	for (name += 6; *name; name++)
		if (*name < '0' || *name > '9')
			return false;
	return true;
}

/* Python's name for a thread wins over the kernel's (threads of a pool all share a comm). */
static void py_thread_name(void *ctx, int pid, int tid, const char *name)
{
	struct consumer *c = ctx;
	struct thread *t = threads__get(&c->threads, pid, tid);

	if (py_dummy_name(name))
		return;
	if (t->py_named && !strncmp(t->name, name, sizeof(t->name) - 1))
		return;
	snprintf(t->name, sizeof(t->name), "%s", name);
	trace_writer__thread_name(c->writer, pid, tid, name);
	t->named = t->py_named = true;
}

/* The python-gil pack's spans time each wait exactly: the scheduler's are left out then. */
static bool py_gil(void *ctx, const struct span_rec *r)
{
	struct consumer *c = ctx;
	struct thread *t;

	for (size_t i = 0; i < c->probes->cnt; i++)
		if (c->probes->v[i].cat == CAT_GIL)
			return false;
	t = thread_of(c, r->pid, r->tid);
	t->spans++;
	c->summary.gil_spans++;
	summary__span(&c->summary, PY_GIL_SPAN, CAT_GIL, r->start_ns, r->end_ns,
		      r->end_ns - r->start_ns - cover__add(&t->cover, r->start_ns, r->end_ns),
		      r->flags & SPAN_INCOMPLETE);
	return true;
}

const struct py_session_ops consumer__py_ops = { .span = py_span, .thread_name = py_thread_name,
						 .gil = py_gil };

void consumer__pause(struct consumer *c, bool paused, uint64_t ts)
{
	for (uint32_t i = 0; i < c->threads.cap; i++) {
		struct thread *t = &c->threads.v[i];

		if (t->tid && !t->exited && paused)
			thread__set_state(t, TS_UNKNOWN, ts);
	}
	for (size_t i = 0; i < c->npids; i++)
		trace_writer__instant(c->writer, c->pids[i], c->pids[i], ts,
				      paused ? "recording paused" : "recording resumed", NULL);
}

int consumer__handle(void *ctx, void *data, size_t size)
{
	struct consumer *c = ctx;
	__u32 type;

	if (size < sizeof(type))
		return 0;
	if (c->max_bytes && trace_writer__bytes(c->writer) >= c->max_bytes)
		return -EFBIG;
	memcpy(&type, data, sizeof(type));
	c->records++;
	switch (type) {
	case REC_SPAN: {
		const struct span_capture_rec *sc = data;

		if (size < sizeof(struct span_rec))
			break;
		if ((sc->span.flags & SPAN_CAPTURE) && size >= sizeof(*sc))
			on_span(c, &sc->span, &sc->cap);
		else
			on_span(c, &sc->span, NULL);
		break;
	}
	case REC_SWITCH:
		if (size >= sizeof(struct switch_rec))
			on_switch(c, data);
		break;
	case REC_WAKEUP:
		if (size >= sizeof(struct wakeup_rec))
			on_wakeup(c, data, ((const struct wakeup_rec *)data)->target_cpu);
		break;
	case REC_SWITCH_WAKE:
		if (size >= sizeof(struct switch_wake_rec))
			on_switch_wake(c, data);
		break;
	case REC_TASK:
		if (size >= sizeof(struct task_rec))
			on_task(c, data);
		break;
	case REC_PY_STACK:
		if (c->py)
			py_session__on_read(c->py, data, size);
		break;
	}
	/* A failed write stops consuming; the loop sees the error and stops the recording. */
	if (trace_writer__error(c->writer))
		return trace_writer__error(c->writer);
	if (++c->budget >= CONSUME_BUDGET) {
		c->budget = 0;
		return -EAGAIN;
	}
	return 0;
}
