// SPDX-License-Identifier: MIT
#include "trace/trace_reader.h"
#include "trace/json_text.h"
#include "trace/trace_input.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* The fuzz build reads in small pieces, to reach the code at buffer boundaries. */
#ifdef TRACE_READER_READ_SIZE
#define READ_SIZE TRACE_READER_READ_SIZE
#else
#define READ_SIZE (1 << 20)
#endif

enum state {
	ST_START,
	ST_FIRST_KEY, /* just after the top-level '{' */
	ST_KEY,	      /* after a top-level value: ',' or '}' */
	ST_FIRST_EVENT,
	ST_EVENT,
	ST_SCHED, /* inside the "systemTraceEvents" string */
	ST_DONE,
};

struct trace_reader {
	gzFile gz;
	unsigned want;
	enum state st;
	char *buf;
	size_t pos, len;
	bool eof, truncated, top_array, saw_events, oversize;
	int err;
	uint64_t line, oversized;
	uint64_t total; /* bytes read (after decompression) */
	uint64_t bad_times; /* events left out: a ts or dur that is not a usable time */
	char *val; /* the value being captured */
	size_t val_len, val_cap;
	char *scratch; /* the current event's unescaped strings */
	size_t scratch_cap;
	char *unescaped; /* one string, before text_safe */
	size_t unescaped_cap;
	char *sline; /* the current ftrace line */
	size_t sline_len;
	char path[256];
	char msg[512];
};

static int fail(struct trace_reader *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct trace_reader *r, int err, const char *fmt, ...)
{
	int n = snprintf(r->msg, sizeof(r->msg), "%s:%llu: ", r->path,
			 (unsigned long long)r->line);
	va_list ap;

	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(r->msg))
		vsnprintf(r->msg + n, sizeof(r->msg) - n, fmt, ap);
	va_end(ap);
	r->err = err;
	return err;
}

int trace_reader__open(struct trace_reader **rp, const char *path, unsigned want, char *msg,
		       size_t msglen)
{
	struct trace_reader *r;
	int fd = trace_input__open(path), err;

	if (fd == -EFBIG) {
		if (msg)
			snprintf(msg, msglen,
				 "%s: more than %.1f GB from a pipe, which is copied to TMPDIR to "
				 "be read twice (at most half its free space, 16 GB): save it to a "
				 "file first",
				 path, trace_input__spool_max() / 1e9);
		return fd;
	}
	if (fd == -ENOEXEC) {
		if (msg)
			snprintf(msg, msglen,
				 "%s: not a trace: it starts with neither JSON nor gzip; give a "
				 "file that tracer or a Chrome trace writer wrote",
				 path);
		return fd;
	}
	if (fd < 0) {
		if (msg)
			snprintf(msg, msglen, "cannot open %s: %s", path, strerror(-fd));
		return fd;
	}
	r = xcalloc(1, sizeof(*r));
	r->gz = gzdopen(fd, "rb");
	if (!r->gz) {
		err = -ENOMEM;
		close(fd);
		if (msg)
			snprintf(msg, msglen, "cannot open %s: %s", path, strerror(-err));
		free(r);
		return err;
	}
	gzbuffer(r->gz, 256 << 10);
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->want = want;
	r->line = 1;
	r->buf = xcalloc(1, READ_SIZE);
	r->sline = xcalloc(1, TR_MAX_SCHED_LINE + 1);
	*rp = r;
	return 0;
}

void trace_reader__close(struct trace_reader *r)
{
	if (!r)
		return;
	gzclose(r->gz);
	free(r->buf);
	free(r->val);
	free(r->scratch);
	free(r->unescaped);
	free(r->sline);
	free(r);
}

const char *trace_reader__error(const struct trace_reader *r)
{
	return r->msg;
}

bool trace_reader__truncated(const struct trace_reader *r)
{
	return r->truncated;
}

uint64_t trace_reader__oversized(const struct trace_reader *r)
{
	return r->oversized;
}

uint64_t trace_reader__bad_times(const struct trace_reader *r)
{
	return r->bad_times;
}

void trace_reader__warn_skipped(const struct trace_reader *r, const char *path)
{
	if (r->oversized)
		pr_warn("%s: %" PRIu64 " event%s larger than %u MB skipped", path, r->oversized,
			plural_s(r->oversized), TR_MAX_VALUE >> 20);
	if (r->bad_times)
		pr_warn("%s: %" PRIu64 " event%s left out: a ts or dur that is not a time (NaN, "
			"beyond 9e15 us, a negative dur)",
			path, r->bad_times, plural_s(r->bad_times));
}

bool trace_reader__no_events(const struct trace_reader *r)
{
	return !r->saw_events;
}

/* Reads into dst; returns the bytes read, 0 at the end of the input or on a read error (which
 * sets r->err). */
static size_t read_more(struct trace_reader *r, char *dst, size_t room)
{
	int n, errnum = 0;
	const char *what;

	if (r->eof || r->err)
		return 0;
	n = gzread(r->gz, dst, room);
	what = n > 0 ? NULL : gzerror(r->gz, &errnum);
	if (!n && errnum == Z_BUF_ERROR) /* zlib ends a stream cut short like this */
		n = -1;
	if (n < 0) {
		if (errnum == Z_BUF_ERROR && r->total) { /* cut short: the data so far counts */
			r->eof = true;
			return 0;
		}
		if (errnum == Z_BUF_ERROR) {
			fail(r, -EIO, "a gzip file cut short before its first byte of data");
			return 0;
		}
		fail(r, -EIO, "read error: %s",
		     errnum == Z_ERRNO ? strerror(errno) : what ? what : "corrupt data");
		return 0;
	}
	if (!n)
		r->eof = true;
	r->total += n;
	return n;
}

/* False at the end of the input (or on a read error). */
static bool refill(struct trace_reader *r)
{
	size_t n = read_more(r, r->buf, READ_SIZE);

	r->pos = 0;
	r->len = n;
	return n > 0;
}

/* Makes at least n bytes available at r->pos unless the input ends first. */
static void ensure(struct trace_reader *r, size_t n)
{
	size_t have = r->len - r->pos;

	if (have >= n)
		return;
	memmove(r->buf, r->buf + r->pos, have);
	r->pos = 0;
	r->len = have;
	while (r->len < n && !r->eof && !r->err)
		r->len += read_more(r, r->buf + r->len, READ_SIZE - r->len);
}

static inline int peekc(struct trace_reader *r)
{
	if (r->pos == r->len && !refill(r))
		return -1;
	return (unsigned char)r->buf[r->pos];
}

static int skip_ws(struct trace_reader *r)
{
	for (;;) {
		int c = peekc(r);

		if (c == '\n')
			r->line++;
		else if (c != ' ' && c != '\t' && c != '\r')
			return c;
		r->pos++;
	}
}

static void keep_bytes(struct trace_reader *r, const char *p, size_t n)
{
	if (r->oversize || !n)
		return;
	if (r->val_len + n > TR_MAX_VALUE) {
		r->oversize = true;
		return;
	}
	if (r->val_len + n + 1 > r->val_cap) {
		size_t cap = r->val_cap ? r->val_cap : 4096;

		while (cap < r->val_len + n + 1)
			cap *= 2;
		r->val = xrealloc(r->val, cap, 1);
		r->val_cap = cap;
	}
	memcpy(r->val + r->val_len, p, n);
	r->val_len += n;
	r->val[r->val_len] = 0;
}

/* Reads one JSON value (any type), keeping its text in r->val if keep. 0, -E2BIG if it was
 * larger than TR_MAX_VALUE (read but not kept), -ENODATA at the end of the input, -EINVAL. */
static int scan_value(struct trace_reader *r, bool keep)
{
	struct json_scan sc = { 0 };
	int c = peekc(r);
	bool scalar;

	r->val_len = 0;
	r->oversize = false;
	if (c < 0)
		return r->err ? r->err : -ENODATA;
	if (c == ',' || c == ':' || c == '}' || c == ']')
		return -EINVAL;
	scalar = c != '"' && c != '{' && c != '[';
	for (;;) {
		const char *p, *s, *end;

		if (r->pos == r->len && !refill(r))
			return r->err ? r->err : scalar ? 0 : -ENODATA;
		s = p = r->buf + r->pos;
		end = r->buf + r->len;
		for (; p < end; p++) {
			char ch = *p;

			if (scalar) {
				if (ch && strchr(",}] \t\r\n", ch))
					goto done;
				continue;
			}
			if (ch == '\n' && !sc.in_str)
				r->line++;
			if (json_scan__byte(&sc, ch)) {
				p++;
				goto done;
			}
		}
		if (keep)
			keep_bytes(r, s, p - s);
		r->pos = r->len;
		continue;
done:
		if (keep)
			keep_bytes(r, s, p - s);
		r->pos = p - r->buf;
		return r->oversize ? -E2BIG : 0;
	}
}

static bool json_int(const char *s, size_t len, int64_t *v)
{
	int64_t ns;

	/* integers, and integral numbers written another way (1e3, 12.0) */
	if (json_us_to_ns(s, len, &ns) || ns % 1000)
		return false;
	*v = ns / 1000;
	return true;
}

/* ---- events ------------------------------------------------------------------------------ */

static bool key_is(const char *k, size_t klen, const char *want)
{
	size_t n = strlen(want);

	return klen == n + 2 && !memcmp(k + 1, want, n);
}

/* Unescapes the string value at v into the scratch area, made safe to print (text_safe: names
 * come from the target); returns it ("" if not a string). */
static const char *scratch_str(struct trace_reader *r, char **o, const char *v, size_t vlen)
{
	char *start = *o;
	size_t n;

	if (!vlen || *v != '"' || !json_unescape(v, vlen, r->unescaped, r->unescaped_cap, &n))
		return "";
	*o = start + text_safe(start, 3 * vlen + 1, r->unescaped, n) + 1;
	return start;
}

static struct text_span at(const char *text, const char *v, size_t vlen)
{
	return (struct text_span){ (uint32_t)(v - text), (uint32_t)vlen };
}

static int parse_event(struct trace_reader *r, struct trace_event *ev)
{
	const char *text = r->val, *p = text, *end = text + r->val_len;
	char *o;

	memset(ev, 0, sizeof(*ev));
	ev->text = text;
	ev->len = r->val_len;
	ev->name = ev->cat = "";
	/* text_safe may make a byte three; the strings together are shorter than the event */
	if (r->scratch_cap < 3 * r->val_len + 8) {
		r->scratch_cap = 3 * r->val_len + 8;
		r->scratch = xrealloc(r->scratch, r->scratch_cap, 1);
		r->unescaped_cap = r->val_len + 8;
		r->unescaped = xrealloc(r->unescaped, r->unescaped_cap, 1);
	}
	o = r->scratch;
	if (*p != '{')
		return -EINVAL;
	for (p++;;) {
		const char *k, *v;
		size_t klen, vlen;

		p = json_skip_ws(p, end);
		if (p < end && *p == '}')
			return 0;
		if (p >= end || *p != '"')
			return -EINVAL;
		k = p;
		klen = json_value_len(p, end - p);
		if (!klen)
			return -EINVAL;
		p = json_skip_ws(p + klen, end);
		if (p >= end || *p != ':')
			return -EINVAL;
		v = json_skip_ws(p + 1, end);
		vlen = json_value_len(v, end - v);
		if (!vlen)
			return -EINVAL;
		if (key_is(k, klen, "ph")) {
			ev->ph = vlen > 2 && *v == '"' ? v[1] : 0;
		} else if (key_is(k, klen, "name")) {
			ev->name = scratch_str(r, &o, v, vlen);
			ev->name_at = at(text, v, vlen);
		} else if (key_is(k, klen, "cat")) {
			ev->cat = scratch_str(r, &o, v, vlen);
			ev->cat_at = at(text, v, vlen);
		} else if (key_is(k, klen, "ts")) {
			ev->has_ts = !json_us_to_ns(v, vlen, &ev->ts_ns);
			ev->bad_time |= !ev->has_ts;
			ev->ts_at = at(text, v, vlen);
		} else if (key_is(k, klen, "dur")) {
			ev->has_dur = !json_us_to_ns(v, vlen, &ev->dur_ns) && ev->dur_ns >= 0;
			ev->bad_time |= !ev->has_dur;
		} else if (key_is(k, klen, "pid")) {
			ev->has_pid = json_int(v, vlen, &ev->pid);
			ev->pid_at = at(text, v, vlen);
		} else if (key_is(k, klen, "tid")) {
			ev->has_tid = json_int(v, vlen, &ev->tid);
			ev->tid_at = at(text, v, vlen);
		} else if (key_is(k, klen, "args")) {
			const char *n;
			size_t nlen;

			ev->args_at = at(text, v, vlen);
			n = json_object_get(v, vlen, "name", &nlen);
			if (n && *n == '"')
				ev->arg_name = scratch_str(r, &o, n, nlen);
		} else if (key_is(k, klen, "id")) {
			ev->id_at = at(text, v, vlen);
		} else if (key_is(k, klen, "bind_id")) {
			ev->bind_id_at = at(text, v, vlen);
		}
		p = json_skip_ws(v + vlen, end);
		if (p < end && *p == ',')
			p++;
		else if (p >= end || *p != '}')
			return -EINVAL;
	}
}

/* ---- the top-level walk -------------------------------------------------------------- */

static int read_key(struct trace_reader *r, char *key, size_t len)
{
	int ret = scan_value(r, true);

	if (ret == -E2BIG) {
		key[0] = 0;
		return 0;
	}
	if (ret)
		return ret;
	if (!json_unescape(r->val, r->val_len, key, len, NULL))
		return -EINVAL;
	return 0;
}

/* The end of the input where more was expected: a truncated file, or a read error. */
static int cut_short(struct trace_reader *r)
{
	if (r->err)
		return r->err;
	r->truncated = true;
	r->st = ST_DONE;
	return 0;
}

static int emit_sched_line(struct trace_reader *r, struct trace_item *it)
{
	size_t n = r->sline_len;

	r->sline_len = 0;
	if (n && r->sline[n - 1] == '\r')
		n--;
	if (!n)
		return 0;
	r->sline[n] = 0;
	it->type = TI_SCHED;
	it->text = r->sline;
	it->len = n;
	return 1;
}

static void sched_byte(struct trace_reader *r, char c)
{
	if (r->sline_len < TR_MAX_SCHED_LINE)
		r->sline[r->sline_len++] = c;
}

/* Inside the systemTraceEvents string: 1 with a line, 0 at its end (state moved on). */
static int next_sched(struct trace_reader *r, struct trace_item *it)
{
	bool want = r->want & TR_SCHED;

	for (;;) {
		const char *p, *end;

		if (r->pos == r->len && !refill(r))
			return cut_short(r) ? r->err : 0;
		p = r->buf + r->pos;
		end = r->buf + r->len;
		for (; p < end; p++) {
			char c = *p, tmp[4];
			size_t n, used;

			if (c == '"') {
				r->pos = p + 1 - r->buf;
				r->st = ST_KEY;
				return want ? emit_sched_line(r, it) : 0;
			}
			if ((unsigned char)c < 0x20) /* JSON strings hold no raw control bytes */
				return fail(r, -EINVAL, "control character in systemTraceEvents");
			if (c != '\\') { /* a run of plain bytes */
				const char *q = p + 1;

				while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
					q++;
				if (want) {
					size_t n = q - p, room = TR_MAX_SCHED_LINE - r->sline_len;

					memcpy(r->sline + r->sline_len, p, n < room ? n : room);
					r->sline_len += n < room ? n : room;
				}
				p = q - 1;
				continue;
			}
			/* an escape (at most 12 bytes) may cross the end of the buffer */
			if (end - p < 13 && !r->eof) {
				r->pos = p - r->buf;
				ensure(r, 13);
				if (r->err)
					return r->err;
				goto next;
			}
			if (!want) {
				p++;
				continue;
			}
			used = json_unescape_one(p + 1, end, tmp, &n);
			/* cut short inside an escape, not a complete escape that is invalid */
			if (!used && r->eof && json_escape_cut(p + 1, end)) {
				r->pos = r->len; /* the file ends inside the escape */
				return cut_short(r);
			}
			if (!used)
				return fail(r, -EINVAL, "bad escape in systemTraceEvents");
			p += used;
			if (n == 1 && tmp[0] == '\n') {
				r->pos = p + 1 - r->buf;
				if (emit_sched_line(r, it))
					return 1;
				goto next;
			}
			for (size_t i = 0; i < n; i++)
				sched_byte(r, tmp[i]);
		}
		r->pos = r->len;
next:;
	}
}

/* After scan_value: true to use the value; else *step is what the step returns: 0 for a value
 * too large (skipped, counted) or the input ending inside it, or the failure, said as what. */
static bool scanned(struct trace_reader *r, int ret, int *step, const char *what)
{
	if (!ret)
		return true;
	if (ret == -ENODATA) {
		*step = cut_short(r);
	} else if (ret == -E2BIG) {
		r->oversized++;
		*step = 0;
	} else {
		*step = fail(r, ret, "%s", what);
	}
	return false;
}

/* Each step reads one piece of the top level: 1 with an item in it, 0 to go on, or -errno. */

static int step_start(struct trace_reader *r)
{
	int c = skip_ws(r);

	if (c == '{') {
		r->st = ST_FIRST_KEY;
	} else if (c == '[') {
		r->top_array = r->saw_events = true;
		r->st = ST_FIRST_EVENT;
	} else if (c < 0) {
		return r->err ? r->err : fail(r, -EINVAL, "the file is empty");
	} else {
		return fail(r, -EINVAL, "not a Chrome trace: JSON must start with { or [");
	}
	r->pos++;
	return 0;
}

/* A top-level key and its value: the events or the scheduler text start, metadata is handed
 * out, anything else is skipped. */
static int step_key(struct trace_reader *r, struct trace_item *it)
{
	char key[64], what[96];
	int c = skip_ws(r), ret;

	if (c < 0)
		return cut_short(r);
	if (c == '}') {
		r->pos++;
		r->st = ST_DONE;
		return 0;
	}
	if (r->st == ST_KEY) {
		if (c != ',')
			return fail(r, -EINVAL, "expected ',' or '}' after a value");
		r->pos++;
		c = skip_ws(r);
	}
	if (c < 0)
		return cut_short(r);
	if (c != '"')
		return fail(r, -EINVAL, "expected a key");
	ret = read_key(r, key, sizeof(key));
	if (ret == -ENODATA)
		return cut_short(r);
	if (ret)
		return fail(r, ret, "malformed key");
	c = skip_ws(r);
	if (c < 0)
		return cut_short(r);
	if (c != ':')
		return fail(r, -EINVAL, "expected ':' after \"%s\"", key);
	r->pos++;
	c = skip_ws(r);
	if (c < 0)
		return cut_short(r);
	r->st = ST_KEY;
	if (!strcmp(key, "traceEvents") && c == '[') {
		r->pos++;
		r->saw_events = true;
		r->st = ST_FIRST_EVENT;
		return 0;
	}
	if (!strcmp(key, "systemTraceEvents") && c == '"') {
		r->pos++;
		r->sline_len = 0;
		r->st = ST_SCHED;
		return 0;
	}
	snprintf(what, sizeof(what), "malformed value of \"%s\"", key);
	if (!scanned(r, scan_value(r, !strcmp(key, "metadata") && (r->want & TR_METADATA)), &ret,
		     what))
		return ret;
	if (!strcmp(key, "metadata") && (r->want & TR_METADATA)) {
		it->type = TI_METADATA;
		it->text = r->val;
		it->len = r->val_len;
		return 1;
	}
	return 0;
}

/* One element of the events array, or its end. */
static int step_event(struct trace_reader *r, struct trace_item *it)
{
	int c = skip_ws(r), ret;

	if (c < 0)
		return cut_short(r);
	if (c == ',' && r->st == ST_EVENT) {
		r->pos++;
		c = skip_ws(r);
		if (c < 0)
			return cut_short(r);
	} else if (c != ']' && r->st == ST_EVENT) {
		return fail(r, -EINVAL, "expected ',' or ']' between events");
	}
	if (c == ']') { /* also after a trailing comma, which viewers accept */
		r->pos++;
		r->st = r->top_array ? ST_DONE : ST_KEY;
		return 0;
	}
	r->st = ST_EVENT;
	if (!scanned(r, scan_value(r, r->want & TR_EVENTS), &ret, "malformed event"))
		return ret;
	if (!(r->want & TR_EVENTS))
		return 0;
	if (parse_event(r, &it->ev))
		return fail(r, -EINVAL, "an event that is not a well-formed object");
	if (it->ev.bad_time) { /* no reader can place it: left out, counted */
		r->bad_times++;
		return 0;
	}
	it->type = TI_EVENT;
	return 1;
}

int trace_reader__next(struct trace_reader *r, struct trace_item *it)
{
	int ret = 0;

	memset(it, 0, sizeof(*it));
	while (!ret) {
		if (r->err)
			return r->err;
		switch (r->st) {
		case ST_START:
			ret = step_start(r);
			break;
		case ST_FIRST_KEY:
		case ST_KEY:
			ret = step_key(r, it);
			break;
		case ST_FIRST_EVENT:
		case ST_EVENT:
			ret = step_event(r, it);
			break;
		case ST_SCHED:
			ret = next_sched(r, it);
			break;
		case ST_DONE:
			return 0;
		}
	}
	return ret;
}
