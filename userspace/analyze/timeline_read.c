// SPDX-License-Identifier: MIT
/* The timeline read from a trace: lanes from the report's threads, then up to three streams of
 * the file — the default window's pass (spans per slice, the busiest stage's running time), the
 * events (spans of the window, wake-ups, counters) and the scheduler lines (states). */
#include "analyze/timeline_read.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct lane_ix {
	int64_t tid;
	size_t i;
};

struct pending_flow { /* a wake-up's start ("s"), until its end ("f") */
	char id[48];
	int64_t tid, ts;
	UT_hash_handle hh;
};

struct flow_key {
	int a, b, col;
};

struct flow_slot {
	struct flow_key k;
	size_t i;
	UT_hash_handle hh;
};

#define MAX_PENDING_FLOWS 65536

struct build {
	struct timeline *tl;
	const struct report *r;
	struct lane_ix *ix; /* by tid */
	bool *busy;	    /* per lane: of the busiest stage */
	struct pending_flow *pending;
	size_t npending;
	struct flow_slot *slots;
	uint64_t kept;
};

static int by_tid(const void *a, const void *b)
{
	const struct lane_ix *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static struct tl_lane *lane_of(struct build *b, int64_t tid)
{
	struct lane_ix key = { tid, 0 }, *f;

	f = bsearch(&key, b->ix, b->tl->nlanes, sizeof(*b->ix), by_tid);
	return f ? &b->tl->lanes[f->i] : NULL;
}

/* ---- lanes ------------------------------------------------------------------------------- */

struct pick {
	const struct thread_time *t;
	int stage;
};

static int by_activity(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;
	uint64_t ax = x->t->spans + x->t->running_ns / 1000, ay = y->t->spans + y->t->running_ns / 1000;

	if (ax != ay)
		return ax > ay ? -1 : 1;
	return x->t->tid - y->t->tid;
}

static int by_stage(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->stage != y->stage)
		return x->stage - y->stage;
	return x->t->tid - y->t->tid;
}

struct stage_ix {
	const char *name;
	int i;
};

static int by_stage_name(const void *a, const void *b)
{
	return strcmp(((const struct stage_ix *)a)->name, ((const struct stage_ix *)b)->name);
}

/* The busiest stage with spans: its share of running (or, without states, in-span) time. */
static int busiest_stage(const struct report *r)
{
	int best = -1;
	double top = -1;

	for (size_t i = 0; i < r->nstages; i++) {
		const struct stage_stats *s = &r->stages[i];
		double v = stage__share(s, s->running_ns + s->blocked_ns);

		if (s->spans && s->wall_ns && v > top) {
			top = v;
			best = (int)i;
		}
	}
	return best;
}

static int make_lanes(struct build *b)
{
	const struct report *r = b->r;
	struct timeline *tl = b->tl;
	char(*names)[STAGE_NAME_LEN] = xcalloc(r->nthreads + 1, sizeof(*names));
	struct pick *p = xcalloc(r->nthreads + 1, sizeof(*p));
	struct stage_ix *by_name = xcalloc(r->nstages + 1, sizeof(*by_name));
	size_t n = r->nthreads;
	int busiest = busiest_stage(r);

	if (stages__names(r->threads, n, names)) {
		free(names);
		free(p);
		free(by_name);
		return -ENOMEM;
	}
	if (busiest >= 0)
		snprintf(tl->busiest, sizeof(tl->busiest), "%s", r->stages[busiest].name);
	/* each thread's stage by name: the stages sorted by name, looked up (50,000 threads
	 * each a stage of its own took 19 s compared with every stage) */
	for (size_t k = 0; k < r->nstages; k++)
		by_name[k] = (struct stage_ix){ r->stages[k].name, (int)k };
	qsort(by_name, r->nstages, sizeof(*by_name), by_stage_name);
	for (size_t i = 0; i < n; i++) {
		struct stage_ix key = { names[i], 0 }, *f;

		f = bsearch(&key, by_name, r->nstages, sizeof(*by_name), by_stage_name);
		p[i].t = &r->threads[i];
		p[i].stage = f ? f->i : (int)r->nstages;
	}
	free(by_name);
	if (n > TL_MAX_LANES) { /* the busiest threads are drawn */
		qsort(p, n, sizeof(*p), by_activity);
		tl->other_threads = n - TL_MAX_LANES;
		n = TL_MAX_LANES;
	}
	qsort(p, n, sizeof(*p), by_stage);
	tl->lanes = xcalloc(n + 1, sizeof(*tl->lanes));
	b->ix = xcalloc(n + 1, sizeof(*b->ix));
	b->busy = xcalloc(n + 1, sizeof(*b->busy));
	for (size_t i = 0; i < n; i++) {
		struct tl_lane *l = &tl->lanes[i];

		l->tid = p[i].t->tid;
		l->pid = p[i].t->pid;
		snprintf(l->name, sizeof(l->name), "%s", p[i].t->name ? p[i].t->name : "?");
		snprintf(l->stage, sizeof(l->stage), "%s",
			 p[i].stage < (int)r->nstages ? r->stages[p[i].stage].name : "");
		b->ix[i] = (struct lane_ix){ l->tid, i };
		b->busy[i] = p[i].stage == busiest;
	}
	tl->nlanes = n;
	qsort(b->ix, n, sizeof(*b->ix), by_tid);
	free(names);
	free(p);
	return 0;
}

/* ---- the default window ------------------------------------------------------------------- */

static void add_bins(uint64_t *bins, int64_t start, int64_t dur, int64_t s, int64_t e)
{
	if (s < start)
		s = start;
	if (e > start + dur)
		e = start + dur;
	for (int i = tl__bin(start, dur, TL_SLICES, s); s < e && i < TL_SLICES; i++) {
		int64_t be = tl__bin_start(start, dur, TL_SLICES, i + 1);

		bins[i] += (e < be ? e : be) - s;
		s = be;
	}
}

static int span_cat(const struct trace_event *ev)
{
	enum category k;

	if (category__parse(ev->cat, &k))
		return CAT_OTHER;
	return k == CAT_PYTHON && stage__python_wait(ev->name) ? CAT_QUEUE : (int)k;
}

/* The default window follows the busiest stage's work: its time in spans other than waits
 * (nested ones count again: where more is nested, more is drawn). Not its running time: a
 * thread still running when the recording stops would pull the window to the end, where
 * there are no spans to see. */
static int choose_window(struct build *b, const char *path, char *err, size_t errlen)
{
	const struct report *r = b->r;
	int64_t start = r->start_ns, dur = r->end_ns - r->start_ns;
	uint64_t spans[TL_SLICES] = { 0 }, busy[TL_SLICES] = { 0 };
	struct trace_reader *tr;
	struct trace_item it;
	size_t with_spans = 0;
	int ret = trace_reader__open(&tr, path, TR_EVENTS, err, errlen);

	if (ret)
		return ret;
	while ((ret = trace_reader__next(tr, &it)) > 0) {
		const struct trace_event *ev = &it.ev;
		struct tl_lane *l;

		if (ev->ph != 'X' || !ev->has_ts || !ev->has_dur || ev->dur_ns < 0)
			continue;
		spans[tl__bin(start, dur, TL_SLICES, ev->ts_ns + ev->dur_ns)]++;
		l = ev->has_tid ? lane_of(b, ev->tid) : NULL;
		if (l && b->busy[l - b->tl->lanes] && span_cat(ev) != CAT_QUEUE)
			add_bins(busy, start, dur, ev->ts_ns, ev->ts_ns + ev->dur_ns);
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(tr));
	trace_reader__close(tr);
	for (size_t i = 0; i < r->nthreads; i++)
		with_spans += r->threads[i].spans > 0;
	b->tl->w = tl__default_window(start, r->end_ns, spans, busy, with_spans);
	return ret < 0 ? ret : 0;
}

/* ---- events: spans, wake-ups, counters ---------------------------------------------------- */

static void add_span(struct build *b, const struct trace_event *ev)
{
	const struct tl_window *w = &b->tl->w;
	int64_t s = ev->ts_ns, e = ev->ts_ns + ev->dur_ns;
	struct tl_lane *l = ev->has_tid ? lane_of(b, ev->tid) : NULL;

	if (!l || e <= w->start || s >= w->start + w->dur)
		return;
	l->spans++;
	if (b->kept >= b->tl->max_spans &&
	    (b->kept >= 2 * b->tl->max_spans || (__int128)(e - s) * TL_COLS < w->dur)) {
		b->tl->spans_dropped++;
		return;
	}
	if (l->nsp == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->sp = xrealloc(l->sp, l->cap, sizeof(*l->sp));
	}
	l->sp[l->nsp++] = (struct tl_span){ s, e, (uint8_t)span_cat(ev) };
	b->kept++;
}

static void flow_id(const struct trace_event *ev, char *id, size_t len)
{
	size_t n = ev->id_at.len < len - 1 ? ev->id_at.len : len - 1;

	memcpy(id, ev->text + ev->id_at.off, n);
	id[n] = 0;
}

static void add_flow(struct build *b, const struct trace_event *ev)
{
	struct timeline *tl = b->tl;
	struct pending_flow *p;
	struct tl_lane *from, *to;
	struct flow_slot *slot;
	struct flow_key k;
	char id[48];

	if (!ev->id_at.len || !ev->has_ts || !ev->has_tid)
		return;
	flow_id(ev, id, sizeof(id));
	HASH_FIND_STR(b->pending, id, p);
	if (ev->ph == 's') {
		if (!p) {
			if (b->npending >= MAX_PENDING_FLOWS) /* starts that never ended */
				return;
			p = xcalloc(1, sizeof(*p));
			snprintf(p->id, sizeof(p->id), "%s", id);
			HASH_ADD_STR(b->pending, id, p);
			b->npending++;
		}
		p->tid = ev->tid;
		p->ts = ev->ts_ns;
		return;
	}
	if (!p)
		return;
	from = lane_of(b, p->tid);
	to = lane_of(b, ev->tid);
	if (from && to && ev->ts_ns >= tl->w.start && ev->ts_ns < tl->w.start + tl->w.dur) {
		tl->wakeups++;
		memset(&k, 0, sizeof(k));
		k.a = (int)(from - tl->lanes);
		k.b = (int)(to - tl->lanes);
		k.col = tl__col(&tl->w, ev->ts_ns);
		HASH_FIND(hh, b->slots, &k, sizeof(k), slot);
		if (slot) {
			tl->flows[slot->i].count++;
		} else if (tl->nflows < TL_MAX_FLOWS) {
			slot = xcalloc(1, sizeof(*slot));
			slot->k = k;
			slot->i = tl->nflows;
			HASH_ADD(hh, b->slots, k, sizeof(k), slot);
			tl->flows[tl->nflows++] = (struct tl_flow){ k.a, k.b, p->ts, ev->ts_ns, 1 };
		} else {
			tl->flows_dropped++;
		}
	}
	HASH_DEL(b->pending, p);
	free(p);
	b->npending--;
}

/* The counter holds v over [s, e): the columns it touches keep their largest value. */
static void counter_hold(const struct tl_window *w, struct tl_counter *c, double v, int64_t s,
			 int64_t e)
{
	if (s < w->start)
		s = w->start;
	if (e > w->start + w->dur)
		e = w->start + w->dur;
	if (e <= s)
		return;
	for (int i = tl__col(w, s), last = tl__col(w, e - 1); i <= last; i++) {
		if (!c->set[i] || v > c->max[i])
			c->max[i] = v;
		c->set[i] = true;
	}
	if (v > c->top)
		c->top = v;
}

static void add_counter(struct build *b, const struct trace_event *ev)
{
	struct timeline *tl = b->tl;
	cJSON *args, *m;

	if (!ev->args_at.len || !ev->has_ts)
		return;
	args = cJSON_ParseWithLength(ev->text + ev->args_at.off, ev->args_at.len);
	cJSON_ArrayForEach(m, args) {
		struct tl_counter *c = NULL;
		char name[96];

		if (!cJSON_IsNumber(m) || !m->string || !isfinite(m->valuedouble))
			continue; /* (1e999 parses as infinity, which JSON cannot hold) */
		snprintf(name, sizeof(name), "%s %s", ev->name, m->string);
		for (size_t i = 0; i < tl->ncounters && !c; i++)
			if (tl->counters[i].pid == ev->pid && !strcmp(tl->counters[i].name, name))
				c = &tl->counters[i];
		if (!c) {
			if (tl->ncounters == TL_MAX_COUNTERS) {
				tl->other_counters++;
				continue;
			}
			c = &tl->counters[tl->ncounters++];
			snprintf(c->name, sizeof(c->name), "%s", name);
			c->pid = ev->pid;
		}
		if (c->have)
			counter_hold(&tl->w, c, c->last, c->last_t, ev->ts_ns);
		c->have = true;
		c->last = m->valuedouble;
		c->last_t = ev->ts_ns;
	}
	cJSON_Delete(args);
}

static int read_events(struct build *b, const char *path, char *err, size_t errlen)
{
	struct timeline *tl = b->tl;
	struct trace_reader *tr;
	struct trace_item it;
	struct pending_flow *p, *ptmp;
	struct flow_slot *s, *stmp;
	int ret = trace_reader__open(&tr, path, TR_EVENTS, err, errlen);

	if (ret)
		return ret;
	while ((ret = trace_reader__next(tr, &it)) > 0) {
		const struct trace_event *ev = &it.ev;

		if (ev->ph == 'X' && ev->has_ts && ev->has_dur && ev->dur_ns >= 0)
			add_span(b, ev);
		else if (ev->ph == 's' || ev->ph == 'f')
			add_flow(b, ev);
		else if (ev->ph == 'C')
			add_counter(b, ev);
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(tr));
	trace_reader__close(tr);
	for (size_t i = 0; i < tl->ncounters; i++) /* the last value holds to the end */
		if (tl->counters[i].have)
			counter_hold(&tl->w, &tl->counters[i], tl->counters[i].last,
				     tl->counters[i].last_t, tl->w.start + tl->w.dur);
	HASH_ITER(hh, b->pending, p, ptmp) {
		HASH_DEL(b->pending, p);
		free(p);
	}
	HASH_ITER(hh, b->slots, s, stmp) {
		HASH_DEL(b->slots, s);
		free(s);
	}
	return ret < 0 ? ret : 0;
}

/* ---- scheduler states --------------------------------------------------------------------- */

static void lane_state(const struct tl_window *w, struct tl_lane *l, enum tl_state st, int64_t ts)
{
	tl__add_state(w, l->acc, l->st, l->since, ts, l->queue, l->nq);
	l->st = st;
	l->since = ts;
}

/* The first scheduler event of a thread says what it did since the recording began. */
static void first_seen(struct tl_lane *l, enum tl_state before, int64_t start)
{
	if (l->seen)
		return;
	l->seen = true;
	l->st = before;
	l->since = start;
}

static enum tl_state from_prev_state(const char *st)
{
	switch (st[0]) {
	case 'R':
		return TS_RUNNABLE;
	case 'D':
		return TS_BLOCKED;
	case 'X':
	case 'Z':
		return TS_NONE;
	default:
		return TS_SLEEPING;
	}
}

static void sched_line(struct build *b, const struct ftrace_line *fl)
{
	const struct tl_window *w = &b->tl->w;
	int64_t t0 = b->r->start_ns;
	struct tl_lane *l;

	switch (fl->kind) {
	case FT_SWITCH:
		if (fl->prev_tid > 0 && (l = lane_of(b, fl->prev_tid))) {
			first_seen(l, TS_RUNNING, t0);
			lane_state(w, l, from_prev_state(fl->prev_state), fl->ts_ns);
		}
		if (fl->next_tid > 0 && (l = lane_of(b, fl->next_tid))) {
			first_seen(l, TS_RUNNABLE, t0);
			lane_state(w, l, TS_RUNNING, fl->ts_ns);
		}
		break;
	case FT_WAKING:
	case FT_WAKEUP:
	case FT_WAKEUP_NEW:
		if (fl->woken_tid > 0 && (l = lane_of(b, fl->woken_tid))) {
			first_seen(l, fl->kind == FT_WAKEUP_NEW ? TS_NONE : TS_SLEEPING, t0);
			if (l->st != TS_RUNNING && l->st != TS_RUNNABLE)
				lane_state(w, l, TS_RUNNABLE, fl->ts_ns);
		}
		break;
	case FT_OTHER:
		break;
	}
}

static int read_states(struct build *b, const char *path, char *err, size_t errlen)
{
	struct timeline *tl = b->tl;
	struct trace_reader *tr;
	struct trace_item it;
	struct ftrace_line fl;
	int ret = trace_reader__open(&tr, path, TR_SCHED, err, errlen);

	if (ret)
		return ret;
	for (size_t i = 0; i < tl->nlanes; i++)
		tl->lanes[i].acc = xcalloc(TL_COLS, sizeof(*tl->lanes[i].acc));
	while ((ret = trace_reader__next(tr, &it)) > 0)
		if (it.type == TI_SCHED && !ftrace_line__parse(it.text, it.len, &fl))
			sched_line(b, &fl);
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(tr));
	trace_reader__close(tr);
	for (size_t i = 0; i < tl->nlanes; i++) {
		struct tl_lane *l = &tl->lanes[i];

		/* never switched in or woken: asleep throughout, as the report counts it */
		first_seen(l, TS_SLEEPING, b->r->start_ns);
		lane_state(&tl->w, l, TS_NONE, b->r->end_ns);
		tl__states(l->acc, l->states);
		free(l->acc);
		l->acc = NULL;
	}
	return ret < 0 ? ret : 0;
}

int timeline__build(struct timeline *tl, const char *path, const struct report *r,
		    const struct tl_window *window, char *err, size_t errlen)
{
	static const bool is_queue[256] = { [CAT_QUEUE] = true };
	struct build b = { .tl = tl, .r = r };
	int ret;

	memset(tl, 0, sizeof(*tl));
	tl->has_sched = r->has_sched;
	tl->max_spans = TL_MAX_SPANS;
	if (getenv("TRACER_TIMELINE_MAX_SPANS")) {
		long k;

		if (!parse_long(getenv("TRACER_TIMELINE_MAX_SPANS"), 1, TL_MAX_SPANS, &k))
			tl->max_spans = k;
	}
	tl->flows = xcalloc(TL_MAX_FLOWS, sizeof(*tl->flows));
	tl->counters = xcalloc(TL_MAX_COUNTERS, sizeof(*tl->counters));
	ret = make_lanes(&b);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (window) {
		tl->w = *window;
	} else {
		tl->chosen = true;
		ret = choose_window(&b, path, err, errlen);
		if (ret)
			goto out;
	}
	ret = read_events(&b, path, err, errlen);
	if (ret)
		goto out;
	for (size_t i = 0; i < tl->nlanes; i++) {
		struct tl_lane *l = &tl->lanes[i];

		l->depth = tl__nest(&tl->w, l->sp, l->nsp, l->rows);
		l->nq = tl__queue_union(l->sp, l->nsp, is_queue, &l->queue);
		free(l->sp);
		l->sp = NULL;
	}
	if (r->has_sched)
		ret = read_states(&b, path, err, errlen);
out:
	free(b.ix);
	free(b.busy);
	return ret;
}

void timeline__free(struct timeline *tl)
{
	for (size_t i = 0; i < tl->nlanes; i++) {
		free(tl->lanes[i].sp);
		free(tl->lanes[i].queue);
		free(tl->lanes[i].acc);
	}
	free(tl->lanes);
	free(tl->flows);
	free(tl->counters);
	memset(tl, 0, sizeof(*tl));
}
