// SPDX-License-Identifier: MIT
/* report, pass 2: the time sweep that splits each thread's time into its states. */
#include "analyze/report_ctx.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

void build_big(struct ctx *c)
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
void pass_boundaries(struct rthread *t, int64_t ts)
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

void set_state(struct rthread *t, enum rstate s, int64_t ts)
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

/* The stretch since the thread's last state change turns out unknown: its history entry says
 * it too, and the queue pieces not yet counted are looked up again, or one over that stretch
 * counted it as a wait. (A piece counted already stays as it was: the report is exact when the
 * line that tells comes before the span's end, in the file or within its disorder.) */
static void state_unknown(struct ctx *c, struct rthread *t)
{
	struct pieces *p = &t->pend[CAT_QUEUE];

	t->state = RS_UNKNOWN;
	if (!t->hn || t->h[t->hh + t->hn - 1].t != t->since)
		return;
	t->h[t->hh + t->hn - 1].state = RS_UNKNOWN;
	for (size_t i = 0; i < p->n; i++) {
		struct piece *x = &p->v[p->head + i];
		uint64_t s1, d1, s2, d2;

		if (x->e <= t->since)
			continue;
		hist_at(c->r, t, x->s, &s1, &d1);
		hist_at(c->r, t, x->e, &s2, &d2);
		x->qs = s2 - s1;
		x->qd = d2 - d1;
	}
}

static void p2_sched(struct ctx *c, const struct ftrace_line *l)
{
	struct rthread *t;

	switch (l->kind) {
	case FT_SWITCH:
		/* switched out twice, or in twice: a switch between was not recorded, so the
		 * stretch since is unknown (counted nowhere), not the state it seemed in */
		t = l->prev_tid > 0 ? thread_find(c, l->prev_tid) : NULL;
		if (t && t->known) {
			if (t->switch_seen && t->state != RS_RUNNING)
				state_unknown(c, t);
			t->switch_seen = true;
			set_state(t, from_prev_state(l->prev_state), l->ts_ns);
		}
		t = l->next_tid > 0 ? thread_find(c, l->next_tid) : NULL;
		if (t && t->known) {
			if (t->switch_seen && t->state == RS_RUNNING)
				state_unknown(c, t);
			t->switch_seen = true;
			set_state(t, RS_RUNNING, l->ts_ns);
		}
		break;
	case FT_WAKING:
	case FT_WAKEUP:
	case FT_WAKEUP_NEW:
		t = l->woken_tid > 0 ? thread_find(c, l->woken_tid) : NULL;
		if (t && l->kind == FT_WAKING && !l->in_irq && l->tid > 0 && l->tid != l->woken_tid) {
			t->wakings++;
			t->waker_wakings += l->tid == t->waker;
		}
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

void finalize(struct rthread *t, int64_t f)
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
	int cls = class_of(ev);

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
	struct rthread *t, *tmp;

	HASH_ITER(hash, c->threads, t, tmp) {
		if (!t->known || !c->r->has_sched)
			continue;
		if (!t->seen_sched) /* never switched in or woken: asleep throughout */
			set_state(t, RS_SLEEPING, t->win_s);
		else if (!t->born)
			set_state(t, t->before, t->win_s);
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

int pass2(struct ctx *c, char *err, size_t errlen)
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
