// SPDX-License-Identifier: MIT
/* Export: one row per span (name, category, pid, tid,
 * thread, start_ns, dur_ns, args), the shape BigQuery, DuckDB, Spark and pandas load directly.
 * Two streaming passes: the first learns every thread's last name (a viewer-valid trace may
 * name a thread after its spans), the second writes the rows, naming each span's thread as it
 * was named at that point of the file when it was, so renames are kept. */
#include "trace/export.h"
#include "trace/json_text.h"
#include "trace/outfile.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct xthread {
	int64_t tid;
	char *last; /* the name at the end of the file */
	char *now;  /* the name at this point of the second pass */
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
		free(t->now);
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

/* A string as a JSON literal. */
static void put_json(struct outfile *f, const char *s, char **buf, size_t *cap)
{
	size_t n = strlen(s);

	grow(buf, cap, 6 * n + 1);
	json_escape(*buf, *cap, s, n);
	outfile__puts(f, "\"");
	outfile__puts(f, *buf);
	outfile__puts(f, "\"");
}

/* A cell: quoted, with text_safe's replacements (no control character reaches a terminal). */
static void put_csv(struct outfile *f, const char *s, size_t n, char **buf, size_t *cap)
{
	const char *q;

	grow(buf, cap, 3 * n + 1);
	n = text_safe(*buf, *cap, s, n);
	s = *buf;
	outfile__puts(f, "\"");
	while (n && (q = memchr(s, '"', n))) {
		outfile__write(f, s, q + 1 - s);
		outfile__puts(f, "\"");
		n -= q + 1 - s;
		s = q + 1;
	}
	outfile__write(f, s, n);
	outfile__puts(f, "\"");
}

/* JSON text from the input (a literal, the args), valid whatever the input held. */
static void put_raw_json(struct outfile *f, const char *s, size_t n, char **buf, size_t *cap)
{
	grow(buf, cap, 6 * n + 1);
	outfile__write(f, *buf, json_clean(*buf, s, n));
}

static void put_ns(struct outfile *f, int64_t v)
{
	outfile__printf(f, "%" PRId64, v);
}

static void row(struct outfile *f, const struct trace_event *ev, const char *thread, bool csv,
		char **buf, size_t *cap)
{
	const char *args = ev->args_at.len ? ev->text + ev->args_at.off : NULL;

	if (csv) {
		put_csv(f, ev->name, strlen(ev->name), buf, cap);
		outfile__puts(f, ",");
		put_csv(f, ev->cat, strlen(ev->cat), buf, cap);
		outfile__puts(f, ",");
		if (ev->has_pid)
			put_ns(f, ev->pid);
		outfile__puts(f, ",");
		if (ev->has_tid)
			put_ns(f, ev->tid);
		outfile__puts(f, ",");
		put_csv(f, thread, strlen(thread), buf, cap);
		outfile__puts(f, ",");
		put_ns(f, ev->ts_ns);
		outfile__puts(f, ",");
		put_ns(f, ev->dur_ns);
		outfile__puts(f, ",");
		if (args)
			put_csv(f, args, ev->args_at.len, buf, cap);
		outfile__puts(f, "\n");
		return;
	}
	outfile__puts(f, "{\"name\":");
	if (ev->name_at.len && ev->text[ev->name_at.off] == '"') /* the file's own literal */
		put_raw_json(f, ev->text + ev->name_at.off, ev->name_at.len, buf, cap);
	else
		put_json(f, ev->name, buf, cap);
	outfile__puts(f, ",\"category\":");
	put_json(f, ev->cat, buf, cap);
	outfile__puts(f, ",\"pid\":");
	if (ev->has_pid)
		put_ns(f, ev->pid);
	else
		outfile__puts(f, "null");
	outfile__puts(f, ",\"tid\":");
	if (ev->has_tid)
		put_ns(f, ev->tid);
	else
		outfile__puts(f, "null");
	outfile__puts(f, ",\"thread\":");
	put_json(f, thread, buf, cap);
	outfile__puts(f, ",\"start_ns\":");
	put_ns(f, ev->ts_ns);
	outfile__puts(f, ",\"dur_ns\":");
	put_ns(f, ev->dur_ns);
	outfile__puts(f, ",\"args\":");
	if (args)
		put_raw_json(f, args, ev->args_at.len, buf, cap);
	else
		outfile__puts(f, "null");
	outfile__puts(f, "}\n");
}

static int write_rows(const char *path, struct xthread **n, struct outfile *f, bool csv,
		      uint64_t *rows, char *err, size_t errlen)
{
	struct trace_reader *r;
	struct trace_item it;
	char *buf = NULL;
	size_t cap = 0;
	int ret = trace_reader__open(&r, path, TR_EVENTS, err, errlen);

	if (ret)
		return ret;
	if (csv)
		outfile__puts(f, "name,category,pid,tid,thread,start_ns,dur_ns,args\n");
	while ((ret = trace_reader__next(r, &it)) > 0) {
		const struct trace_event *ev = &it.ev;
		struct xthread *t = ev->has_tid ? names_get(n, ev->tid, false) : NULL;

		if (is_thread_name(ev)) {
			if (t)
				set_name(&t->now, ev->arg_name);
			continue;
		}
		if (ev->ph != 'X' || !ev->has_ts || !ev->has_dur)
			continue;
		row(f, ev, t ? (t->now ? t->now : t->last) : "", csv, &buf, &cap);
		(*rows)++;
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	else
		trace_reader__warn_skipped(r, path);
	free(buf);
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
	ret = outfile__open(&f, out);
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s", out ? out : "stdout", strerror(-ret));
		goto out;
	}
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
