// SPDX-License-Identifier: MIT
/* speedscope export. Pass 1 learns the frames (span names), the threads with spans, their and
 * their processes' names, and the time range. Pass 2 writes one row per span, which two stable
 * sorts in bounded memory (row_sort: by start, then by thread) bring into each thread's start
 * order; a sweep then opens and closes them on a stack, so events nest whatever the order in
 * the file (spans arrive in completion order). */
#include "trace/speedscope.h"
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

#define ROW_CHUNK (64u << 20)

struct sframe {
	char *name;
	size_t idx;
	UT_hash_handle hh;
};

struct sthread {
	int64_t tid, pid;
	char *name;
	size_t idx; /* its profile, in order of pid then tid */
	uint64_t spans;
	UT_hash_handle hh;
};

struct sproc {
	int64_t pid;
	char *name;
	UT_hash_handle hh;
};

struct ctx {
	const char *path;
	struct sframe *frames; /* by name */
	struct sframe **by_idx;
	size_t nframes, frames_cap;
	struct sthread *threads; /* by tid */
	struct sthread **order;
	size_t nthreads;
	struct sproc *procs;
	int64_t start, end;
	bool any;
	uint64_t ignored_be;
	char *buf; /* escaping */
	size_t cap;
};

static void set_str(char **slot, const char *s)
{
	free(*slot);
	*slot = xstrdup(s);
}

static struct sthread *thread_get(struct ctx *c, int64_t tid)
{
	struct sthread *t;

	HASH_FIND(hh, c->threads, &tid, sizeof(tid), t);
	if (!t) {
		t = xcalloc(1, sizeof(*t));
		t->tid = tid;
		t->pid = -1;
		HASH_ADD(hh, c->threads, tid, sizeof(t->tid), t);
	}
	return t;
}

static struct sframe *frame_get(struct ctx *c, const char *name)
{
	struct sframe *f;

	HASH_FIND_STR(c->frames, name, f);
	if (f)
		return f;
	if (c->nframes >= SPEEDSCOPE_MAX_FRAMES && strcmp(name, SPEEDSCOPE_OTHER))
		return frame_get(c, SPEEDSCOPE_OTHER); /* one more frame, for all the rest */
	f = xcalloc(1, sizeof(*f));
	f->name = xstrdup(name);
	f->idx = c->nframes++;
	HASH_ADD_KEYPTR(hh, c->frames, f->name, strlen(f->name), f);
	if (c->nframes > c->frames_cap) {
		c->frames_cap = 2 * c->nframes;
		c->by_idx = xrealloc(c->by_idx, c->frames_cap, sizeof(*c->by_idx));
	}
	c->by_idx[f->idx] = f;
	return f;
}

static bool is_span(const struct trace_event *ev)
{
	return ev->ph == 'X' && ev->has_ts && ev->has_dur && ev->has_tid && ev->dur_ns >= 0;
}

static int by_pid_tid(const void *x, const void *y)
{
	const struct sthread *a = *(const struct sthread *const *)x;
	const struct sthread *b = *(const struct sthread *const *)y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static int pass1(struct ctx *c, char *err, size_t errlen)
{
	struct trace_reader *r;
	struct trace_item it;
	struct sthread *t, *tmp;
	int ret = trace_reader__open(&r, c->path, TR_EVENTS, err, errlen);

	if (ret)
		return ret;
	while ((ret = trace_reader__next(r, &it)) > 0) {
		const struct trace_event *ev = &it.ev;

		if (ev->ph == 'M' && ev->arg_name && !strcmp(ev->name, "thread_name") &&
		    ev->has_tid) {
			t = thread_get(c, ev->tid);
			set_str(&t->name, ev->arg_name);
			if (ev->has_pid)
				t->pid = ev->pid;
		} else if (ev->ph == 'M' && ev->arg_name && !strcmp(ev->name, "process_name") &&
			   ev->has_pid) {
			struct sproc *p;

			HASH_FIND(hh, c->procs, &ev->pid, sizeof(ev->pid), p);
			if (!p) {
				p = xcalloc(1, sizeof(*p));
				p->pid = ev->pid;
				HASH_ADD(hh, c->procs, pid, sizeof(p->pid), p);
			}
			set_str(&p->name, ev->arg_name);
		} else if (is_span(ev)) {
			t = thread_get(c, ev->tid);
			t->spans++;
			if (ev->has_pid)
				t->pid = ev->pid;
			frame_get(c, ev->name);
			if (!c->any || ev->ts_ns < c->start)
				c->start = ev->ts_ns;
			if (!c->any || ev->ts_ns + ev->dur_ns > c->end)
				c->end = ev->ts_ns + ev->dur_ns;
			c->any = true;
		} else if (ev->ph == 'B' || ev->ph == 'E') {
			c->ignored_be++;
		}
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s", trace_reader__error(r));
	} else if (trace_reader__no_events(r) && !trace_reader__truncated(r)) {
		snprintf(err, errlen, "%s: not a Chrome trace: no \"traceEvents\" array", c->path);
		ret = -EINVAL;
	}
	trace_reader__close(r);
	if (ret < 0)
		return ret;
	c->order = xcalloc(HASH_COUNT(c->threads) + 1, sizeof(*c->order));
	HASH_ITER(hh, c->threads, t, tmp)
		if (t->spans)
			c->order[c->nthreads++] = t;
	qsort(c->order, c->nthreads, sizeof(*c->order), by_pid_tid);
	for (size_t i = 0; i < c->nthreads; i++)
		c->order[i]->idx = i;
	return 0;
}

/* Pass 2: "THREAD START END FRAME\n" per span, sorted by start, into out. */
static int pass2(struct ctx *c, FILE *out, char *err, size_t errlen)
{
	struct row_sort *s = row_sort__new(ROW_CHUNK);
	struct trace_reader *r;
	struct trace_item it;
	int ret = trace_reader__open(&r, c->path, TR_EVENTS, err, errlen), wret = 0;

	if (ret) {
		row_sort__free(s);
		return ret;
	}
	while (!wret && (ret = trace_reader__next(r, &it)) > 0) {
		const struct trace_event *ev = &it.ev;
		struct sthread *t;
		char row[128];
		int n;

		if (!is_span(ev))
			continue;
		HASH_FIND(hh, c->threads, &ev->tid, sizeof(ev->tid), t);
		if (!t || !t->spans)
			continue; /* not in pass 1: the file changed between the passes */
		n = snprintf(row, sizeof(row), "%zu %" PRId64 " %" PRId64 " %zu\n", t->idx,
			     ev->ts_ns, ev->ts_ns + ev->dur_ns, frame_get(c, ev->name)->idx);
		wret = row_sort__add(s, ev->ts_ns, row, n);
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", trace_reader__error(r));
	else
		trace_reader__warn_skipped(r, c->path);
	if (ret >= 0 && !wret)
		wret = row_sort__write(s, out);
	if (ret >= 0 && wret) {
		snprintf(err, errlen, "cannot sort the spans in a temporary file: %s",
			 strerror(-wret));
		ret = wret;
	}
	trace_reader__close(r);
	row_sort__free(s);
	return ret < 0 ? ret : 0;
}

struct row {
	size_t thread, frame;
	int64_t s, e;
};

static bool read_row(FILE *f, struct row *r)
{
	return fscanf(f, "%zu %" SCNd64 " %" SCNd64 " %zu\n", &r->thread, &r->s, &r->e,
		      &r->frame) == 4;
}

/* The rows in start order, regrouped by thread (a stable sort keeps start order within). */
static int by_thread(FILE *in, FILE *out)
{
	struct row_sort *s = row_sort__new(ROW_CHUNK);
	struct row r;
	char row[128];
	int ret = 0;

	rewind(in);
	while (!ret && read_row(in, &r)) {
		int n = snprintf(row, sizeof(row), "%zu %" PRId64 " %" PRId64 " %zu\n", r.thread,
				 r.s, r.e, r.frame);

		ret = row_sort__add(s, (int64_t)r.thread, row, n);
	}
	if (!ret)
		ret = row_sort__write(s, out);
	row_sort__free(s);
	return ret ? ret : ferror(in) ? -EIO : 0;
}

static void put_str(struct ctx *c, FILE *f, const char *s)
{
	size_t n = strlen(s);

	if (6 * n + 1 > c->cap) {
		c->cap = 6 * n + 1;
		c->buf = xrealloc(c->buf, c->cap, 1);
	}
	json_escape(c->buf, c->cap, s, n);
	fprintf(f, "\"%s\"", c->buf);
}

static void profile_name(struct ctx *c, const struct sthread *t, char *out, size_t len)
{
	struct sproc *p = NULL;

	HASH_FIND(hh, c->procs, &t->pid, sizeof(t->pid), p);
	if (p && t->name)
		snprintf(out, len, "%s (pid %" PRId64 "), %s (tid %" PRId64 ")", p->name, t->pid,
			 t->name, t->tid);
	else
		snprintf(out, len, "%s (tid %" PRId64 ")", t->name ? t->name : "thread", t->tid);
}

struct open_span {
	int64_t e;
	size_t frame;
};

static void event(FILE *f, bool *first, char type, size_t frame, int64_t at)
{
	fprintf(f, "%s{\"type\":\"%c\",\"frame\":%zu,\"at\":%" PRId64 "}", *first ? "" : ",",
		type, frame, at);
	*first = false;
}

static int cmp_end_desc(const void *x, const void *y)
{
	const struct row *a = x, *b = y;

	return a->e > b->e ? -1 : a->e < b->e;
}

/* The profiles: rows by thread, then by start; ties in start, the longest first (it encloses
 * the others). */
static void write_profiles(struct ctx *c, FILE *in, FILE *f, uint64_t *clipped)
{
	struct open_span *stack = NULL;
	struct row *same = NULL, r;
	size_t depth = 0, scap = 0, nsame = 0, samecap = 0, cur = (size_t)-1;
	bool have = false, more, first = true;
	char name[256];

	rewind(in);
	more = read_row(in, &r);
	for (;;) {
		/* the next batch: the rows of one thread with one start */
		nsame = 0;
		while (more && (!nsame || (r.thread == same[0].thread && r.s == same[0].s))) {
			if (nsame == samecap) {
				samecap = samecap ? 2 * samecap : 16;
				same = xrealloc(same, samecap, sizeof(*same));
			}
			same[nsame++] = r;
			more = read_row(in, &r);
		}
		if (have && (!nsame || same[0].thread != cur)) { /* the thread's end */
			while (depth) {
				depth--;
				event(f, &first, 'C', stack[depth].frame, stack[depth].e);
			}
			fputs("]}", f);
			have = false;
		}
		if (!nsame)
			break;
		if (!have) {
			cur = same[0].thread;
			profile_name(c, c->order[cur], name, sizeof(name));
			fputs(cur ? ",\n{\"type\":\"evented\",\"name\":" :
				    "\n{\"type\":\"evented\",\"name\":",
			      f);
			put_str(c, f, name);
			fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":%" PRId64
				   ",\"endValue\":%" PRId64 ",\"events\":[",
				c->start, c->end);
			have = first = true;
		}
		qsort(same, nsame, sizeof(*same), cmp_end_desc);
		for (size_t i = 0; i < nsame; i++) {
			struct row *x = &same[i];

			while (depth && stack[depth - 1].e <= x->s) {
				depth--;
				event(f, &first, 'C', stack[depth].frame, stack[depth].e);
			}
			if (depth && x->e > stack[depth - 1].e) { /* overlaps its parent's end */
				x->e = stack[depth - 1].e;
				(*clipped)++;
			}
			if (depth == scap) {
				scap = scap ? 2 * scap : 16;
				stack = xrealloc(stack, scap, sizeof(*stack));
			}
			stack[depth++] = (struct open_span){ x->e, x->frame };
			event(f, &first, 'O', x->frame, x->s);
		}
	}
	free(stack);
	free(same);
}

static void write_head(struct ctx *c, FILE *f)
{
	const char *base = strrchr(c->path, '/');

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"name\":", f);
	put_str(c, f, base ? base + 1 : c->path);
	fprintf(f, ",\"exporter\":\"tracer %s\",\"activeProfileIndex\":0,\"shared\":{\"frames\":[",
		TRACER_VERSION);
	for (size_t i = 0; i < c->nframes; i++) {
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
		put_str(c, f, c->by_idx[i]->name);
		fputc('}', f);
	}
	fputs("]},\n\"profiles\":[", f);
}

static void ctx_free(struct ctx *c)
{
	struct sframe *f, *ft;
	struct sthread *t, *tt;
	struct sproc *p, *pt;

	HASH_ITER(hh, c->frames, f, ft) {
		HASH_DEL(c->frames, f);
		free(f->name);
		free(f);
	}
	HASH_ITER(hh, c->threads, t, tt) {
		HASH_DEL(c->threads, t);
		free(t->name);
		free(t);
	}
	HASH_ITER(hh, c->procs, p, pt) {
		HASH_DEL(c->procs, p);
		free(p->name);
		free(p);
	}
	free(c->by_idx);
	free(c->order);
	free(c->buf);
}

int trace_speedscope(const char *in, const char *out, struct speedscope_stats *st, char *err,
		     size_t errlen)
{
	struct ctx c = { .path = in };
	struct outfile *of = NULL;
	FILE *by_start = NULL, *sorted = NULL, *f = NULL;
	int ret, cret;

	memset(st, 0, sizeof(*st));
	ret = pass1(&c, err, errlen);
	st->ignored_be = c.ignored_be;
	if (ret)
		goto out;
	by_start = tmpfile();
	sorted = tmpfile();
	if (!by_start || !sorted) {
		ret = -errno;
		snprintf(err, errlen, "cannot create a temporary file: %s", strerror(errno));
		goto out;
	}
	ret = pass2(&c, by_start, err, errlen);
	if (ret)
		goto out;
	ret = fflush(by_start) ? -EIO : by_thread(by_start, sorted);
	if (!ret && fflush(sorted))
		ret = -EIO;
	if (ret) {
		snprintf(err, errlen, "cannot sort the spans in a temporary file: %s",
			 strerror(-ret));
		goto out;
	}
	ret = outfile__open(&of, out, err, errlen);
	if (ret)
		goto out;
	f = outfile__stdio(of);
	if (f) {
		for (size_t i = 0; i < c.nthreads; i++)
			st->spans += c.order[i]->spans;
		write_head(&c, f);
		write_profiles(&c, sorted, f, &st->clipped);
		fputs("]}\n", f);
		if (ferror(sorted))
			ret = -EIO;
	}
	ret = !f ? -ENOMEM : fclose(f) ? -EIO : ret;
	cret = outfile__close(of, !ret);
	if (ret || cret) {
		snprintf(err, errlen, "cannot write %s: %s", out ? out : "stdout",
			 strerror(-(ret ? ret : cret)));
		ret = ret ? ret : cret;
	}
out:
	if (by_start)
		fclose(by_start);
	if (sorted)
		fclose(sorted);
	ctx_free(&c);
	return ret < 0 ? ret : 0;
}
