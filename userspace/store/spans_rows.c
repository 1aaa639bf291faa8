// SPDX-License-Identifier: MIT
/* A trace file as ClickHouse rows. Pass 1 learns the thread and process names and the wall
 * clock of the trace's zero (t0_realtime_ns, from the "recording started" event or the
 * metadata); pass 2 writes the spans, pass 3 the scheduler states, pass 4 the counters
 * (queue depths), each in numbered batches. Rows keep file order, so a batch is the same rows whenever the file is read:
 * that is what lets a resent batch replace its first copy (ReplacingMergeTree). */
#include "store/spans_rows.h"
#include "analyze/report.h"
#include "trace/ftrace_line.h"
#include "trace/json_text.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <zlib.h>

#define sbuf rows_text /* the header's name for it */

static void sb_write(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = 2 * (b->len + n + 1);
		b->p = xrealloc(b->p, b->cap, 1);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_write(b, s, strlen(s));
}

static void sb_i64(struct sbuf *b, int64_t v)
{
	char t[32];

	sb_write(b, t, snprintf(t, sizeof(t), "%" PRId64, v));
}

/* "key":"escaped s" with a leading comma unless first */
static void sb_str(struct sbuf *b, const char *key, const char *s, size_t n)
{
	char *esc = xcalloc(1, 6 * n + 1);

	sb_puts(b, key[0] == '{' ? "{" : ",");
	sb_puts(b, key[0] == '{' ? key + 1 : key);
	sb_puts(b, ":\"");
	sb_write(b, esc, json_escape(esc, 6 * n + 1, s, n));
	sb_puts(b, "\"");
	free(esc);
}

static void sb_num(struct sbuf *b, const char *key, int64_t v)
{
	sb_puts(b, ",");
	sb_puts(b, key);
	sb_puts(b, ":");
	sb_i64(b, v);
}

struct pass1 {
	struct name *threads, *procs;
	int64_t t0_realtime;
};

void name_set(struct name **h, int64_t id, int64_t pid, const char *s)
{
	struct name *n;

	HASH_FIND(hh, *h, &id, sizeof(id), n);
	if (!n) {
		n = xcalloc(1, sizeof(*n));
		n->id = id;
		HASH_ADD(hh, *h, id, sizeof(n->id), n);
	}
	free(n->s);
	n->s = xstrdup(s);
	n->pid = pid;
}

const struct name *name_get(struct name *h, int64_t id)
{
	struct name *n;

	HASH_FIND(hh, h, &id, sizeof(id), n);
	return n;
}

void names_free(struct name **h)
{
	struct name *n, *tmp;

	HASH_ITER(hh, *h, n, tmp) {
		HASH_DEL(*h, n);
		free(n->s);
		free(n);
	}
}

/* t0_realtime_ns of a JSON object's text (the started event's args, the metadata). */
static void learn_t0(struct pass1 *p, const char *text, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(text, len), *v;

	v = cJSON_GetObjectItemCaseSensitive(o, "t0_realtime_ns");
	if (cJSON_IsNumber(v) && v->valuedouble > 0) {
		/* exact: cJSON's double would round the nanoseconds (text is not NUL-terminated,
		 * but the number ends inside it, at ',' or '}') */
		static const char key[] = "\"t0_realtime_ns\":";
		const char *at = memmem(text, len, key, sizeof(key) - 1);

		p->t0_realtime = at ? strtoll(at + sizeof(key) - 1, NULL, 10)
				    : (int64_t)v->valuedouble;
	}
	cJSON_Delete(o);
}

static int pass1(const char *path, struct pass1 *p, char *err, size_t errlen)
{
	struct trace_reader *r;
	struct trace_item it;
	int ret = trace_reader__open(&r, path, TR_EVENTS | TR_METADATA, err, errlen);

	if (ret)
		return ret;
	while ((ret = trace_reader__next(r, &it)) > 0) {
		const struct trace_event *ev = &it.ev;

		if (it.type == TI_METADATA) {
			learn_t0(p, it.text, it.len);
		} else if (ev->ph == 'M' && ev->arg_name && ev->has_pid) {
			if (!strcmp(ev->name, "thread_name") && ev->has_tid)
				name_set(&p->threads, ev->tid, ev->pid, ev->arg_name);
			else if (!strcmp(ev->name, "process_name"))
				name_set(&p->procs, ev->pid, ev->pid, ev->arg_name);
		} else if (ev->ph == 'i' && !strcmp(ev->name, "recording started") &&
			   ev->args_at.len && !p->t0_realtime) {
			learn_t0(p, ev->text + ev->args_at.off, ev->args_at.len);
		}
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	trace_reader__close(r);
	return ret < 0 ? ret : 0;
}

struct batcher {
	const char *table;
	struct sbuf b;
	uint32_t seq, n;
	size_t max;
	rows_sink sink;
	void *arg;
	uint64_t *batches;
};

static int flush(struct batcher *x)
{
	int ret = 0;

	if (x->n) {
		ret = x->sink(x->arg, x->table, x->seq++, x->b.p, x->b.len, x->n);
		(*x->batches)++;
	}
	x->b.len = 0;
	x->n = 0;
	return ret;
}

static int row_done(struct batcher *x)
{
	return ++x->n >= x->max ? flush(x) : 0;
}

/* The Python function that made a native span, as the recorder writes it in its args
 * ("py": qualname, "py_line": file:line; python/py_session.c): "qualname (file:line)". */
static void py_caller(const struct trace_event *ev, struct sbuf *b)
{
	const char *args = ev->text + ev->args_at.off;
	/* most spans have no Python caller: parse only the args that may name one */
	cJSON *o = ev->args_at.len && memmem(args, ev->args_at.len, "\"py\"", 4)
			   ? cJSON_ParseWithLength(args, ev->args_at.len)
			   : NULL;
	cJSON *py = cJSON_GetObjectItemCaseSensitive(o, "py");
	cJSON *line = cJSON_GetObjectItemCaseSensitive(o, "py_line");
	char *s = NULL;

	if (cJSON_IsString(py) &&
	    asprintf(&s, "%s%s%s%s", py->valuestring, cJSON_IsString(line) ? " (" : "",
		     cJSON_IsString(line) ? line->valuestring : "",
		     cJSON_IsString(line) ? ")" : "") < 0)
		s = NULL;
	sb_str(b, "\"py_caller\"", s ? s : "", s ? strlen(s) : 0);
	free(s);
	cJSON_Delete(o);
}

void spans_rows__span(struct rows_text *b, const char *id, const char *host, uint32_t seq,
		      uint32_t row, const struct trace_event *ev, uint32_t depth,
		      const char *thread, const char *process, int64_t t0_realtime, char **clean,
		      size_t *cap)
{
	const char *args = ev->args_at.len ? ev->text + ev->args_at.off : "";

	sb_str(b, "{\"recording_id\"", id, strlen(id));
	sb_num(b, "\"seq\"", seq);
	sb_num(b, "\"row\"", row);
	sb_str(b, "\"host\"", host, strlen(host));
	sb_num(b, "\"pid\"", ev->has_pid ? ev->pid : 0);
	sb_num(b, "\"tid\"", ev->has_tid ? ev->tid : 0);
	sb_str(b, "\"thread\"", thread, strlen(thread));
	sb_str(b, "\"process\"", process, strlen(process));
	sb_str(b, "\"name\"", ev->name, strlen(ev->name));
	sb_str(b, "\"category\"", ev->cat, strlen(ev->cat));
	sb_num(b, "\"start_ns\"", t0_realtime + ev->ts_ns);
	sb_num(b, "\"dur_ns\"", ev->dur_ns);
	sb_num(b, "\"depth\"", depth);
	/* args as JSON text inside a string */
	if (6 * ev->args_at.len + 1 > *cap) {
		*cap = 6 * ev->args_at.len + 1;
		*clean = xrealloc(*clean, *cap, 1);
	}
	(*clean)[json_clean(*clean, args, ev->args_at.len)] = 0;
	sb_str(b, "\"args\"", *clean, strlen(*clean));
	py_caller(ev, b);
	sb_puts(b, "}\n");
}

/* A span of the file for nesting: its thread and place. */
struct nest_item {
	int64_t pid, tid;
	struct span_iv iv;
};

static int by_thread_then_order(const void *x, const void *y)
{
	const struct nest_item *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return spans_rows__before(&a->iv, &b->iv) ? -1 : spans_rows__before(&b->iv, &a->iv);
}

/* Every span's nesting depth in its thread (spans_rows.h), by its place among the file's
 * spans, in *depth: each thread's spans sorted, then a stack of the ones still open. */
static int span_depths(const char *path, uint32_t **depth, char *err, size_t errlen)
{
	struct trace_reader *r;
	struct trace_item it;
	struct nest_item *v = NULL;
	int64_t *open = NULL;
	size_t n = 0, cap = 0, nopen = 0, ocap = 0;
	int ret = trace_reader__open(&r, path, TR_EVENTS, err, errlen);

	if (ret)
		return ret;
	while ((ret = trace_reader__next(r, &it)) > 0) {
		const struct trace_event *ev = &it.ev;

		if (ev->ph != 'X' || !ev->has_ts || !ev->has_dur)
			continue; /* as spans() below: the same spans, the same order */
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			v = xrealloc(v, cap, sizeof(*v));
		}
		v[n] = (struct nest_item){ ev->has_pid ? ev->pid : 0, ev->has_tid ? ev->tid : 0,
					   { ev->ts_ns, ev->ts_ns + ev->dur_ns, n } };
		n++;
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	trace_reader__close(r);
	if (ret < 0) {
		free(v);
		return ret;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_thread_then_order);
	*depth = xcalloc(n ? n : 1, sizeof(**depth));
	for (size_t i = 0; i < n; i++) {
		if (i && (v[i].pid != v[i - 1].pid || v[i].tid != v[i - 1].tid))
			nopen = 0; /* another thread */
		while (nopen && open[nopen - 1] <= v[i].iv.s)
			nopen--;
		(*depth)[v[i].iv.idx] = nopen;
		if (nopen == ocap) {
			ocap = ocap ? 2 * ocap : 64;
			open = xrealloc(open, ocap, sizeof(*open));
		}
		open[nopen++] = v[i].iv.e;
	}
	free(open);
	free(v);
	return 0;
}

static int spans(const char *path, const char *id, const char *host, struct pass1 *p,
		 struct batcher *x, struct rows_totals *t, char *err, size_t errlen)
{
	struct trace_reader *r;
	struct trace_item it;
	uint32_t *depth = NULL;
	int ret = span_depths(path, &depth, err, errlen), sret = 0;
	char *clean = NULL;
	size_t cap = 0;

	if (!ret && (ret = trace_reader__open(&r, path, TR_EVENTS, err, errlen)))
		free(depth);
	if (ret)
		return ret;
	while (!sret && (ret = trace_reader__next(r, &it)) > 0) {
		const struct trace_event *ev = &it.ev;
		const struct name *th, *pr;

		if (ev->ph != 'X' || !ev->has_ts || !ev->has_dur)
			continue;
		th = ev->has_tid ? name_get(p->threads, ev->tid) : NULL;
		pr = ev->has_pid ? name_get(p->procs, ev->pid) : NULL;
		spans_rows__span(&x->b, id, host, x->seq, x->n, ev, depth[t->spans],
				 th ? th->s : "", pr ? pr->s : "", p->t0_realtime, &clean, &cap);
		t->spans++;
		sret = row_done(x);
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	t->truncated = trace_reader__truncated(r);
	trace_reader__close(r);
	free(clean);
	free(depth);
	if (!sret && ret >= 0)
		sret = flush(x);
	return ret < 0 ? ret : sret;
}

/* A thread's scheduler state since a time, from the sched_switch/wakeup lines. */
struct tstate {
	int64_t tid, pid, since;
	const char *state; /* NULL: not known yet */
	UT_hash_handle hh;
};

void spans_rows__state(struct rows_text *b, const char *id, const char *host, uint32_t seq,
		       uint32_t row, int64_t pid, int64_t tid, const char *thread,
		       const char *state, int64_t start_ns, int64_t dur_ns)
{
	sb_str(b, "{\"recording_id\"", id, strlen(id));
	sb_num(b, "\"seq\"", seq);
	sb_num(b, "\"row\"", row);
	sb_str(b, "\"host\"", host, strlen(host));
	sb_num(b, "\"pid\"", pid);
	sb_num(b, "\"tid\"", tid);
	sb_str(b, "\"thread\"", thread, strlen(thread));
	sb_str(b, "\"state\"", state, strlen(state));
	sb_num(b, "\"start_ns\"", start_ns);
	sb_num(b, "\"dur_ns\"", dur_ns);
	sb_puts(b, "}\n");
}

void spans_rows__counter(struct rows_text *b, const char *id, const char *host, uint32_t seq,
			 uint32_t row, int64_t pid, const char *name, const char *key,
			 int64_t start_ns, double value)
{
	char num[64];

	sb_str(b, "{\"recording_id\"", id, strlen(id));
	sb_num(b, "\"seq\"", seq);
	sb_num(b, "\"row\"", row);
	sb_str(b, "\"host\"", host, strlen(host));
	sb_num(b, "\"pid\"", pid);
	sb_str(b, "\"name\"", name, strlen(name));
	sb_str(b, "\"key\"", key, strlen(key));
	sb_num(b, "\"start_ns\"", start_ns);
	snprintf(num, sizeof(num), ",\"value\":%.17g}\n", value);
	sb_puts(b, num);
}

static int state_close(struct tstate *s, int64_t now, const char *next, state_emit emit,
		       void *arg)
{
	int ret = 0;

	if (s->state && now > s->since)
		ret = emit(arg, s->tid, s->pid, s->state, s->since, now);
	s->state = next;
	s->since = now;
	return ret;
}

static struct tstate *tstate_get(struct sched_states *st, int64_t tid)
{
	struct tstate *h = st->threads, *s;

	HASH_FIND(hh, h, &tid, sizeof(tid), s);
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		s->tid = tid;
		s->pid = -1;
		HASH_ADD(hh, h, tid, sizeof(s->tid), s);
		st->threads = h;
	}
	return s;
}

static const char *switched_out(const char *prev_state)
{
	switch (prev_state[0]) {
	case 'R':
		return "runnable";
	case 'D':
		return "blocked";
	case 'S':
		return "sleeping";
	default:
		return NULL; /* dead, stopped: no interval follows */
	}
}

int sched_states__line(struct sched_states *st, const char *text, size_t len, state_emit emit,
		       void *arg)
{
	struct ftrace_line l;
	struct tstate *s;
	int ret = 0;

	if (ftrace_line__parse(text, len, &l))
		return 0;
	if (l.kind == FT_SWITCH) {
		if (l.prev_tid > 0) {
			s = tstate_get(st, l.prev_tid);
			if (l.tgid > 0)
				s->pid = l.tgid;
			ret = state_close(s, l.ts_ns, switched_out(l.prev_state), emit, arg);
		}
		if (!ret && l.next_tid > 0)
			ret = state_close(tstate_get(st, l.next_tid), l.ts_ns, "running", emit, arg);
	} else if (l.kind != FT_OTHER && l.woken_tid > 0) {
		s = tstate_get(st, l.woken_tid);
		if (!s->state || !strcmp(s->state, "sleeping") || !strcmp(s->state, "blocked"))
			ret = state_close(s, l.ts_ns, "runnable", emit, arg);
	}
	return ret;
}

void sched_states__free(struct sched_states *st)
{
	struct tstate *h = st->threads, *s, *tmp;

	HASH_ITER(hh, h, s, tmp) { /* the last state of each thread has no end: left out */
		HASH_DEL(h, s);
		free(s);
	}
	st->threads = NULL;
}

struct states_walk {
	struct batcher *x;
	const char *id, *host;
	struct pass1 *p;
	struct rows_totals *t;
};

static int state_row(void *arg, int64_t tid, int64_t pid, const char *state, int64_t since,
		     int64_t now)
{
	struct states_walk *w = arg;
	const struct name *th = name_get(w->p->threads, tid);

	spans_rows__state(&w->x->b, w->id, w->host, w->x->seq, w->x->n, th ? th->pid : pid, tid,
			  th ? th->s : "", state, w->p->t0_realtime + since, now - since);
	w->t->states++;
	return row_done(w->x);
}

static int states(const char *path, const char *id, const char *host, struct pass1 *p,
		  struct batcher *x, struct rows_totals *t, char *err, size_t errlen)
{
	struct sched_states st = { 0 };
	struct states_walk w = { x, id, host, p, t };
	struct trace_reader *r;
	struct trace_item it;
	int ret = trace_reader__open(&r, path, TR_SCHED, err, errlen), sret = 0;

	if (ret)
		return ret;
	while (!sret && (ret = trace_reader__next(r, &it)) > 0)
		sret = sched_states__line(&st, it.text, it.len, state_row, &w);
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	trace_reader__close(r);
	sched_states__free(&st);
	if (!sret && ret >= 0)
		sret = flush(x);
	return ret < 0 ? ret : sret;
}

/* Counter events (queue depths): one row per key of their args. */
static int counters(const char *path, const char *id, const char *host, struct pass1 *p,
		    struct batcher *x, struct rows_totals *t, char *err, size_t errlen)
{
	struct trace_reader *r;
	struct trace_item it;
	int ret = trace_reader__open(&r, path, TR_EVENTS, err, errlen), sret = 0;

	if (ret)
		return ret;
	while (!sret && (ret = trace_reader__next(r, &it)) > 0) {
		const struct trace_event *ev = &it.ev;
		cJSON *args, *v;

		if (ev->ph != 'C' || !ev->has_ts || !ev->args_at.len)
			continue;
		args = cJSON_ParseWithLength(ev->text + ev->args_at.off, ev->args_at.len);
		cJSON_ArrayForEach(v, args) {
			if (!cJSON_IsNumber(v) || !v->string || sret)
				continue;
			spans_rows__counter(&x->b, id, host, x->seq, x->n, ev->has_pid ? ev->pid : 0,
					    ev->name, v->string, p->t0_realtime + ev->ts_ns,
					    v->valuedouble);
			t->counters++;
			sret = row_done(x);
		}
		cJSON_Delete(args);
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	trace_reader__close(r);
	if (!sret && ret >= 0)
		sret = flush(x);
	return ret < 0 ? ret : sret;
}

int spans_rows__id(const char *path, const char *host, char id[17], char *err, size_t errlen)
{
	gzFile f = gzopen(path, "rb");
	char buf[4096];
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	int n;

	if (!f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno ? errno : ENOMEM));
		return -ENOENT;
	}
	n = gzread(f, buf, sizeof(buf));
	gzclose(f);
	if (n < 0) {
		snprintf(err, errlen, "cannot read %s", path);
		return -EIO;
	}
	for (const char *s = host; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	h = (h ^ 0) * 1099511628211ull;
	for (int i = 0; i < n; i++)
		h = (h ^ (uint8_t)buf[i]) * 1099511628211ull;
	snprintf(id, 17, "%016" PRIx64, h);
	return 0;
}

int spans_rows__walk(const char *path, const char *id, const char *host, size_t batch_rows,
		     rows_sink sink, void *arg, struct rows_totals *t, char *err, size_t errlen)
{
	struct pass1 p = { 0 };
	struct batcher x = { .max = batch_rows, .sink = sink, .arg = arg, .batches = &t->batches };
	int ret;

	memset(t, 0, sizeof(*t));
	ret = pass1(path, &p, err, errlen);
	if (!ret) {
		x.table = "tracer_spans";
		ret = spans(path, id, host, &p, &x, t, err, errlen);
	}
	if (!ret) {
		x.table = "tracer_states";
		x.seq = 0;
		ret = states(path, id, host, &p, &x, t, err, errlen);
	}
	if (!ret) {
		x.table = "tracer_counters";
		x.seq = 0;
		ret = counters(path, id, host, &p, &x, t, err, errlen);
	}
	free(x.b.p);
	names_free(&p.threads);
	names_free(&p.procs);
	return ret;
}

/* Identity and counts from the metadata (absent in a cut file: then from the started event). */
static void from_meta(cJSON *row, cJSON *meta, int64_t *t0, uint64_t *dur)
{
	cJSON *v, *a, *out;
	uint64_t lost = 0;

	v = cJSON_GetObjectItemCaseSensitive(meta, "command_line");
	cJSON_AddStringToObject(row, "command_line", cJSON_IsString(v) ? v->valuestring : "");
	v = cJSON_GetObjectItemCaseSensitive(meta, "boot_id");
	cJSON_AddStringToObject(row, "boot_id", cJSON_IsString(v) ? v->valuestring : "");
	v = cJSON_GetObjectItemCaseSensitive(meta, "duration_ns");
	if (cJSON_IsNumber(v))
		*dur = (uint64_t)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(meta, "t0_realtime_ns");
	if (cJSON_IsNumber(v) && !*t0)
		*t0 = (int64_t)v->valuedouble;
	out = cJSON_AddArrayToObject(row, "processes");
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(meta, "targets")) {
		v = cJSON_GetObjectItemCaseSensitive(a, "comm");
		if (cJSON_IsString(v))
			cJSON_AddItemToArray(out, cJSON_CreateString(v->valuestring));
	}
	out = cJSON_AddArrayToObject(row, "packs");
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(meta, "packs"))
		if (cJSON_IsString(a))
			cJSON_AddItemToArray(out, cJSON_CreateString(a->valuestring));
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(meta, "counts"))
		if (a->string && !strncmp(a->string, "lost_", 5) && cJSON_IsNumber(a))
			lost += (uint64_t)a->valuedouble;
	cJSON_AddNumberToObject(row, "lost", lost);
	v = cJSON_GetObjectItemCaseSensitive(meta, "overhead");
	{
		char *s = v ? cJSON_PrintUnformatted(v) : NULL;

		cJSON_AddStringToObject(row, "overhead", s ? s : "");
		free(s);
	}
}

#define HOST_LOOKAHEAD 64 /* events: the "recording started" one comes first or nearly */

int spans_rows__host(const char *path, char *host, size_t len)
{
	struct trace_reader *r;
	struct trace_item it;
	char err[256];
	int ret = -ENOENT, n = 0;

	if (trace_reader__open(&r, path, TR_EVENTS, err, sizeof(err)))
		return -ENOENT;
	while (n++ < HOST_LOOKAHEAD && trace_reader__next(r, &it) > 0) {
		cJSON *args, *h;

		if (it.type != TI_EVENT || it.ev.ph != 'i' || strcmp(it.ev.name, "recording started") ||
		    !it.ev.args_at.len)
			continue;
		args = cJSON_ParseWithLength(it.ev.text + it.ev.args_at.off, it.ev.args_at.len);
		h = cJSON_GetObjectItemCaseSensitive(args, "host");
		if (cJSON_IsString(h) && h->valuestring[0]) {
			snprintf(host, len, "%s", h->valuestring);
			ret = 0;
		}
		cJSON_Delete(args);
		break;
	}
	trace_reader__close(r);
	return ret;
}

/* The metadata object, else the started event's args, else an empty object; and the exact
 * t0_realtime_ns. */
static cJSON *read_meta(const char *path, int64_t *t0, char *err, size_t errlen)
{
	struct trace_reader *r;
	struct trace_item it;
	struct pass1 p = { 0 };
	cJSON *meta = NULL, *started = NULL;
	int ret = trace_reader__open(&r, path, TR_EVENTS | TR_METADATA, err, errlen);

	if (ret)
		return NULL;
	while ((ret = trace_reader__next(r, &it)) > 0) {
		if (it.type == TI_METADATA && !meta) {
			meta = cJSON_ParseWithLength(it.text, it.len);
			learn_t0(&p, it.text, it.len);
		} else if (it.type == TI_EVENT && it.ev.ph == 'i' && !started &&
			   !strcmp(it.ev.name, "recording started") && it.ev.args_at.len) {
			started = cJSON_ParseWithLength(it.ev.text + it.ev.args_at.off,
							it.ev.args_at.len);
			learn_t0(&p, it.ev.text + it.ev.args_at.off, it.ev.args_at.len);
		}
	}
	trace_reader__close(r);
	*t0 = p.t0_realtime;
	if (meta) {
		cJSON_Delete(started);
		return meta;
	}
	return started ? started : cJSON_CreateObject();
}

int spans_rows__recording(const char *path, const char *id, const char *host,
			  const struct rows_totals *t, char **row, char *err, size_t errlen)
{
	struct report_opts o = { .path = path, .by = BY_NAME, .format = FMT_TABLE, .top = -1 };
	struct report rep = { 0 };
	cJSON *r, *meta, *names, *threads, *run, *rnb, *q, *blk, *idle;
	int64_t t0 = 0;
	uint64_t dur = 0;
	int ret;

	ret = report__run(&rep, &o, err, errlen);
	if (ret) {
		report__free(&rep);
		return ret;
	}
	meta = read_meta(path, &t0, err, errlen);
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "recording_id", id);
	cJSON_AddStringToObject(r, "host", host);
	from_meta(r, meta, &t0, &dur);
	if (!dur && rep.end_ns > rep.start_ns)
		dur = rep.end_ns; /* a cut file: up to its last event */
	cJSON_AddNumberToObject(r, "start_ns", (double)t0); /* rewritten exactly below */
	cJSON_AddNumberToObject(r, "duration_ns", (double)dur);
	cJSON_AddNumberToObject(r, "spans", (double)t->spans);
	cJSON_AddNumberToObject(r, "states", (double)t->states);
	cJSON_AddNumberToObject(r, "counters", (double)t->counters);
	cJSON_AddNumberToObject(r, "rows", (double)(t->spans + t->states));
	cJSON_AddStringToObject(r, "verdict", rep.verdict);
	/* the stage the verdict names: "bottleneck: decode[*] ..." -> "decode[*]"; the busiest
	 * stage when the verdict names none */
	{
		char b[STAGE_NAME_LEN] = "";

		for (size_t i = 0; i < rep.nstages; i++)
			if (strstr(rep.verdict, rep.stages[i].name) &&
			    strlen(rep.stages[i].name) > strlen(b))
				snprintf(b, sizeof(b), "%s", rep.stages[i].name);
		cJSON_AddStringToObject(r, "bottleneck", b);
	}
	names = cJSON_AddArrayToObject(r, "stages.name");
	threads = cJSON_AddArrayToObject(r, "stages.threads");
	run = cJSON_AddArrayToObject(r, "stages.running");
	rnb = cJSON_AddArrayToObject(r, "stages.runnable");
	q = cJSON_AddArrayToObject(r, "stages.queue");
	blk = cJSON_AddArrayToObject(r, "stages.blocked");
	idle = cJSON_AddArrayToObject(r, "stages.idle");
	for (size_t i = 0; i < rep.nstages; i++) {
		const struct stage_stats *s = &rep.stages[i];

		cJSON_AddItemToArray(names, cJSON_CreateString(s->name));
		cJSON_AddItemToArray(threads, cJSON_CreateNumber(s->threads));
		cJSON_AddItemToArray(run, cJSON_CreateNumber(stage__share(s, s->running_ns)));
		cJSON_AddItemToArray(rnb, cJSON_CreateNumber(stage__share(s, s->runnable_ns)));
		cJSON_AddItemToArray(q, cJSON_CreateNumber(stage__share(s, s->queue_wait_ns)));
		cJSON_AddItemToArray(blk, cJSON_CreateNumber(stage__share(s, s->blocked_ns)));
		cJSON_AddItemToArray(idle, cJSON_CreateNumber(stage__share(s, s->idle_ns)));
	}
	{
		char exact[32];

		snprintf(exact, sizeof(exact), "%" PRId64, t0);
		cJSON_ReplaceItemInObjectCaseSensitive(r, "start_ns", cJSON_CreateRaw(exact));
	}
	*row = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	cJSON_Delete(meta);
	report__free(&rep);
	return *row ? 0 : -ENOMEM;
}
