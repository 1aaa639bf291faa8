// SPDX-License-Identifier: MIT
/* Rows into ClickHouse while recording (store/stream.h). Each table's rows are numbered as
 * spans_rows.c numbers them — spans and counter values in file order, thread states in the
 * order the scheduler lines close them, BATCH_ROWS to a batch — and each second the rows added
 * to a batch since the last send go out: a part of a batch has the keys the whole batch has,
 * so sending the whole later (the push at the end) replaces it.
 *
 * A span is written when it ends, before the spans that enclose it: it waits until the trace
 * is HOLD_NS past its end, so that its depth counts the enclosing spans written by then. */
#include "store/stream.h"
#include "store/clickhouse.h"
#include "store/spans_rows.h"
#include "trace/json_value.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#define BATCH_ROWS 10000 /* as tracer push's default: the same keys */
#define READ_CHUNK (1u << 20)
#define HOLD_NS 1000000000LL	 /* a span waits this long of trace time after its end */
#define PENDING_MAX (4 * BATCH_ROWS) /* spans waiting: past this a batch goes anyway */

/* One table's batches on their way: the first is number seq0; all but the last are whole. */
struct lbatch {
	struct rows_text t;
	uint32_t n;
	size_t sent; /* bytes of t already in ClickHouse */
};

struct ltable {
	const char *name;
	struct lbatch *b;
	size_t nb;
	uint32_t seq0;
	uint64_t rows; /* sent */
};

/* A file read behind its writer, line by line. */
struct source {
	int fd;
	off_t off;
	struct rows_text line; /* a line not yet complete */
};

/* A span read, waiting for its depth: the event as read, over its own copy of the line. */
struct pending {
	struct trace_event ev; /* text, name, cat: owned */
	int64_t pid, tid;
	struct span_iv iv;
};

/* A thread's spans read lately: what may enclose a span still waiting. */
struct recent {
	int64_t key[2]; /* pid, tid */
	struct span_iv *v;
	size_t n, cap;
	UT_hash_handle hh;
};

struct stream {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	char *path, *url;
	char host[256], id[17];
	bool have_id, connected, said;
	struct ch_conn c;
	struct source main, sched;
	bool ended; /* the traceEvents array is closed */
	struct ltable spans, states, counters;
	struct pending *pend;
	size_t phead, pn, pcap; /* pend[phead .. pn) wait */
	struct recent *recent;
	uint64_t nspans;  /* span events read: the next one's place in file order */
	int64_t progress; /* the latest time the trace's events reached, as read (the scheduler
			   * text is read apart: a span's parent may not be read yet) */
	struct sched_states st;
	int64_t t0;
	struct name *threads, *procs;
	char *clean;
	size_t cap;
};

static const char *name_of(struct name *h, int64_t id)
{
	const struct name *n = name_get(h, id);

	return n ? n->s : "";
}

/* Where the next row of t goes: its batch's text, number and place. */
static struct rows_text *row_slot(struct ltable *t, uint32_t *seq, uint32_t *row)
{
	struct lbatch *b;

	if (!t->nb || t->b[t->nb - 1].n == BATCH_ROWS) {
		t->b = xrealloc(t->b, t->nb + 1, sizeof(*t->b));
		t->b[t->nb++] = (struct lbatch){ 0 };
	}
	b = &t->b[t->nb - 1];
	*seq = t->seq0 + t->nb - 1;
	*row = b->n++;
	return &b->t;
}

/* A whole batch waits to be sent: read no further for this table. */
static bool blocked(const struct ltable *t)
{
	return t->nb > 1 || (t->nb == 1 && t->b[0].n == BATCH_ROWS);
}

static void table_free(struct ltable *t)
{
	for (size_t i = 0; i < t->nb; i++)
		free(t->b[i].t.p);
	free(t->b);
}

/* A time in microseconds as the writer prints it ("1234.567") in exact nanoseconds, as the
 * trace reader reads it. false if key is absent. */
static bool us_at(const char *text, size_t len, const char *key, int64_t *ns)
{
	const char *at = memmem(text, len, key, strlen(key)), *p;
	int64_t v = 0, frac = 0;
	int digits = 0;

	if (!at)
		return false;
	p = at + strlen(key);
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (digits < 3) {
				frac = frac * 10 + (*p - '0');
				digits++;
			}
	while (digits++ < 3)
		frac *= 10;
	*ns = v * 1000 + frac;
	return true;
}

static int64_t num_of(const cJSON *o, const char *key, bool *has)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*has = cJSON_IsNumber(v);
	return *has ? (int64_t)v->valuedouble : 0;
}

/* One event line (no trailing comma) as the trace reader would read it; the returned object
 * holds its strings (NULL: not an event). */
static cJSON *parse_event(const char *l, size_t len, struct trace_event *ev)
{
	cJSON *o = cJSON_ParseWithLength(l, len), *v;
	const char *at;
	size_t alen;

	*ev = (struct trace_event){ .text = l, .len = len };
	if (!o)
		return NULL;
	v = cJSON_GetObjectItemCaseSensitive(o, "ph");
	ev->ph = cJSON_IsString(v) ? v->valuestring[0] : 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "name");
	ev->name = cJSON_IsString(v) ? v->valuestring : "";
	v = cJSON_GetObjectItemCaseSensitive(o, "cat");
	ev->cat = cJSON_IsString(v) ? v->valuestring : "";
	ev->pid = num_of(o, "pid", &ev->has_pid);
	ev->tid = num_of(o, "tid", &ev->has_tid);
	ev->has_ts = us_at(l, len, "\"ts\":", &ev->ts_ns);
	ev->has_dur = us_at(l, len, "\"dur\":", &ev->dur_ns);
	at = memmem(l, len, "\"args\":", 7);
	if (at && (alen = json_value_len(at + 7, len - (at + 7 - l)))) {
		ev->args_at.off = at + 7 - l;
		ev->args_at.len = alen;
	}
	return o;
}

static struct recent *recent_of(struct stream *s, int64_t pid, int64_t tid)
{
	int64_t key[2] = { pid, tid };
	struct recent *r;

	HASH_FIND(hh, s->recent, key, sizeof(key), r);
	if (!r) {
		r = xcalloc(1, sizeof(*r));
		memcpy(r->key, key, sizeof(key));
		HASH_ADD(hh, s->recent, key, sizeof(r->key), r);
	}
	return r;
}

static void pending_free(struct pending *p)
{
	free((char *)p->ev.text);
	free((char *)p->ev.name);
	free((char *)p->ev.cat);
}

static void on_span(struct stream *s, const char *l, size_t len, const struct trace_event *ev)
{
	struct pending *p;
	struct recent *r = recent_of(s, ev->has_pid ? ev->pid : 0, ev->has_tid ? ev->tid : 0);

	if (s->pn == s->pcap) {
		s->pcap = s->pcap ? 2 * s->pcap : 256;
		s->pend = xrealloc(s->pend, s->pcap, sizeof(*s->pend));
	}
	p = &s->pend[s->pn++];
	p->ev = *ev;
	p->ev.text = memcpy(xcalloc(1, len + 1), l, len);
	p->ev.name = xstrdup(ev->name);
	p->ev.cat = xstrdup(ev->cat);
	p->pid = r->key[0];
	p->tid = r->key[1];
	p->iv = (struct span_iv){ ev->ts_ns, ev->ts_ns + ev->dur_ns, s->nspans++ };
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = xrealloc(r->v, r->cap, sizeof(*r->v));
	}
	r->v[r->n++] = p->iv;
	if (p->iv.e > s->progress)
		s->progress = p->iv.e;
}

/* A counter event (a queue depth): one row per key, as push makes them. */
static void on_counter(struct stream *s, const char *l, const struct trace_event *ev)
{
	cJSON *args, *v;
	uint32_t seq, row;

	if (!ev->has_ts || !ev->args_at.len)
		return;
	args = cJSON_ParseWithLength(l + ev->args_at.off, ev->args_at.len);
	cJSON_ArrayForEach(v, args) {
		struct rows_text *b;

		if (!cJSON_IsNumber(v) || !v->string)
			continue;
		b = row_slot(&s->counters, &seq, &row);
		spans_rows__counter(b, s->id, s->host, seq, row, ev->has_pid ? ev->pid : 0, ev->name,
				    v->string, s->t0 + ev->ts_ns, v->valuedouble);
	}
	cJSON_Delete(args);
	if (ev->ts_ns > s->progress)
		s->progress = ev->ts_ns;
}

/* One line of the trace's event array: spans wait for their depth, counter values become
 * rows, names and the clock's zero are learnt. */
static void on_main_line(struct stream *s, const char *l, size_t len)
{
	struct trace_event ev;
	cJSON *o, *args;

	if (len && l[len - 1] == ',')
		len--;
	if (len < 2 || l[0] != '{') {
		if (len && l[0] == ']')
			s->ended = true;
		return;
	}
	o = parse_event(l, len, &ev);
	if (!o)
		return;
	args = cJSON_GetObjectItemCaseSensitive(o, "args");
	if (ev.ph == 'M' && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "name"))) {
		const char *n = cJSON_GetObjectItemCaseSensitive(args, "name")->valuestring;

		if (!strcmp(ev.name, "thread_name") && ev.has_tid)
			name_set(&s->threads, ev.tid, ev.pid, n);
		else if (!strcmp(ev.name, "process_name") && ev.has_pid)
			name_set(&s->procs, ev.pid, ev.pid, n);
	} else if (ev.ph == 'i' && !strcmp(ev.name, "recording started") && !s->t0) {
		static const char key[] = "\"t0_realtime_ns\":";
		const char *at = memmem(l, len, key, sizeof(key) - 1);

		if (at)
			s->t0 = strtoll(at + sizeof(key) - 1, NULL, 10);
	} else if (ev.ph == 'X' && ev.has_ts && ev.has_dur) {
		on_span(s, l, len, &ev);
	} else if (ev.ph == 'C') {
		on_counter(s, l, &ev);
	}
	cJSON_Delete(o);
}

static int on_state(void *arg, int64_t tid, int64_t pid, const char *state, int64_t since,
		    int64_t now)
{
	struct stream *s = arg;
	const struct name *th = name_get(s->threads, tid);
	uint32_t seq, row;
	struct rows_text *b = row_slot(&s->states, &seq, &row);

	spans_rows__state(b, s->id, s->host, seq, row, th ? th->pid : pid, tid, th ? th->s : "",
			  state, s->t0 + since, now - since);
	return 0;
}

static void on_sched_line(struct stream *s, const char *l, size_t len)
{
	sched_states__line(&s->st, l, len, on_state, s);
}

static bool main_room(const struct stream *s)
{
	return !s->ended && !blocked(&s->counters) && s->pn - s->phead < PENDING_MAX;
}

static bool sched_room(const struct stream *s)
{
	return !blocked(&s->states);
}

/* Reads the whole lines src's writer added while room() says so. The bytes read. */
static size_t read_lines(struct stream *s, struct source *src,
			 void (*on)(struct stream *, const char *, size_t),
			 bool (*room)(const struct stream *))
{
	char *buf = xcalloc(1, READ_CHUNK);
	size_t total = 0;
	ssize_t got;

	while (src->fd >= 0 && room(s) && (got = pread(src->fd, buf, READ_CHUNK, src->off)) > 0) {
		size_t i = 0;

		while (i < (size_t)got && room(s)) {
			char *nl = memchr(buf + i, '\n', got - i);
			size_t n = nl ? (size_t)(nl - (buf + i)) : got - i;

			if (src->line.len + n + 1 > src->line.cap) {
				src->line.cap = 2 * (src->line.len + n + 1);
				src->line.p = xrealloc(src->line.p, src->line.cap, 1);
			}
			memcpy(src->line.p + src->line.len, buf + i, n);
			src->line.len += n;
			i += n;
			if (!nl)
				break;
			i++; /* the newline */
			on(s, src->line.p, src->line.len);
			src->line.len = 0;
		}
		src->off += i;
		total += i;
	}
	free(buf);
	return total;
}

static int by_nesting(const void *x, const void *y)
{
	const struct span_iv *a = x, *b = y;

	return spans_rows__before(a, b) ? -1 : spans_rows__before(b, a);
}

/* The depths of the spans first .. first + n - 1 (file order) about to go, in dep: each
 * thread's spans read so far nested as push nests the whole file's (spans_rows.h). */
static void depths(struct stream *s, uint64_t first, size_t n, uint32_t *dep)
{
	struct span_iv *v = NULL;
	int64_t *open = NULL;
	size_t vcap = 0, ocap = 0;
	struct recent *r, *tmp;

	HASH_ITER(hh, s->recent, r, tmp) {
		size_t nopen = 0;
		bool any = false;

		for (size_t i = 0; i < r->n && !any; i++)
			any = r->v[i].idx >= first && r->v[i].idx < first + n;
		if (!any)
			continue;
		if (r->n > vcap) {
			vcap = r->n;
			v = xrealloc(v, vcap, sizeof(*v));
		}
		memcpy(v, r->v, r->n * sizeof(*v));
		qsort(v, r->n, sizeof(*v), by_nesting);
		for (size_t i = 0; i < r->n; i++) {
			while (nopen && open[nopen - 1] <= v[i].s)
				nopen--;
			if (v[i].idx >= first && v[i].idx < first + n)
				dep[v[i].idx - first] = nopen;
			if (nopen == ocap) {
				ocap = ocap ? 2 * ocap : 64;
				open = xrealloc(open, ocap, sizeof(*open));
			}
			open[nopen++] = v[i].e;
		}
	}
	free(open);
	free(v);
}

/* Spans whose wait is over become rows, in file order, as many as the current batch takes.
 * The rows made. */
static size_t release(struct stream *s)
{
	const struct lbatch *last = s->spans.nb ? &s->spans.b[s->spans.nb - 1] : NULL;
	size_t room = !last ? BATCH_ROWS : last->n == BATCH_ROWS ? 0 : BATCH_ROWS - last->n;
	bool full = s->pn - s->phead >= PENDING_MAX; /* a batch's worth goes, whatever waits */
	size_t n = 0;
	uint32_t *dep;

	while (n < room && s->phead + n < s->pn &&
	       (full || s->pend[s->phead + n].iv.e + HOLD_NS <= s->progress))
		n++;
	if (!n)
		return 0;
	dep = xcalloc(n, sizeof(*dep));
	depths(s, s->pend[s->phead].iv.idx, n, dep);
	for (size_t k = 0; k < n; k++) {
		struct pending *p = &s->pend[s->phead++];
		struct rows_text *b;
		uint32_t seq, row;

		b = row_slot(&s->spans, &seq, &row);
		spans_rows__span(b, s->id, s->host, seq, row, &p->ev, dep[k],
				 name_of(s->threads, p->tid), name_of(s->procs, p->pid), s->t0,
				 &s->clean, &s->cap);
		pending_free(p);
	}
	free(dep);
	if (s->phead == s->pn)
		s->phead = s->pn = 0;
	else if (s->phead > s->pcap / 2) {
		memmove(s->pend, s->pend + s->phead, (s->pn - s->phead) * sizeof(*s->pend));
		s->pn -= s->phead;
		s->phead = 0;
	}
	return n;
}

/* Forgets the spans that can no longer enclose one still to come: ended before every waiting
 * span started, and long enough ago that a span enclosed by them has been written. */
static void prune(struct stream *s)
{
	int64_t cut = s->progress - 2 * HOLD_NS;
	uint64_t waiting = s->phead < s->pn ? s->pend[s->phead].iv.idx : s->nspans;
	struct recent *r, *tmp;

	for (size_t i = s->phead; i < s->pn; i++)
		if (s->pend[i].iv.s < cut)
			cut = s->pend[i].iv.s;
	HASH_ITER(hh, s->recent, r, tmp) {
		size_t k = 0;

		for (size_t i = 0; i < r->n; i++)
			if (r->v[i].e > cut || r->v[i].idx >= waiting) /* an empty one waits too */
				r->v[k++] = r->v[i];
		r->n = k;
		if (!k) {
			HASH_DEL(s->recent, r);
			free(r->v);
			free(r);
		}
	}
}

static void said(struct stream *s, const char *err)
{
	if (!s->said)
		pr_warn("streaming to ClickHouse paused: %s; the rows wait in %s and go when it "
			"answers, or at the end",
			err, s->path);
	s->said = true;
}

/* The rows of t not yet sent. true when they are all in. */
static bool send_table(struct stream *s, struct ltable *t)
{
	char sql[128], err[1024];

	snprintf(sql, sizeof(sql), "INSERT INTO %s FORMAT JSONEachRow", t->name);
	while (t->nb) {
		struct lbatch *b = &t->b[0];

		if (b->sent < b->t.len) {
			if (ch__query(&s->c, sql, b->t.p + b->sent, b->t.len - b->sent, NULL, err,
				      sizeof(err))) {
				said(s, err);
				return false;
			}
			for (size_t i = b->sent; i < b->t.len; i++)
				t->rows += b->t.p[i] == '\n';
			b->sent = b->t.len;
		}
		if (b->n < BATCH_ROWS)
			break;
		free(b->t.p); /* the batch is whole and in: the next one */
		memmove(t->b, t->b + 1, (t->nb - 1) * sizeof(*t->b));
		t->nb--;
		t->seq0++;
	}
	return true;
}

static bool send_all(struct stream *s)
{
	bool ok = send_table(s, &s->spans) && send_table(s, &s->states) &&
		  send_table(s, &s->counters);

	if (ok)
		s->said = false;
	return ok;
}

static bool stopping(struct stream *s)
{
	bool stop;

	pthread_mutex_lock(&s->mu);
	stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	return stop;
}

static void tick(struct stream *s)
{
	struct stat st;
	char err[1024];
	size_t moved;

	if (!s->have_id) { /* the id hashes the first 4 KB, as push's does */
		if (fstat(s->main.fd, &st) || st.st_size < 4096 ||
		    spans_rows__id(s->path, s->host, s->id, err, sizeof(err)))
			return;
		s->have_id = true;
	}
	if (!s->connected) {
		int ret = ch__parse(&s->c, s->url, err, sizeof(err));

		s->c.timeout_s = 10; /* never hold the end of the recording long */
		if (ret || ch__connect(&s->c, err, sizeof(err)) ||
		    ch__schema(&s->c, NULL, err, sizeof(err))) {
			said(s, err);
			ch__close(&s->c);
			return;
		}
		s->connected = true;
	}
	/* what waits first; then read, a batch at most per table ahead of the server */
	do {
		if (!send_all(s))
			return;
		moved = read_lines(s, &s->main, on_main_line, main_room);
		moved += read_lines(s, &s->sched, on_sched_line, sched_room);
		moved += release(s);
		prune(s);
	} while (moved && !stopping(s));
	send_all(s);
}

static void *run(void *arg)
{
	struct stream *s = arg;
	struct timespec until;

	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		pthread_mutex_unlock(&s->mu);
		tick(s);
		pthread_mutex_lock(&s->mu);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct stream *stream__start(const char *path, int sched_fd, const char *url)
{
	struct stream *s;
	size_t n = strlen(path);

	if (n > 3 && !strcmp(path + n - 3, ".gz"))
		return NULL; /* a gzip stream cannot be read behind its writer */
	s = xcalloc(1, sizeof(*s));
	s->main.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->main.fd < 0) {
		free(s);
		return NULL;
	}
	/* its own descriptor: the writer closes its copy at the end */
	s->sched.fd = sched_fd >= 0 ? fcntl(sched_fd, F_DUPFD_CLOEXEC, 0) : -1;
	s->spans.name = "tracer_spans";
	s->states.name = "tracer_states";
	s->counters.name = "tracer_counters";
	s->path = xstrdup(path);
	s->url = xstrdup(url);
	if (gethostname(s->host, sizeof(s->host) - 1))
		snprintf(s->host, sizeof(s->host), "unknown");
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->thread, NULL, run, s)) {
		close(s->main.fd);
		if (s->sched.fd >= 0)
			close(s->sched.fd);
		free(s->path);
		free(s->url);
		free(s);
		return NULL;
	}
	return s;
}

void stream__stop(struct stream *s, struct stream_sent *sent)
{
	struct recent *r, *tmp;

	*sent = (struct stream_sent){ 0 };
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	*sent = (struct stream_sent){ s->spans.rows, s->states.rows, s->counters.rows };
	if (s->connected)
		ch__close(&s->c);
	close(s->main.fd);
	if (s->sched.fd >= 0)
		close(s->sched.fd);
	names_free(&s->threads);
	names_free(&s->procs);
	sched_states__free(&s->st);
	HASH_ITER(hh, s->recent, r, tmp) {
		HASH_DEL(s->recent, r);
		free(r->v);
		free(r);
	}
	for (size_t i = s->phead; i < s->pn; i++)
		pending_free(&s->pend[i]);
	free(s->pend);
	table_free(&s->spans);
	table_free(&s->states);
	table_free(&s->counters);
	if (s->url)
		explicit_bzero(s->url, strlen(s->url));
	free(s->url);
	free(s->path);
	free(s->main.line.p);
	free(s->sched.line.p);
	free(s->clean);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}
