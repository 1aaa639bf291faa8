// SPDX-License-Identifier: MIT
#include "consumer.h"
#include "target.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void consumer__init(struct consumer *c, struct trace_writer *w, const struct probe_table *probes,
		    const int *pids, size_t npids)
{
	memset(c, 0, sizeof(*c));
	c->writer = w;
	c->probes = probes;
	c->pids = pids;
	c->npids = npids;
	threads__init(&c->threads);
	summary__init(&c->summary, probes);
}

void consumer__free(struct consumer *c)
{
	threads__free(&c->threads);
	summary__free(&c->summary);
}

static bool traced(const struct consumer *c, uint32_t pid)
{
	for (size_t i = 0; i < c->npids; i++)
		if (c->pids[i] == (int)pid)
			return true;
	return false;
}

static void set_name(struct consumer *c, struct thread *t, const char *comm)
{
	if (t->named && !strncmp(t->name, comm, COMM_LEN))
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

static char proc_state(int pid, int tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

void consumer__add_thread(struct consumer *c, int pid, int tid, uint64_t ts)
{
	struct thread *t = thread_of(c, pid, tid);

	thread__set_state(t, thread_state__from_proc(proc_state(pid, tid)), ts);
}

static void on_span(struct consumer *c, const struct span_rec *r)
{
	const struct probe *p;
	struct thread *t;

	if (r->probe_id >= c->probes->cnt)
		return;
	p = &c->probes->v[r->probe_id];
	t = thread_of(c, r->pid, r->tid);
	t->spans++;
	if (p->cat == CAT_QUEUE)
		t->queue_ns += r->end_ns - r->start_ns;
	summary__span(&c->summary, r);
	trace_writer__span(c->writer, r, p->name, category__name(p->cat));
}

static void on_switch(struct consumer *c, const struct switch_rec *r)
{
	bool prev = r->prev_tid && traced(c, r->prev_pid);
	bool next = r->next_tid && traced(c, r->next_pid);

	if (prev)
		set_name(c, threads__get(&c->threads, r->prev_pid, r->prev_tid), r->prev_comm);
	if (next)
		set_name(c, threads__get(&c->threads, r->next_pid, r->next_tid), r->next_comm);
	threads__on_switch(&c->threads, r, prev, next);
	trace_writer__switch(c->writer, r);
}

static void on_wakeup(struct consumer *c, const struct wakeup_rec *r)
{
	if (!r->tid)
		return;
	set_name(c, threads__get(&c->threads, r->pid, r->tid), r->comm);
	threads__on_wakeup(&c->threads, r);
	trace_writer__wakeup(c->writer, r);
}

static void on_task(struct consumer *c, const struct task_rec *r)
{
	struct thread *t;

	if (!r->tid)
		return;
	t = threads__get(&c->threads, r->pid, r->tid);
	switch (r->event) {
	case TASK_NEW:
	case TASK_RENAME:
		set_name(c, t, r->comm);
		break;
	case TASK_EXEC:
		set_name(c, t, r->comm);
		if (r->tid == r->pid)
			trace_writer__process_name(c->writer, r->pid, r->comm);
		break;
	case TASK_EXIT:
		thread__set_state(t, t->state, r->ts);
		t->exited = true;
		break;
	}
}

int consumer__handle(void *ctx, void *data, size_t size)
{
	struct consumer *c = ctx;
	__u32 type;

	if (size < sizeof(type))
		return 0;
	memcpy(&type, data, sizeof(type));
	c->records++;
	switch (type) {
	case REC_SPAN:
		if (size >= sizeof(struct span_rec))
			on_span(c, data);
		break;
	case REC_SWITCH:
		if (size >= sizeof(struct switch_rec))
			on_switch(c, data);
		break;
	case REC_WAKEUP:
		if (size >= sizeof(struct wakeup_rec))
			on_wakeup(c, data);
		break;
	case REC_TASK:
		if (size >= sizeof(struct task_rec))
			on_task(c, data);
		break;
	}
	/* A failed write stops consuming; the loop sees the error and stops the recording. */
	return trace_writer__error(c->writer);
}
