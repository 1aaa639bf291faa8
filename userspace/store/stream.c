// SPDX-License-Identifier: MIT
/* Spans into ClickHouse while recording (store/stream.h). Rows are numbered as spans_rows.c
 * numbers them — the span events in file order, BATCH_ROWS to a batch — and each second the
 * rows added to the current batch since the last send go out: a part of a batch has the keys
 * the whole batch has, so sending the whole later (the push at the end) replaces it. */
#include "store/stream.h"
#include "store/clickhouse.h"
#include "store/spans_rows.h"
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

struct stream {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	char *path, *url;
	char host[256], id[17];
	bool have_id, connected, said;
	struct ch_conn c;
	int fd;
	off_t off;	       /* read up to here */
	struct rows_text line; /* a line not yet complete */
	struct rows_text batch;
	size_t sent_len; /* bytes of batch already in ClickHouse */
	uint32_t seq, n;
	int64_t t0;
	bool ended; /* the traceEvents array is closed */
	struct name *threads, *procs;
	char *clean;
	size_t cap;
	uint64_t rows;
};

static const char *name_of(struct name *h, int64_t id)
{
	const struct name *n = name_get(h, id);

	return n ? n->s : "";
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

/* One line of the trace's event array: a span becomes a row; names and the clock's zero are
 * learnt. */
static void on_line(struct stream *s, const char *l, size_t len)
{
	struct trace_event ev = { .text = l, .len = len };
	cJSON *o, *v, *args;
	const char *end = NULL, *at;

	if (len && l[len - 1] == ',')
		len--;
	if (len < 2 || l[0] != '{') {
		if (len && l[0] == ']')
			s->ended = true;
		return;
	}
	o = cJSON_ParseWithLength(l, len);
	if (!o)
		return;
	v = cJSON_GetObjectItemCaseSensitive(o, "ph");
	ev.ph = cJSON_IsString(v) ? v->valuestring[0] : 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "name");
	ev.name = cJSON_IsString(v) ? v->valuestring : "";
	v = cJSON_GetObjectItemCaseSensitive(o, "cat");
	ev.cat = cJSON_IsString(v) ? v->valuestring : "";
	ev.pid = num_of(o, "pid", &ev.has_pid);
	ev.tid = num_of(o, "tid", &ev.has_tid);
	args = cJSON_GetObjectItemCaseSensitive(o, "args");
	if (ev.ph == 'M' && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "name"))) {
		const char *n = cJSON_GetObjectItemCaseSensitive(args, "name")->valuestring;

		if (!strcmp(ev.name, "thread_name") && ev.has_tid)
			name_set(&s->threads, ev.tid, ev.pid, n);
		else if (!strcmp(ev.name, "process_name") && ev.has_pid)
			name_set(&s->procs, ev.pid, ev.pid, n);
	} else if (ev.ph == 'i' && !strcmp(ev.name, "recording started") && !s->t0) {
		static const char key[] = "\"t0_realtime_ns\":";

		at = memmem(l, len, key, sizeof(key) - 1);
		if (at)
			s->t0 = strtoll(at + sizeof(key) - 1, NULL, 10);
	} else if (ev.ph == 'X') {
		ev.has_ts = us_at(l, len, "\"ts\":", &ev.ts_ns);
		ev.has_dur = us_at(l, len, "\"dur\":", &ev.dur_ns);
		at = memmem(l, len, "\"args\":", 7);
		if (at) /* parsed only to find where the args end */
			cJSON_Delete(cJSON_ParseWithLengthOpts(at + 7, len - (at + 7 - l), &end,
							       false));
		if (at && end) {
			ev.args_at.off = at + 7 - l;
			ev.args_at.len = end - (at + 7);
		}
		if (ev.has_ts && ev.has_dur) {
			spans_rows__span(&s->batch, s->id, s->host, s->seq, s->n, &ev,
					 ev.has_tid ? name_of(s->threads, ev.tid) : "",
					 ev.has_pid ? name_of(s->procs, ev.pid) : "", s->t0, &s->clean,
					 &s->cap);
			s->n++;
		}
	}
	cJSON_Delete(o);
}

/* The rows of the current batch not yet sent. true when they are all in. */
static bool send_new(struct stream *s)
{
	char err[1024];
	int ret;

	if (s->batch.len == s->sent_len)
		return true;
	ret = ch__query(&s->c, "INSERT INTO tracer_spans FORMAT JSONEachRow",
			s->batch.p + s->sent_len, s->batch.len - s->sent_len, NULL, err, sizeof(err));
	if (ret) {
		if (!s->said)
			pr_warn("streaming to ClickHouse paused: %s; the rows wait in %s and go when "
				"it answers, or at the end", err, s->path);
		s->said = true;
		return false;
	}
	s->said = false;
	for (size_t i = s->sent_len; i < s->batch.len; i++)
		s->rows += s->batch.p[i] == '\n';
	s->sent_len = s->batch.len;
	if (s->n >= BATCH_ROWS) { /* the batch is whole: the next one */
		s->seq++;
		s->n = 0;
		s->batch.len = s->sent_len = 0;
	}
	return true;
}

/* Reads what the writer added, up to the end of the current batch. */
static void read_more(struct stream *s)
{
	char *buf = xcalloc(1, READ_CHUNK);
	ssize_t got;

	while (!s->ended && s->n < BATCH_ROWS &&
	       (got = pread(s->fd, buf, READ_CHUNK, s->off)) > 0) {
		size_t i = 0;

		while (i < (size_t)got && s->n < BATCH_ROWS) {
			char *nl = memchr(buf + i, '\n', got - i);
			size_t n = nl ? (size_t)(nl - (buf + i)) : got - i;

			if (s->line.len + n + 1 > s->line.cap) {
				s->line.cap = 2 * (s->line.len + n + 1);
				s->line.p = xrealloc(s->line.p, s->line.cap, 1);
			}
			memcpy(s->line.p + s->line.len, buf + i, n);
			s->line.len += n;
			i += n;
			if (!nl)
				break;
			i++; /* the newline */
			on_line(s, s->line.p, s->line.len);
			s->line.len = 0;
		}
		s->off += i;
		if (i < (size_t)got && s->n >= BATCH_ROWS)
			break;
	}
	free(buf);
}

static bool tick(struct stream *s)
{
	struct stat st;
	char err[1024];

	if (!s->have_id) { /* the id hashes the first 4 KB, as push's does */
		if (fstat(s->fd, &st) || st.st_size < 4096 ||
		    spans_rows__id(s->path, s->host, s->id, err, sizeof(err)))
			return true;
		s->have_id = true;
	}
	if (!s->connected) {
		int ret = ch__parse(&s->c, s->url, err, sizeof(err));

		s->c.timeout_s = 10; /* never hold the end of the recording long */
		if (ret || ch__connect(&s->c, err, sizeof(err)) ||
		    ch__schema(&s->c, NULL, err, sizeof(err))) {
			if (!s->said)
				pr_warn("streaming to ClickHouse paused: %s; the rows wait in %s and "
					"go when it answers, or at the end", err, s->path);
			s->said = true;
			ch__close(&s->c);
			return true;
		}
		s->connected = true;
	}
	if (!send_new(s))
		return true;
	read_more(s);
	return send_new(s);
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

struct stream *stream__start(const char *path, const char *url)
{
	struct stream *s;
	size_t n = strlen(path);

	if (n > 3 && !strcmp(path + n - 3, ".gz"))
		return NULL; /* a gzip stream cannot be read behind its writer */
	s = xcalloc(1, sizeof(*s));
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	s->path = xstrdup(path);
	s->url = xstrdup(url);
	if (gethostname(s->host, sizeof(s->host) - 1))
		snprintf(s->host, sizeof(s->host), "unknown");
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->thread, NULL, run, s)) {
		close(s->fd);
		free(s->path);
		free(s->url);
		free(s);
		return NULL;
	}
	return s;
}

void stream__stop(struct stream *s, uint64_t *rows)
{
	*rows = 0;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	*rows = s->rows;
	if (s->connected)
		ch__close(&s->c);
	close(s->fd);
	names_free(&s->threads);
	names_free(&s->procs);
	if (s->url)
		explicit_bzero(s->url, strlen(s->url));
	free(s->url);
	free(s->path);
	free(s->line.p);
	free(s->batch.p);
	free(s->clean);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}
