// SPDX-License-Identifier: MIT
#include "analyze/report.h"
#include "analyze/report_html.h"
#include "cmd/commands.h"
#include "trace/json_text.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* K: the longest spans, known before the sweep. TRACER_REPORT_KEEP overrides it (tests use a
 * small K to run every span through the bounded windows). */
#define TOP_SPANS 16384
#define NCLASS (CAT_MAX + 1)
#define CL_ANY CAT_MAX /* spans of any category */
#define TABLE_TOP 20

static const double quantiles[] = { 0.5, 0.9, 0.95, 0.99, 0.999 };
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))

enum rstate { RS_UNKNOWN, RS_RUNNING, RS_RUNNABLE, RS_SLEEPING, RS_BLOCKED, RS_DEAD };

struct piece {
	int64_t s, e;
	uint64_t qs, qd; /* queue pieces: sleeping and blocked time inside */
};

struct pieces { /* a deque: v[head .. head + n) */
	struct piece *v;
	size_t head, n, cap;
};

struct hist { /* a scheduler state change and the sleeping/blocked totals then */
	int64_t t;
	uint64_t cs, cd;
	uint8_t state;
};

struct big {
	int64_t s, e;
};

struct rthread {
	int64_t tid, pid;
	char name[64];
	bool known; /* a thread of the traced processes: named, or with spans */
	uint64_t spans;
	struct report_group *grp; /* --by thread / stage */
	/* pass 1 */
	bool seen_sched, has_queue;
	int64_t first_s, last_e; /* its spans' extent: its observed time without states */
	enum rstate before; /* what its first scheduler event says it did until then */
	bool born;	    /* its first event is sched_wakeup_new */
	/* the longest spans, merged into pieces per class */
	struct big *b[NCLASS];
	size_t nb[NCLASS];
	uint64_t *bq; /* per big queue piece: sleeping/blocked totals at its start and end */
	size_t nextb; /* the next big queue boundary to pass (2 per piece) */
	/* pass 2 */
	bool started;
	enum rstate state;
	int64_t since;
	uint64_t st_ns[RS_DEAD];
	uint64_t cs, cd; /* sleeping, blocked so far (until since) */
	struct hist *h;	 /* state changes since the frontier (queue threads only) */
	size_t hh, hn, hcap;
	bool trimmed;
	struct pieces pend[NCLASS];
	uint64_t done_len[NCLASS], done_qs, done_qd;
};

struct big_span {
	int64_t tid, s, e;
	uint8_t cls;
};

struct ctx {
	const struct report_opts *o;
	struct report *r;
	/* groups by name / category: open addressing on the key */
	struct report_group **gslots;
	size_t gcap, gcnt;
	/* threads: open addressing on the tid */
	struct rthread **tslots;
	size_t tcap, tcnt;
	/* the K longest spans: a min-heap on duration */
	struct big_span *heap;
	size_t nheap, keep;
	int64_t small_max; /* L: every span not in the heap is at most this long */
	/* disorder of the file: how far a span's end, a span's start, a scheduler line's time
	 * fall behind the largest seen before */
	int64_t max_e, max_s, max_ts, lat_e, lat_s, lat_sched;
	bool any_span, any_sched, have_t0;
	int64_t min_ts, max_end, meta_dur;
	/* pass 2 */
	int64_t glob_e, glob_s;
	uint64_t sched_lines;
};

/* ---- groups ------------------------------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct report_group *group_new(const char *key, const char *cat)
{
	struct report_group *g = xcalloc(1, sizeof(*g));

	g->key = xstrdup(key);
	snprintf(g->cat, sizeof(g->cat), "%s", cat);
	sketch__init(&g->sketch);
	return g;
}

static struct report_group *group_get(struct ctx *c, const char *key, const char *cat)
{
	size_t i;

	if ((c->gcnt + 1) * 2 > c->gcap) {
		struct report_group **old = c->gslots;
		size_t oldcap = c->gcap;

		c->gcap = c->gcap ? c->gcap * 2 : 64;
		c->gslots = xcalloc(c->gcap, sizeof(*c->gslots));
		for (size_t k = 0; k < oldcap; k++) {
			if (!old[k])
				continue;
			for (i = hash_str(old[k]->key) & (c->gcap - 1); c->gslots[i];
			     i = (i + 1) & (c->gcap - 1))
				;
			c->gslots[i] = old[k];
		}
		free(old);
	}
	for (i = hash_str(key) & (c->gcap - 1); c->gslots[i]; i = (i + 1) & (c->gcap - 1))
		if (!strcmp(c->gslots[i]->key, key))
			return c->gslots[i];
	c->gcnt++;
	return c->gslots[i] = group_new(key, cat);
}

static void group_add(struct report_group *g, uint64_t dur)
{
	g->count++;
	g->total_ns += dur;
	sketch__add(&g->sketch, dur);
}

static void group_free(struct report_group *g)
{
	if (g) {
		free(g->key);
		free(g);
	}
}

/* ---- threads ------------------------------------------------------------------------------ */

static uint64_t hash_tid(int64_t tid)
{
	return (uint64_t)tid * 0x9e3779b97f4a7c15ull >> 17;
}

static struct rthread *thread_find(struct ctx *c, int64_t tid)
{
	if (!c->tcap)
		return NULL;
	for (size_t i = hash_tid(tid) & (c->tcap - 1); c->tslots[i]; i = (i + 1) & (c->tcap - 1))
		if (c->tslots[i]->tid == tid)
			return c->tslots[i];
	return NULL;
}

static struct rthread *thread_get(struct ctx *c, int64_t tid)
{
	struct rthread *t = thread_find(c, tid);
	size_t i;

	if (t)
		return t;
	if ((c->tcnt + 1) * 2 > c->tcap) {
		struct rthread **old = c->tslots;
		size_t oldcap = c->tcap;

		c->tcap = c->tcap ? c->tcap * 2 : 256;
		c->tslots = xcalloc(c->tcap, sizeof(*c->tslots));
		for (size_t k = 0; k < oldcap; k++) {
			if (!old[k])
				continue;
			for (i = hash_tid(old[k]->tid) & (c->tcap - 1); c->tslots[i];
			     i = (i + 1) & (c->tcap - 1))
				;
			c->tslots[i] = old[k];
		}
		free(old);
	}
	t = xcalloc(1, sizeof(*t));
	t->tid = tid;
	t->pid = -1;
	for (i = hash_tid(tid) & (c->tcap - 1); c->tslots[i]; i = (i + 1) & (c->tcap - 1))
		;
	c->tslots[i] = t;
	c->tcnt++;
	return t;
}

static void thread_free(struct rthread *t)
{
	for (int k = 0; k < NCLASS; k++) {
		free(t->b[k]);
		free(t->pend[k].v);
	}
	free(t->bq);
	free(t->h);
	group_free(t->grp);
	free(t);
}

static int class_of(const char *cat)
{
	enum category k;

	return category__parse(cat, &k) ? CAT_OTHER : (int)k;
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

static void p1_span(struct ctx *c, const struct trace_event *ev)
{
	struct report *r = c->r;
	int64_t s = ev->ts_ns, e = ev->ts_ns + ev->dur_ns;
	uint64_t dur = ev->dur_ns;
	struct rthread *t = NULL;
	struct report_group *g = NULL;
	int cls = class_of(ev->cat);

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
		t->has_queue |= cls == CAT_QUEUE;
		heap_push(c, &(struct big_span){ ev->tid, s, e, (uint8_t)cls });
	}
	if (dur < c->o->min_dur_ns)
		return;
	switch (c->o->by) {
	case BY_NAME:
		g = group_get(c, ev->name, ev->cat);
		break;
	case BY_CATEGORY:
		g = group_get(c, ev->cat[0] ? ev->cat : "(none)", "");
		break;
	case BY_THREAD:
	case BY_STAGE:
		if (!t)
			t = thread_get(c, -1); /* spans without a tid */
		if (!t->grp)
			t->grp = group_new("", "");
		g = t->grp;
		break;
	}
	group_add(g, dur);
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
	}
}

static void first_sched(struct ctx *c, int64_t tid, enum rstate before, bool born)
{
	struct rthread *t;

	if (tid <= 0)
		return; /* the idle task */
	t = thread_get(c, tid);
	if (t->seen_sched)
		return;
	t->seen_sched = true;
	t->before = before;
	t->born = born;
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
		first_sched(c, l->prev_tid, RS_RUNNING, false);
		first_sched(c, l->next_tid, RS_RUNNABLE, false);
		break;
	case FT_WAKING:
	case FT_WAKEUP:
		first_sched(c, l->woken_tid, RS_SLEEPING, false);
		break;
	case FT_WAKEUP_NEW:
		first_sched(c, l->woken_tid, RS_DEAD, true);
		break;
	case FT_OTHER:
		break;
	}
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
	cJSON_Delete(m);
}

static int pass1(struct ctx *c, char *err, size_t errlen)
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
	c->r->truncated = trace_reader__truncated(tr);
	c->r->oversized = trace_reader__oversized(tr);
	trace_reader__close(tr);
	return ret;
}

/* ---- the longest spans, merged per thread and class ---------------------------------------- */

static int by_tid_cls_start(const void *a, const void *b)
{
	const struct big_span *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

static int by_start(const void *a, const void *b)
{
	const struct big *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* Sorted spans -> disjoint pieces, in place; returns how many. */
static size_t merge_pieces(struct big *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && v[i].s <= v[k - 1].e) {
			if (v[i].e > v[k - 1].e)
				v[k - 1].e = v[i].e;
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

static void build_big(struct ctx *c)
{
	struct big_span *h = c->heap;
	size_t i = 0;

	c->small_max = c->nheap == c->keep ? h[0].e - h[0].s : 0;
	qsort(h, c->nheap, sizeof(*h), by_tid_cls_start);
	while (i < c->nheap) {
		struct rthread *t = thread_find(c, h[i].tid);
		size_t j = i, all = 0;

		while (j < c->nheap && h[j].tid == h[i].tid)
			j++;
		t->b[CL_ANY] = xcalloc(j - i, sizeof(struct big));
		for (size_t k = i; k < j;) {
			int cls = h[k].cls;
			size_t m = k, n = 0;

			while (m < j && h[m].cls == cls)
				m++;
			t->b[cls] = xcalloc(m - k, sizeof(struct big));
			for (size_t x = k; x < m; x++) {
				t->b[cls][n++] = (struct big){ h[x].s, h[x].e };
				t->b[CL_ANY][all++] = (struct big){ h[x].s, h[x].e };
			}
			t->nb[cls] = merge_pieces(t->b[cls], n);
			k = m;
		}
		qsort(t->b[CL_ANY], all, sizeof(struct big), by_start);
		t->nb[CL_ANY] = merge_pieces(t->b[CL_ANY], all);
		if (t->nb[CAT_QUEUE])
			t->bq = xcalloc(4 * t->nb[CAT_QUEUE], sizeof(uint64_t));
		i = j;
	}
	free(c->heap);
	c->heap = NULL;
	c->nheap = 0;
}

/* Inside one of the longest pieces of this class: already counted. */
static bool in_big(const struct rthread *t, int cls, int64_t s, int64_t e)
{
	const struct big *v = t->b[cls];
	size_t lo = 0, hi = t->nb[cls];

	while (lo < hi) { /* the first piece starting after s */
		size_t mid = (lo + hi) / 2;

		if (v[mid].s <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && e <= v[lo - 1].e;
}

/* ---- pass 2: the sweep ---------------------------------------------------------------- */

static void hist_push(struct rthread *t)
{
	if (t->hh + t->hn == t->hcap) {
		if (t->hh > t->hcap / 2) {
			memmove(t->h, t->h + t->hh, t->hn * sizeof(*t->h));
			t->hh = 0;
		} else {
			t->hcap = t->hcap ? t->hcap * 2 : 64;
			t->h = xrealloc(t->h, t->hcap, sizeof(*t->h));
		}
	}
	t->h[t->hh + t->hn++] = (struct hist){ t->since, t->cs, t->cd, (uint8_t)t->state };
}

/* Sleeping and blocked totals at time x (within the kept history). */
static void hist_at(struct report *r, const struct rthread *t, int64_t x, uint64_t *cs,
		    uint64_t *cd)
{
	const struct hist *v = t->h + t->hh, *e;
	size_t lo = 0, hi = t->hn;

	while (lo < hi) { /* the first entry after x */
		size_t mid = (lo + hi) / 2;

		if (v[mid].t <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo) { /* before the kept history */
		if (t->trimmed && t->hn)
			r->approx++;
		*cs = t->hn && t->trimmed ? v[0].cs : 0;
		*cd = t->hn && t->trimmed ? v[0].cd : 0;
		return;
	}
	e = &v[lo - 1];
	*cs = e->cs + (e->state == RS_SLEEPING ? (uint64_t)(x - e->t) : 0);
	*cd = e->cd + (e->state == RS_BLOCKED ? (uint64_t)(x - e->t) : 0);
}

/* Passes the boundaries of the longest queue pieces up to ts, noting the totals there. */
static void pass_boundaries(struct rthread *t, int64_t ts)
{
	size_t n = 2 * t->nb[CAT_QUEUE];

	while (t->nextb < n) {
		const struct big *p = &t->b[CAT_QUEUE][t->nextb / 2];
		int64_t b = t->nextb & 1 ? p->e : p->s;
		uint64_t d;

		if (b > ts)
			return;
		d = t->started && b > t->since ? (uint64_t)(b - t->since) : 0;
		t->bq[2 * t->nextb] = t->cs + (t->state == RS_SLEEPING ? d : 0);
		t->bq[2 * t->nextb + 1] = t->cd + (t->state == RS_BLOCKED ? d : 0);
		t->nextb++;
	}
}

static void set_state(struct rthread *t, enum rstate s, int64_t ts)
{
	uint64_t d;

	if (!t->started) {
		t->started = true;
		t->since = ts;
		t->state = s;
		if (t->has_queue)
			hist_push(t);
		return;
	}
	if (ts < t->since)
		ts = t->since; /* a line slightly out of order */
	pass_boundaries(t, ts);
	d = ts - t->since;
	if (t->state >= RS_RUNNING && t->state < RS_DEAD)
		t->st_ns[t->state] += d;
	if (t->state == RS_SLEEPING)
		t->cs += d;
	else if (t->state == RS_BLOCKED)
		t->cd += d;
	t->since = ts;
	t->state = s;
	if (t->has_queue)
		hist_push(t);
}

static enum rstate from_prev_state(const char *st)
{
	switch (st[0]) {
	case 'R':
		return RS_RUNNABLE;
	case 'D':
		return RS_BLOCKED;
	case 'X':
	case 'Z':
		return RS_DEAD;
	default:
		return RS_SLEEPING;
	}
}

static void p2_sched(struct ctx *c, const struct ftrace_line *l)
{
	struct rthread *t;

	switch (l->kind) {
	case FT_SWITCH:
		t = l->prev_tid > 0 ? thread_find(c, l->prev_tid) : NULL;
		if (t && t->known)
			set_state(t, from_prev_state(l->prev_state), l->ts_ns);
		t = l->next_tid > 0 ? thread_find(c, l->next_tid) : NULL;
		if (t && t->known)
			set_state(t, RS_RUNNING, l->ts_ns);
		break;
	case FT_WAKING:
	case FT_WAKEUP:
	case FT_WAKEUP_NEW:
		t = l->woken_tid > 0 ? thread_find(c, l->woken_tid) : NULL;
		if (t && t->known &&
		    (!t->started || (t->state != RS_RUNNING && t->state != RS_RUNNABLE)))
			set_state(t, RS_RUNNABLE, l->ts_ns);
		break;
	case FT_OTHER:
		break;
	}
}

/* Future spans start at or after this (the file's disorder measured in pass 1). */
static int64_t frontier(const struct ctx *c)
{
	int64_t a = c->glob_e - c->lat_e - c->small_max, b = c->glob_s - c->lat_s;

	return a > b ? a : b;
}

static void finalize(struct rthread *t, int64_t f)
{
	for (int k = 0; k < NCLASS; k++) {
		struct pieces *p = &t->pend[k];

		while (p->n && p->v[p->head].e <= f) {
			const struct piece *x = &p->v[p->head];

			t->done_len[k] += x->e - x->s;
			t->done_qs += x->qs;
			t->done_qd += x->qd;
			p->head++;
			p->n--;
		}
		if (!p->n)
			p->head = 0;
	}
	/* keep the last state change at or before the frontier, and what follows */
	while (t->hn >= 2 && t->h[t->hh + 1].t <= f) {
		t->hh++;
		t->hn--;
		t->trimmed = true;
	}
}

static void pieces_insert(struct pieces *p, size_t at, const struct piece *x)
{
	if (p->head + p->n == p->cap) {
		if (p->head) {
			memmove(p->v, p->v + p->head, p->n * sizeof(*p->v));
			p->head = 0;
		} else {
			p->cap = p->cap ? p->cap * 2 : 16;
			p->v = xrealloc(p->v, p->cap, sizeof(*p->v));
		}
	}
	struct piece *v = p->v + p->head;

	memmove(v + at + 1, v + at, (p->n - at) * sizeof(*v));
	v[at] = *x;
	p->n++;
}

/* A span not inside one of the longest: merges it into the class's pending pieces. */
static void add_small(struct ctx *c, struct rthread *t, int cls, int64_t s, int64_t e)
{
	struct pieces *p = &t->pend[cls];
	struct piece *v = p->v + p->head, x = { s, e, 0, 0 };
	size_t hi = p->n, lo;

	while (hi && v[hi - 1].s >= e) /* pieces after it */
		hi--;
	lo = hi;
	while (lo && v[lo - 1].e > s) { /* pieces it overlaps */
		if (v[lo - 1].s <= s && v[lo - 1].e >= e)
			return; /* inside one */
		lo--;
		if (v[lo].s < x.s)
			x.s = v[lo].s;
		if (v[lo].e > x.e)
			x.e = v[lo].e;
	}
	if (cls == CAT_QUEUE && c->r->has_sched) {
		uint64_t s1, d1, s2, d2;

		hist_at(c->r, t, x.s, &s1, &d1);
		hist_at(c->r, t, x.e, &s2, &d2);
		x.qs = s2 - s1;
		x.qd = d2 - d1;
	}
	if (p->n > hi) /* v is NULL while the list is empty */
		memmove(v + lo, v + hi, (p->n - hi) * sizeof(*v));
	p->n -= hi - lo;
	pieces_insert(p, lo, &x);
}

static void p2_span(struct ctx *c, const struct trace_event *ev)
{
	int64_t s = ev->ts_ns, e = ev->ts_ns + ev->dur_ns;
	struct rthread *t = thread_find(c, ev->tid);
	int cls = class_of(ev->cat);

	if (e > c->glob_e)
		c->glob_e = e;
	if (s > c->glob_s)
		c->glob_s = s;
	if (!t)
		return;
	if (!in_big(t, cls, s, e))
		add_small(c, t, cls, s, e);
	if (!in_big(t, CL_ANY, s, e))
		add_small(c, t, CL_ANY, s, e);
	finalize(t, frontier(c));
}

/* Where each known thread starts: what its first scheduler event says it did before. */
static void start_threads(struct ctx *c)
{
	for (size_t i = 0; i < c->tcap; i++) {
		struct rthread *t = c->tslots[i];

		if (!t || !t->known || !c->r->has_sched)
			continue;
		if (!t->seen_sched) /* never switched in or woken: asleep throughout */
			set_state(t, RS_SLEEPING, c->r->start_ns);
		else if (!t->born)
			set_state(t, t->before, c->r->start_ns);
	}
}

static int next_sched_line(struct trace_reader *tr, struct ftrace_line *fl, int *ret)
{
	struct trace_item it;

	while ((*ret = trace_reader__next(tr, &it)) > 0)
		if (it.type == TI_SCHED && !ftrace_line__parse(it.text, it.len, fl))
			return 1;
	return 0;
}

static int pass2(struct ctx *c, char *err, size_t errlen)
{
	struct trace_reader *spans = NULL, *sched = NULL;
	struct trace_item it;
	struct ftrace_line fl;
	bool have_line = false;
	int ret = 0, sret = 0;

	c->glob_e = c->glob_s = INT64_MIN;
	start_threads(c);
	if (c->r->has_sched) {
		ret = trace_reader__open(&sched, c->o->path, TR_SCHED, err, errlen);
		if (ret)
			return ret;
		have_line = next_sched_line(sched, &fl, &sret);
	}
	if (c->any_span) {
		ret = trace_reader__open(&spans, c->o->path, TR_EVENTS, err, errlen);
		if (ret)
			goto out;
		while ((ret = trace_reader__next(spans, &it)) > 0) {
			const struct trace_event *ev = &it.ev;

			if (ev->ph != 'X' || !ev->has_ts || !ev->has_dur || ev->dur_ns < 0 ||
			    !ev->has_tid)
				continue;
			/* every state change up to the span's end, whatever the disorder */
			while (have_line && fl.ts_ns <= ev->ts_ns + ev->dur_ns + c->lat_sched) {
				p2_sched(c, &fl);
				have_line = next_sched_line(sched, &fl, &sret);
			}
			p2_span(c, ev);
		}
		if (ret < 0) {
			snprintf(err, errlen, "%s", trace_reader__error(spans));
			goto out;
		}
	}
	while (have_line) {
		p2_sched(c, &fl);
		have_line = next_sched_line(sched, &fl, &sret);
	}
	if (sret < 0) {
		snprintf(err, errlen, "%s", trace_reader__error(sched));
		ret = sret;
	}
out:
	trace_reader__close(spans);
	trace_reader__close(sched);
	return ret < 0 ? ret : 0;
}

/* ---- results ------------------------------------------------------------------------------ */

static void thread_result(struct ctx *c, struct rthread *t, struct thread_time *out)
{
	struct report *r = c->r;
	uint64_t qs = 0, qd = 0, len[NCLASS];

	if (r->has_sched && t->started && t->state != RS_DEAD)
		set_state(t, t->state, r->end_ns);
	pass_boundaries(t, INT64_MAX);
	finalize(t, INT64_MAX);
	for (int k = 0; k < NCLASS; k++) {
		len[k] = t->done_len[k];
		for (size_t i = 0; i < t->nb[k]; i++)
			len[k] += t->b[k][i].e - t->b[k][i].s;
	}
	for (size_t i = 0; i < t->nb[CAT_QUEUE]; i++) {
		qs += t->bq[4 * i + 2] - t->bq[4 * i];
		qd += t->bq[4 * i + 3] - t->bq[4 * i + 1];
	}
	qs += t->done_qs;
	qd += t->done_qd;
	memset(out, 0, sizeof(*out));
	out->name = t->name[0] ? t->name : NULL;
	out->pid = t->pid;
	out->tid = t->tid;
	out->spans = t->spans;
	for (int k = 0; k < CAT_MAX; k++)
		out->cat_ns[k] = len[k];
	if (r->has_sched) {
		uint64_t sl = t->st_ns[RS_SLEEPING], bl = t->st_ns[RS_BLOCKED];

		out->has_states = true;
		out->running_ns = t->st_ns[RS_RUNNING];
		out->runnable_ns = t->st_ns[RS_RUNNABLE];
		if (qs > sl)
			qs = sl;
		if (qd > bl)
			qd = bl;
		out->queue_wait_ns = qs + qd;
		out->idle_ns = sl - qs;
		out->blocked_ns = bl - qd;
	} else { /* without states a thread is seen from its first span to its last */
		uint64_t wall = t->spans ? t->last_e - t->first_s : 0;
		uint64_t any = len[CL_ANY] < wall ? len[CL_ANY] : wall;
		uint64_t q = len[CAT_QUEUE] < any ? len[CAT_QUEUE] : any;

		out->running_ns = any - q;
		out->queue_wait_ns = q;
		out->idle_ns = wall - any;
	}
}

static int by_total(const void *a, const void *b)
{
	const struct report_group *x = *(const struct report_group *const *)a;
	const struct report_group *y = *(const struct report_group *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int by_tid(const void *a, const void *b)
{
	const struct rthread *x = *(const struct rthread *const *)a;
	const struct rthread *y = *(const struct rthread *const *)b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* --by thread / stage: the per-thread groups, labelled or merged. */
static void thread_groups(struct ctx *c)
{
	for (size_t i = 0; i < c->tcap; i++) {
		struct rthread *t = c->tslots[i];
		struct report_group *g;
		char label[96];

		if (!t || !t->grp)
			continue;
		if (c->o->by == BY_THREAD) {
			if (t->tid < 0)
				snprintf(label, sizeof(label), "(no thread)");
			else
				snprintf(label, sizeof(label), "%s (%" PRId64 ")",
					 t->name[0] ? t->name : "?", t->tid);
		} else {
			stage__fold(t->name[0] ? t->name : "(unnamed)", label, sizeof(label));
		}
		g = group_get(c, label, "");
		g->count += t->grp->count;
		g->total_ns += t->grp->total_ns;
		sketch__merge(&g->sketch, &t->grp->sketch);
	}
}

int report__run(struct report *r, const struct report_opts *o, char *err, size_t errlen)
{
	struct ctx *c = xcalloc(1, sizeof(*c));
	struct rthread **known = NULL;
	size_t n = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	r->priv = c;
	c->o = o;
	c->r = r;
	c->keep = TOP_SPANS;
	if (getenv("TRACER_REPORT_KEEP")) {
		long k;

		if (!parse_long(getenv("TRACER_REPORT_KEEP"), 1, 1 << 24, &k))
			c->keep = k;
	}
	c->heap = xcalloc(c->keep, sizeof(*c->heap));
	c->min_ts = INT64_MAX;
	c->max_end = INT64_MIN;
	ret = pass1(c, err, errlen);
	if (ret)
		return ret;
	r->has_sched = c->any_sched;
	r->start_ns = c->have_t0 || c->min_ts == INT64_MAX ? 0 : c->min_ts;
	if (c->have_t0 && c->min_ts < 0)
		r->start_ns = c->min_ts;
	r->end_ns = c->max_end == INT64_MIN ? r->start_ns : c->max_end;
	if (c->have_t0 && c->meta_dur > r->end_ns)
		r->end_ns = c->meta_dur;
	build_big(c);
	ret = pass2(c, err, errlen);
	if (ret)
		return ret;

	known = xcalloc(c->tcnt + 1, sizeof(*known));
	for (size_t i = 0; i < c->tcap; i++)
		if (c->tslots[i] && c->tslots[i]->known && c->tslots[i]->tid >= 0)
			known[n++] = c->tslots[i];
	qsort(known, n, sizeof(*known), by_tid);
	r->threads = xcalloc(n + 1, sizeof(*r->threads));
	for (size_t i = 0; i < n; i++)
		thread_result(c, known[i], &r->threads[i]);
	r->nthreads = n;
	ret = stages__from_threads(r->threads, n, &r->stages, &r->nstages);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	stages__verdict(r->verdict, sizeof(r->verdict), r->stages, r->nstages, r->cpus);
	if (o->by == BY_THREAD || o->by == BY_STAGE)
		thread_groups(c);
	r->groups = xcalloc(c->gcnt + 1, sizeof(*r->groups));
	for (size_t i = 0; i < c->gcap; i++)
		if (c->gslots[i])
			r->groups[r->ngroups++] = c->gslots[i];
	qsort(r->groups, r->ngroups, sizeof(*r->groups), by_total);
out:
	free(known);
	return ret;
}

void report__free(struct report *r)
{
	struct ctx *c = r->priv;

	if (c) {
		for (size_t i = 0; i < c->gcap; i++)
			group_free(c->gslots[i]);
		for (size_t i = 0; i < c->tcap; i++)
			if (c->tslots[i])
				thread_free(c->tslots[i]);
		free(c->gslots);
		free(c->tslots);
		free(c->heap);
		free(c);
	}
	free(r->groups);
	free(r->threads);
	free(r->stages);
	memset(r, 0, sizeof(*r));
}

/* ---- output ------------------------------------------------------------------------------- */

static const char *const by_names[] = { "name", "category", "thread", "stage" };

static long rows(const struct report *r, const struct report_opts *o)
{
	long top = o->top < 0 ? (o->format == FMT_TABLE ? TABLE_TOP : 0) : o->top;

	return top && (size_t)top < r->ngroups ? top : (long)r->ngroups;
}

static void json_str(FILE *f, const char *s)
{
	char buf[1024];
	size_t n = strlen(s);

	fputc('"', f);
	while (n) { /* in pieces: escaping grows a piece at most 6 times */
		size_t take = n < 150 ? n : 150;

		/* never split a UTF-8 sequence */
		while (take < n && take > 1 && ((unsigned char)s[take] & 0xc0) == 0x80)
			take--;
		json_escape(buf, sizeof(buf), s, take);
		fputs(buf, f);
		s += take;
		n -= take;
	}
	fputc('"', f);
}

static void csv_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void print_table(FILE *f, const struct report *r, const struct report_opts *o)
{
	long nrows = rows(r, o);
	char b[7 + NQ][32], name[32], w[64];

	fprintf(f, "%s: %" PRIu64 " spans", o->path, r->spans);
	if (r->incomplete)
		fprintf(f, " (%" PRIu64 " incomplete)", r->incomplete);
	fprintf(f, " on %zu threads, %s recorded", r->nthreads,
		fmt_duration(r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0, w, sizeof(w)));
	if (r->cpus)
		fprintf(f, ", %d CPUs", r->cpus);
	fprintf(f, "\nSpans by %s, largest total first; percentiles from a quantile sketch, within "
		   "%g%% (relative)",
		by_names[o->by], 100 * SKETCH_REL_ERR);
	if (o->min_dur_ns)
		fprintf(f, "; spans under %s left out", fmt_duration(o->min_dur_ns, w, sizeof(w)));
	fprintf(f, "\n\n%-20s %8s %6s %6s %6s %6s %6s %6s %6s %6s %6s\n",
		o->by == BY_NAME ? "NAME" : o->by == BY_CATEGORY ? "CATEGORY" :
		o->by == BY_THREAD ? "THREAD" : "STAGE",
		"COUNT", "TOTAL", "MEAN", "MIN", "MAX", "P50", "P90", "P95", "P99", "P99.9");
	for (long i = 0; i < nrows; i++) {
		const struct report_group *g = r->groups[i];

		if (strlen(g->key) > 20)
			snprintf(name, sizeof(name), "%.17s...", g->key);
		else
			snprintf(name, sizeof(name), "%s", g->key);
		fprintf(f, "%-20s %8" PRIu64 " %6s %6s %6s %6s", name, g->count,
			fmt_duration(g->total_ns, b[0], 32),
			fmt_duration(g->total_ns / g->count, b[1], 32),
			fmt_duration(g->sketch.min, b[2], 32),
			fmt_duration(g->sketch.max, b[3], 32));
		for (size_t q = 0; q < NQ; q++) {
			uint64_t v = sketch__quantile(&g->sketch, quantiles[q]);

			fprintf(f, " %6s", fmt_duration(v, b[4 + q], 32));
		}
		fputc('\n', f);
	}
	if ((size_t)nrows < r->ngroups)
		fprintf(f, "(%zu more; --top 0 shows all)\n", r->ngroups - nrows);
	if (!r->ngroups)
		fprintf(f, "(no spans)\n");
	if (r->has_sched)
		fputs("\nStages: threads grouped by name; shares of each thread's observed time\n",
		      f);
	else
		fputs("\nStages: no scheduler states in the trace; shares of the time from each "
		      "thread's first span\nto its last; IN-SPANS is time inside spans that are "
		      "not queue spans\n",
		      f);
	stages__print(f, r->stages, r->nstages);
	fprintf(f, "\n%s\n", r->verdict);
}

static void print_csv(FILE *f, const struct report *r, const struct report_opts *o)
{
	long nrows = rows(r, o);

	fprintf(f, "group,category,count,total_ns,mean_ns,min_ns,max_ns,p50_ns,p90_ns,p95_ns,"
		   "p99_ns,p999_ns\n");
	for (long i = 0; i < nrows; i++) {
		const struct report_group *g = r->groups[i];

		csv_str(f, g->key);
		fputc(',', f);
		csv_str(f, g->cat);
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, g->count,
			g->total_ns, g->total_ns / g->count, g->sketch.min, g->sketch.max);
		for (size_t q = 0; q < NQ; q++)
			fprintf(f, ",%" PRIu64, sketch__quantile(&g->sketch, quantiles[q]));
		fputc('\n', f);
	}
}

static void print_json(FILE *f, const struct report *r, const struct report_opts *o)
{
	static const char *const qnames[NQ] = { "p50_ns", "p90_ns", "p95_ns", "p99_ns", "p999_ns" };
	long nrows = rows(r, o);

	fputs("{\"trace\":", f);
	json_str(f, o->path);
	fprintf(f, ",\"spans\":%" PRIu64 ",\"incomplete\":%" PRIu64 ",\"start_ns\":%" PRId64
		   ",\"end_ns\":%" PRId64 ",\"cpus\":%d,\"scheduler_states\":%s,\"truncated\":%s,"
		   "\"approximate_spans\":%" PRIu64 ",\"group_by\":\"%s\",\"relative_error\":%g,"
		   "\"min_dur_ns\":%" PRIu64 ",\"groups\":[",
		r->spans, r->incomplete, r->start_ns, r->end_ns, r->cpus,
		r->has_sched ? "true" : "false", r->truncated ? "true" : "false", r->approx,
		by_names[o->by], SKETCH_REL_ERR, o->min_dur_ns);
	for (long i = 0; i < nrows; i++) {
		const struct report_group *g = r->groups[i];

		fputs(i ? ",\n{\"group\":" : "\n{\"group\":", f);
		json_str(f, g->key);
		if (o->by == BY_NAME) {
			fputs(",\"category\":", f);
			json_str(f, g->cat);
		}
		fprintf(f, ",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64
			   ",\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64,
			g->count, g->total_ns, g->total_ns / g->count, g->sketch.min,
			g->sketch.max);
		for (size_t q = 0; q < NQ; q++)
			fprintf(f, ",\"%s\":%" PRIu64, qnames[q],
				sketch__quantile(&g->sketch, quantiles[q]));
		fputc('}', f);
	}
	fputs("],\n\"stages\":[", f);
	for (size_t i = 0; i < r->nstages; i++) {
		const struct stage_stats *s = &r->stages[i];

		fputs(i ? ",\n{\"stage\":" : "\n{\"stage\":", f);
		json_str(f, s->name);
		fprintf(f, ",\"threads\":%u,\"spans\":%" PRIu64 ",\"wall_ns\":%" PRIu64
			   ",\"running\":%.4f,\"runnable\":%.4f,\"queue_wait\":%.4f,"
			   "\"blocked\":%.4f,\"idle\":%.4f}",
			s->threads, s->spans, s->wall_ns, stage__share(s, s->running_ns),
			stage__share(s, s->runnable_ns), stage__share(s, s->queue_wait_ns),
			stage__share(s, s->blocked_ns), stage__share(s, s->idle_ns));
	}
	fputs("],\n\"threads\":[", f);
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct thread_time *t = &r->threads[i];
		char stage[64];

		stage__fold(t->name ? t->name : "(unnamed)", stage, sizeof(stage));
		fprintf(f, "%s{\"tid\":%d,\"pid\":%d,\"name\":", i ? ",\n" : "\n", t->tid, t->pid);
		json_str(f, t->name ? t->name : "");
		fputs(",\"stage\":", f);
		json_str(f, stage);
		fprintf(f, ",\"spans\":%" PRIu64 ",\"wall_ns\":%" PRIu64 ",\"running_ns\":%" PRIu64
			   ",\"runnable_ns\":%" PRIu64 ",\"queue_wait_ns\":%" PRIu64
			   ",\"blocked_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64 ",\"category_ns\":{",
			t->spans, thread_time__wall(t), t->running_ns, t->runnable_ns,
			t->queue_wait_ns, t->blocked_ns, t->idle_ns);
		for (int k = 0; k < CAT_MAX; k++)
			fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", category__name(k),
				t->cat_ns[k]);
		fputs("}}", f);
	}
	fputs("],\n\"verdict\":", f);
	json_str(f, r->verdict);
	fputs("}\n", f);
}

void report__print(FILE *f, const struct report *r, const struct report_opts *o)
{
	switch (o->format) {
	case FMT_TABLE:
		print_table(f, r, o);
		break;
	case FMT_CSV:
		print_csv(f, r, o);
		break;
	case FMT_JSON:
		print_json(f, r, o);
		break;
	}
}

/* ---- the command ---------------------------------------------------------------------- */

static const char report_usage[] =
	"Usage: tracer report TRACE.json[.gz] [--top N] [--by name|category|thread|stage]\n"
	"                     [--min-dur DUR] [--csv|--json] [--html FILE]\n"
	"\n"
	"Where the time went in a recording: per span name (or category, thread, stage) the\n"
	"count, total, mean, min, max and p50/p90/p95/p99/p99.9 durations, largest total first;\n"
	"the pipeline's stages (threads grouped by name, trailing indices folded: decode-0,\n"
	"decode-1 -> decode[*]) with their shares of running, runnable, waiting in queue spans,\n"
	"blocked and idle time; and a verdict line starting 'bottleneck:'. Percentiles come from\n"
	"a quantile sketch within 1% (relative). Memory stays bounded whatever the file's size.\n"
	"\n"
	"  --top N          rows to show (default 20 in the table, all with --csv/--json; 0: all)\n"
	"  --by KEY         group spans by name (default), category, thread or stage\n"
	"  --min-dur DUR    leave out spans shorter than DUR (microseconds, or 50us, 2ms)\n"
	"  --csv            the span table as CSV\n"
	"  --json           everything as one JSON object (groups, stages, threads, verdict)\n"
	"  --html FILE      also write the report as one self-contained HTML page: a chart of\n"
	"                   each stage's time, a latency histogram per group, the verdict\n"
	"  -h, --help       this text\n"
	"\n"
	"Examples:\n"
	"  tracer report run.json.gz\n"
	"  tracer report run.json --by stage --min-dur 1ms\n"
	"  tracer report run.json --json > report.json\n"
	"  tracer report run.json --html report.html\n";

static int report__write_html(const char *path, const struct report *r,
			      const struct report_opts *o)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f) {
		err = -errno;
		goto out;
	}
	err = report_html__write(f, r, o);
	if (fclose(f) && !err)
		err = -errno;
out:
	if (err)
		pr_err("cannot write %s: %s", path, strerror(-err));
	return err;
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_TOP = 256, OPT_BY, OPT_MIN_DUR, OPT_CSV, OPT_JSON, OPT_HTML };
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, OPT_TOP },
		{ "by", required_argument, NULL, OPT_BY },
		{ "min-dur", required_argument, NULL, OPT_MIN_DUR },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct report_opts o = { .top = -1 };
	struct report r;
	char err[1024];
	bool csv = false, json = false;
	const char *html = NULL;
	int ch, ret;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_TOP:
			if (parse_long(optarg, 0, LONG_MAX, &o.top))
				return usage_error("report", "bad --top '%s': want a number of rows",
							  optarg);
			break;
		case OPT_BY:
			for (o.by = 0; o.by < 4 && strcmp(optarg, by_names[o.by]); o.by++)
				;
			if (o.by == 4)
				return usage_error("report", "bad --by '%s': want name, category, "
							  "thread or stage",
							  optarg);
			break;
		case OPT_MIN_DUR:
			if (parse_duration(optarg, 1000, &o.min_dur_ns))
				return usage_error("report", "bad --min-dur '%s': want "
							  "microseconds, or 50us, 2ms",
							  optarg);
			break;
		case OPT_CSV:
			csv = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_HTML:
			html = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		case ':':
			return usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("report", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (csv && json)
		return usage_error("report", "--csv and --json exclude each other");
	o.format = csv ? FMT_CSV : json ? FMT_JSON : FMT_TABLE;
	if (optind == argc)
		return usage_error("report", "no trace given: tracer report TRACE.json");
	if (optind + 1 < argc)
		return usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
	o.path = argv[optind];

	ret = report__run(&r, &o, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		report__free(&r);
		return 1;
	}
	if (r.truncated)
		pr_warn("%s ends before its closing bracket (recording killed?): reporting the "
			"complete events before the cut",
			o.path);
	if (r.oversized)
		pr_warn("%" PRIu64 " events larger than %u MB were skipped", r.oversized,
			TR_MAX_VALUE >> 20);
	if (r.ignored_be)
		pr_warn("%" PRIu64 " B/E events ignored: only complete (X) events are counted",
			r.ignored_be);
	if (r.approx)
		pr_warn("the file's events are far out of order: queue waits of %" PRIu64
			" spans are approximate",
			r.approx);
	report__print(stdout, &r, &o);
	if (html && report__write_html(html, &r, &o)) {
		report__free(&r);
		return 1;
	}
	report__free(&r);
	if (fflush(stdout) || ferror(stdout)) {
		pr_err("cannot write the report: %s", strerror(errno));
		return 1;
	}
	return 0;
}
