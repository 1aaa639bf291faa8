// SPDX-License-Identifier: MIT
/* report, pass 1: the statistics per group, the threads, the file's disorder, the K longest spans. */
#include "analyze/report_ctx.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- groups ------------------------------------------------------------------------------- */

static struct report_group *group_new(const char *key, const char *cat)
{
	struct report_group *g = xcalloc(1, sizeof(*g));

	g->key = xstrdup(key);
	snprintf(g->cat, sizeof(g->cat), "%s", cat);
	sketch__init(&g->sketch);
	return g;
}

struct report_group *group_get(struct ctx *c, const char *key, const char *cat)
{
	struct report_group *g;

	HASH_FIND_STR(c->groups, key, g);
	if (!g) {
		g = group_new(key, cat);
		HASH_ADD_KEYPTR(hh, c->groups, g->key, strlen(g->key), g);
	}
	return g;
}

/* A span's group by name or category: a new key past the bound goes to REPORT_OTHER, so that
 * a file of millions of distinct names takes bounded memory. */
static struct report_group *span_group(struct ctx *c, const char *key, const char *cat)
{
	struct report_group *g;

	HASH_FIND_STR(c->groups, key, g);
	if (g)
		return g;
	if (HASH_COUNT(c->groups) < c->r->max_groups)
		return group_get(c, key, cat);
	c->r->folded++;
	return group_get(c, REPORT_OTHER, "");
}

static void group_add(struct report_group *g, uint64_t dur, uint64_t self)
{
	g->count++;
	g->total_ns += dur;
	g->sum_ns += dur;
	g->self_ns += self;
	sketch__add(&g->sketch, dur);
}

void group_free(struct report_group *g)
{
	if (g) {
		sketch__free(&g->sketch);
		free(g->key);
		free(g);
	}
}

/* ---- threads ------------------------------------------------------------------------------ */

struct rthread *thread_find(struct ctx *c, int64_t tid)
{
	struct rthread *t;

	HASH_FIND(hash, c->threads, &tid, sizeof(tid), t);
	return t;
}

struct rthread *thread_get(struct ctx *c, int64_t tid)
{
	struct rthread *t = thread_find(c, tid);

	if (!t) {
		t = xcalloc(1, sizeof(*t));
		t->tid = tid;
		t->pid = -1;
		HASH_ADD(hash, c->threads, tid, sizeof(t->tid), t);
	}
	return t;
}

void thread_free(struct rthread *t)
{
	for (int k = 0; k < NCLASS; k++) {
		free(t->b[k]);
		free(t->pend[k].v);
	}
	free(t->bq);
	free(t->h);
	free(t->open);
	cover__free(&t->cover);
	group_free(t->grp);
	free(t);
}

int class_of(const struct trace_event *ev)
{
	enum category k;

	if (category__parse(ev->cat, &k))
		return CAT_OTHER;
	return k == CAT_PYTHON && stage__python_wait(ev->name) ? CAT_QUEUE : (int)k;
}

/* ---- pass 1 ------------------------------------------------------------------------------ */

static void heap_push(struct ctx *c, const struct big_span *b)
{
	struct big_span *h = c->heap;
	size_t i;

	if (c->nheap == c->keep) {
		/* full: replace the shortest if this one is longer */
		if (b->e - b->s <= h[0].e - h[0].s)
			return;
		i = 0;
		h[0] = *b;
		for (;;) { /* sift down */
			size_t l = 2 * i + 1, m = i;

			if (l < c->nheap && h[l].e - h[l].s < h[m].e - h[m].s)
				m = l;
			if (l + 1 < c->nheap && h[l + 1].e - h[l + 1].s < h[m].e - h[m].s)
				m = l + 1;
			if (m == i)
				return;
			struct big_span tmp = h[i];

			h[i] = h[m];
			h[m] = tmp;
			i = m;
		}
	}
	i = c->nheap++;
	h[i] = *b;
	while (i && h[(i - 1) / 2].e - h[(i - 1) / 2].s > h[i].e - h[i].s) {
		struct big_span tmp = h[i];

		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static bool is_incomplete(const struct trace_event *ev)
{
	const char *v;
	size_t n;

	if (!ev->args_at.len)
		return false;
	v = json_object_get(ev->text + ev->args_at.off, ev->args_at.len, "incomplete", &n);
	return v && n == 4 && !memcmp(v, "true", 4);
}

static void note_time(struct ctx *c, int64_t t)
{
	if (t < c->min_ts)
		c->min_ts = t;
	if (t > c->max_end)
		c->max_end = t;
}

static void note_thread(struct rthread *t, int64_t s, int64_t e)
{
	if (!t->any_ev || s < t->first_ev)
		t->first_ev = s;
	if (!t->any_ev || e > t->last_ev)
		t->last_ev = e;
	t->any_ev = true;
}

/* Spans kept open per thread at most (a chain of spans each inside the one before). */
#define OPEN_MAX 4096

/* The span read before [s, e) that holds it, the innermost: then the file lists parents before
 * their children (start order, as the PyTorch profiler and hand-made files do), and [s, e) is
 * a child of it. Spans that cannot hold [s, e) or any later span of the file's order leave.
 * Two spans of one extent (a Python frame and its callee, as tracer reads them; µs files):
 * the first is inside the second, as tracer writes them, unless the thread's spans came
 * parents first. */
static struct open_span *open_parent(struct rthread *t, int64_t s, int64_t e)
{
	while (t->nopen) {
		struct open_span *o = &t->open[t->nopen - 1];

		if (o->s <= s && e <= o->e && (o->s != s || o->e != e || t->parents_first))
			return o;
		t->nopen--;
	}
	return NULL;
}

static void open_push(struct rthread *t, int64_t s, int64_t e, uint64_t self,
		      struct report_group *g)
{
	if (t->nopen == OPEN_MAX)
		return;
	if (t->nopen == t->capopen) {
		t->capopen = t->capopen ? 2 * t->capopen : 16;
		t->open = xrealloc(t->open, t->capopen, sizeof(*t->open));
	}
	t->open[t->nopen++] = (struct open_span){ s, e, self, g };
}

static void p1_span(struct ctx *c, const struct trace_event *ev)
{
	struct report *r = c->r;
	int64_t s = ev->ts_ns, e = ev->ts_ns + ev->dur_ns;
	uint64_t dur = ev->dur_ns, self = dur;
	struct rthread *t = NULL;
	struct report_group *g = NULL;
	struct open_span *parent;
	int cls = class_of(ev);

	r->spans++;
	r->incomplete += is_incomplete(ev);
	note_time(c, s);
	note_time(c, e);
	if (c->any_span) {
		if (c->max_e - e > c->lat_e)
			c->lat_e = c->max_e - e;
		if (c->max_s - s > c->lat_s)
			c->lat_s = c->max_s - s;
	}
	if (!c->any_span || e > c->max_e)
		c->max_e = e;
	if (!c->any_span || s > c->max_s)
		c->max_s = s;
	c->any_span = true;
	if (ev->has_tid) {
		t = thread_get(c, ev->tid);
		t->known = true;
		if (!t->spans++ || s < t->first_s)
			t->first_s = s;
		if (t->spans == 1 || e > t->last_e)
			t->last_e = e;
		if (ev->has_pid)
			t->pid = ev->pid;
		note_thread(t, s, e);
		t->has_queue |= cls == CAT_QUEUE;
		if (!strcmp(ev->cat, "python") && stage__python_role(ev->name))
			t->role = stage__python_role(ev->name);
		heap_push(c, &(struct big_span){ ev->tid, s, e, (uint8_t)cls });
		/* the spans it covers came before it (completion order): its children */
		self = dur - cover__add(&t->cover, s, e);
		parent = open_parent(t, s, e);
		t->parents_first |= parent && (parent->s != s || parent->e != e);
		if (parent) { /* it came after the span it is in (start order): its time is not
				* its parent's own; its own children come after it */
			uint64_t less = dur < parent->left ? dur : parent->left;

			self = dur;
			parent->left -= less;
			if (parent->g)
				parent->g->self_ns -= less;
		}
	}
	if (dur < c->o->min_dur_ns) {
		if (t)
			open_push(t, s, e, self, NULL);
		return;
	}
	switch (c->o->by) {
	case BY_NAME:
		g = span_group(c, ev->name, ev->cat);
		break;
	case BY_CATEGORY:
		g = span_group(c, ev->cat[0] ? ev->cat : "(none)", "");
		break;
	case BY_THREAD:
	case BY_STAGE:
		if (c->o->compare && (cls == CAT_QUEUE || cls == CAT_GIL)) {
			if (t) /* in no group, but still a parent for what follows */
				open_push(t, s, e, self, NULL);
			return;
		}
		if (!t)
			t = thread_get(c, -1); /* spans without a tid */
		if (!t->grp)
			t->grp = group_new("", "");
		g = t->grp;
		break;
	}
	group_add(g, dur, self);
	if (ev->has_tid)
		open_push(t, s, e, self, g);
}

static void p1_metadata(struct ctx *c, const char *text, size_t len)
{
	cJSON *m = cJSON_ParseWithLength(text, len), *v;

	if (!m)
		return;
	v = cJSON_GetObjectItem(m, "t0_monotonic_ns");
	if (cJSON_IsNumber(v) || cJSON_IsString(v))
		c->have_t0 = true;
	v = cJSON_GetObjectItem(m, "duration_ns");
	if (cJSON_IsNumber(v) && v->valuedouble > 0)
		c->meta_dur = (int64_t)v->valuedouble;
	v = cJSON_GetObjectItem(m, "cpus");
	if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 65536)
		c->meta_cpus = (int)v->valuedouble;
	merged_windows(c, m);
	cJSON_Delete(m);
}

static void p1_event(struct ctx *c, const struct trace_event *ev)
{
	if (ev->ph == 'X' && ev->has_ts && ev->has_dur && ev->dur_ns >= 0) {
		p1_span(c, ev);
	} else if (ev->ph == 'M' && ev->has_tid && ev->arg_name &&
		   !strcmp(ev->name, "thread_name")) {
		struct rthread *t = thread_get(c, ev->tid);

		t->known = true;
		if (ev->has_pid)
			t->pid = ev->pid;
		snprintf(t->name, sizeof(t->name), "%s", ev->arg_name);
	} else if (ev->ph == 'B' || ev->ph == 'E') {
		c->r->ignored_be++;
	} else if (ev->has_ts && ev->ph != 'M') {
		note_time(c, ev->ts_ns);
		if (ev->ph == 'i' && !strcmp(ev->name, "recording started") && ev->args_at.len)
			p1_metadata(c, ev->text + ev->args_at.off, ev->args_at.len);
	}
}

static void first_sched(struct ctx *c, int64_t tid, int64_t ts, enum rstate before, bool born)
{
	struct rthread *t;

	if (tid <= 0)
		return; /* the idle task */
	t = thread_get(c, tid);
	note_thread(t, ts, ts);
	if (t->seen_sched)
		return;
	t->seen_sched = true;
	t->before = before;
	t->born = born;
}

static void vote_waker(struct rthread *t, int64_t waker)
{
	if (!t->waker_votes)
		t->waker = waker;
	if (t->waker == waker)
		t->waker_votes++;
	else
		t->waker_votes--;
}

static void p1_sched(struct ctx *c, const struct ftrace_line *l)
{
	struct report *r = c->r;

	if (l->cpu + 1 > r->cpus)
		r->cpus = l->cpu + 1;
	note_time(c, l->ts_ns);
	if (c->any_sched && c->max_ts - l->ts_ns > c->lat_sched)
		c->lat_sched = c->max_ts - l->ts_ns;
	if (!c->any_sched || l->ts_ns > c->max_ts)
		c->max_ts = l->ts_ns;
	c->any_sched = true;
	c->sched_lines++;
	switch (l->kind) {
	case FT_SWITCH:
		first_sched(c, l->prev_tid, l->ts_ns, RS_RUNNING, false);
		first_sched(c, l->next_tid, l->ts_ns, RS_RUNNABLE, false);
		break;
	case FT_WAKING:
	case FT_WAKEUP:
		first_sched(c, l->woken_tid, l->ts_ns, RS_SLEEPING, false);
		if (l->kind == FT_WAKING && !l->in_irq && l->tid > 0 && l->tid != l->woken_tid &&
		    l->woken_tid > 0)
			vote_waker(thread_get(c, l->woken_tid), l->tid);
		break;
	case FT_WAKEUP_NEW:
		first_sched(c, l->woken_tid, l->ts_ns, RS_DEAD, true);
		break;
	case FT_OTHER:
		break;
	}
}


int pass1(struct ctx *c, char *err, size_t errlen)
{
	struct trace_reader *tr;
	struct trace_item it;
	struct ftrace_line fl;
	int ret;

	ret = trace_reader__open(&tr, c->o->path, TR_ALL, err, errlen);
	if (ret)
		return ret;
	while ((ret = trace_reader__next(tr, &it)) > 0) {
		if (it.type == TI_EVENT)
			p1_event(c, &it.ev);
		else if (it.type == TI_SCHED && !ftrace_line__parse(it.text, it.len, &fl))
			p1_sched(c, &fl);
		else if (it.type == TI_METADATA)
			p1_metadata(c, it.text, it.len);
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s", trace_reader__error(tr));
	} else if (trace_reader__no_events(tr) && !trace_reader__truncated(tr)) {
		snprintf(err, errlen, "%s: not a Chrome trace: no \"traceEvents\" array",
			 c->o->path);
		ret = -EINVAL;
	}
	if (ret >= 0)
		trace_reader__warn_skipped(tr, c->o->path);
	c->r->truncated = trace_reader__truncated(tr);
	trace_reader__close(tr);
	return ret;
}
