// SPDX-License-Identifier: MIT
/* Export: one row per span (name, category, pid, tid,
 * thread, start_ns, dur_ns, args), the shape BigQuery, DuckDB, Spark and pandas load directly.
 * Two streaming passes: the first learns every thread's last name (a viewer-valid trace may
 * name a thread after its spans), the second writes the rows with it: one thread, one name,
 * whatever renamed it on the way (Python names its threads after their first spans, under the
 * kernel's "python3"), so a GROUP BY thread finds each thread once. Rows come out by start
 * time (trace/row_sort.c). */
#include "trace/export.h"
#include "trace/json_text.h"
#include "trace/outfile.h"
#include "trace/row_sort.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define ROW_CHUNK (64u << 20) /* rows sorted in memory before a run goes to a file */

struct xthread {
	int64_t tid;
	char *last; /* the name at the end of the file */
	UT_hash_handle hh;
};

/* The thread with this tid; created (unnamed) when create is set, else NULL if unknown. */
static struct xthread *names_get(struct xthread **names, int64_t tid, bool create)
{
	struct xthread *t;

	HASH_FIND(hh, *names, &tid, sizeof(tid), t);
	if (!t && create) {
		t = xcalloc(1, sizeof(*t));
		t->tid = tid;
		t->last = xstrdup("");
		HASH_ADD(hh, *names, tid, sizeof(t->tid), t);
	}
	return t;
}

static void set_name(char **slot, const char *name)
{
	free(*slot);
	*slot = xstrdup(name);
}

static void names_free(struct xthread **names)
{
	struct xthread *t, *tmp;

	HASH_ITER(hh, *names, t, tmp) {
		HASH_DEL(*names, t);
		free(t->last);
		free(t);
	}
}

static bool is_thread_name(const struct trace_event *ev)
{
	return ev->ph == 'M' && ev->has_tid && ev->arg_name && !strcmp(ev->name, "thread_name");
}

static int learn_names(const char *path, struct xthread **n, char *err, size_t errlen)
{
	struct trace_reader *r;
	struct trace_item it;
	int ret = trace_reader__open(&r, path, TR_EVENTS, err, errlen);

	if (ret)
		return ret;
	while ((ret = trace_reader__next(r, &it)) > 0)
		if (is_thread_name(&it.ev))
			set_name(&names_get(n, it.ev.tid, true)->last, it.ev.arg_name);
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	trace_reader__close(r);
	return ret;
}

static void grow(char **buf, size_t *cap, size_t need)
{
	if (need > *cap) {
		*cap = need;
		*buf = xrealloc(*buf, need, 1);
	}
}

/* A row being written, before it is sorted into place. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_write(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = 2 * (b->len + n);
		b->p = xrealloc(b->p, b->cap, 1);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_write(b, s, strlen(s));
}

/* A string as a JSON literal. */
static void put_json(struct sbuf *f, const char *s, char **buf, size_t *cap)
{
	size_t n = strlen(s);

	grow(buf, cap, 6 * n + 1);
	json_escape(*buf, *cap, s, n);
	sb_puts(f, "\"");
	sb_puts(f, *buf);
	sb_puts(f, "\"");
}

/* A cell: quoted, under the text rule (util/util.h): no control character reaches a
 * terminal, no formula a spreadsheet would run. */
static void put_csv(struct sbuf *f, const char *s, size_t n, char **buf, size_t *cap)
{
	grow(buf, cap, CSV_CELL_MAX(n));
	sb_write(f, *buf, csv_cell(*buf, s, n));
}

/* JSON text from the input (a literal, the args), valid whatever the input held. */
static void put_raw_json(struct sbuf *f, const char *s, size_t n, char **buf, size_t *cap)
{
	grow(buf, cap, 6 * n + 1);
	sb_write(f, *buf, json_clean(*buf, s, n));
}

static void put_ns(struct sbuf *f, int64_t v)
{
	char t[32];

	sb_write(f, t, snprintf(t, sizeof(t), "%" PRId64, v));
}

static void row(struct sbuf *f, const struct trace_event *ev, const char *thread, bool csv,
		char **buf, size_t *cap)
{
	const char *args = ev->args_at.len ? ev->text + ev->args_at.off : NULL;

	if (csv) {
		put_csv(f, ev->name, strlen(ev->name), buf, cap);
		sb_puts(f, ",");
		put_csv(f, ev->cat, strlen(ev->cat), buf, cap);
		sb_puts(f, ",");
		if (ev->has_pid)
			put_ns(f, ev->pid);
		sb_puts(f, ",");
		if (ev->has_tid)
			put_ns(f, ev->tid);
		sb_puts(f, ",");
		put_csv(f, thread, strlen(thread), buf, cap);
		sb_puts(f, ",");
		put_ns(f, ev->ts_ns);
		sb_puts(f, ",");
		put_ns(f, ev->dur_ns);
		sb_puts(f, ",");
		if (args)
			put_csv(f, args, ev->args_at.len, buf, cap);
		sb_puts(f, "\n");
		return;
	}
	sb_puts(f, "{\"name\":");
	if (ev->name_at.len && ev->text[ev->name_at.off] == '"') /* the file's own literal */
		put_raw_json(f, ev->text + ev->name_at.off, ev->name_at.len, buf, cap);
	else
		put_json(f, ev->name, buf, cap);
	sb_puts(f, ",\"category\":");
	put_json(f, ev->cat, buf, cap);
	sb_puts(f, ",\"pid\":");
	if (ev->has_pid)
		put_ns(f, ev->pid);
	else
		sb_puts(f, "null");
	sb_puts(f, ",\"tid\":");
	if (ev->has_tid)
		put_ns(f, ev->tid);
	else
		sb_puts(f, "null");
	sb_puts(f, ",\"thread\":");
	put_json(f, thread, buf, cap);
	sb_puts(f, ",\"start_ns\":");
	put_ns(f, ev->ts_ns);
	sb_puts(f, ",\"dur_ns\":");
	put_ns(f, ev->dur_ns);
	sb_puts(f, ",\"args\":");
	if (args)
		put_raw_json(f, args, ev->args_at.len, buf, cap);
	else
		sb_puts(f, "null");
	sb_puts(f, "}\n");
}

/* The rows by start time (a trace holds spans in the order they ended), in bounded memory:
 * sorted runs of ROW_CHUNK bytes in temporary files, merged. */
static int write_rows(const char *path, struct xthread **n, struct outfile *f, bool csv,
		      uint64_t *rows, char *err, size_t errlen)
{
	struct row_sort *sorted = row_sort__new(ROW_CHUNK);
	struct trace_reader *r;
	struct trace_item it;
	struct sbuf line = { 0 };
	char *buf = NULL;
	size_t cap = 0;
	FILE *out;
	int ret = trace_reader__open(&r, path, TR_EVENTS, err, errlen), wret = 0;

	if (ret) {
		row_sort__free(sorted);
		return ret;
	}
	while ((ret = trace_reader__next(r, &it)) > 0 && !wret) {
		const struct trace_event *ev = &it.ev;
		struct xthread *t = ev->has_tid ? names_get(n, ev->tid, false) : NULL;

		if (ev->ph != 'X' || !ev->has_ts || !ev->has_dur)
			continue;
		line.len = 0;
		row(&line, ev, t ? t->last : "", csv, &buf, &cap);
		wret = row_sort__add(sorted, ev->ts_ns, line.p, line.len);
		(*rows)++;
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	else
		trace_reader__warn_skipped(r, path);
	if (ret >= 0) {
		if (csv)
			outfile__puts(f, "name,category,pid,tid,thread,start_ns,dur_ns,args\n");
		out = outfile__stdio(f);
		if (!wret)
			wret = out ? row_sort__write(sorted, out) : -ENOMEM;
		if (out && fclose(out) && !wret)
			wret = -EIO;
		if (wret) {
			snprintf(err, errlen, "cannot sort the rows in a temporary file: %s",
				 strerror(-wret));
			ret = wret;
		}
	}
	free(line.p);
	free(buf);
	row_sort__free(sorted);
	trace_reader__close(r);
	return ret;
}

int trace_export(const char *in, const char *out, bool csv, uint64_t *rows, char *err,
		 size_t errlen)
{
	struct xthread *names = NULL;
	struct outfile *f = NULL;
	int ret, cret;

	*rows = 0;
	ret = learn_names(in, &names, err, errlen);
	if (ret < 0)
		goto out;
	ret = outfile__open(&f, out, err, errlen);
	if (ret)
		goto out;
	ret = write_rows(in, &names, f, csv, rows, err, errlen);
	cret = outfile__close(f, ret >= 0);
	if (ret >= 0 && cret) {
		snprintf(err, errlen, "cannot write %s: %s", out ? out : "stdout", strerror(-cret));
		ret = cret;
	}
out:
	names_free(&names);
	return ret < 0 ? ret : 0;
}
