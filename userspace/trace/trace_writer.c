// SPDX-License-Identifier: MIT
#include "trace/trace_writer.h"
#include "trace/ftrace_line.h"
#include "trace/json_text.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define BUF_SIZE (1 << 20)
#define BUF_ROOM 8192 /* the longest event line fits in this */
/* catapult needs "# tracer:" first; the clock line puts its ftrace clock domain on the JSON
 * events' (monotonic), which it otherwise refuses to align. Escaped for the JSON string. */
#define SCHED_TEXT_HEADER "# tracer: nop\\n# clock_type=LINUX_CLOCK_MONOTONIC\\n"

struct trace_writer;

/* Where bytes go: a plain file or a gzip stream. */
struct sink_ops {
	int (*write)(struct trace_writer *w, const char *p, size_t len);
	int (*close)(struct trace_writer *w);
};

/* A place the file can be cut at and closed: after a flush that ended with a whole event line
 * (and, for gzip, a deflate sync point). */
struct cut_point {
	uint64_t off;  /* file offset */
	uint64_t in;   /* bytes of JSON before it */
	uint32_t crc;  /* gzip: CRC-32 of those bytes */
};

struct trace_writer {
	const struct sink_ops *ops;
	int fd;
	/* gzip: one member written by hand (raw deflate, header, trailer), flushed to a sync
	 * point at every buffer flush, so it can be cut there and finished when the disk fills */
	z_stream z;
	uint32_t crc;
	uint64_t in, out;
	FILE *sched; /* ftrace text lines, copied into "systemTraceEvents" at the end */
	uint64_t t0;
	uint64_t events, bytes, sched_lines, sched_bytes;
	/* File offsets after the last successful flushes: each ends a complete event line, where
	 * the file can be cut and closed when the disk fills up. */
	struct cut_point good[8];
	unsigned int ngood;
	size_t partial; /* bytes of a failed write that did reach the file */
	int err;
	size_t len;
	char buf[BUF_SIZE];
};

static int plain_write(struct trace_writer *w, const char *p, size_t len)
{
	w->partial = 0;
	while (len) {
		ssize_t n = write(w->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= n;
		w->partial += n;
	}
	return 0;
}

static int plain_close(struct trace_writer *w)
{
	int ret = fsync(w->fd) && errno != EINVAL ? -errno : 0;

	if (close(w->fd) && !ret)
		ret = -errno;
	return ret;
}

static const unsigned char gzip_magic[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };

static int gz_start(struct trace_writer *w)
{
	memset(&w->z, 0, sizeof(w->z));
	if (deflateInit2(&w->z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	return 0;
}

/* Deflates p (flush: Z_FULL_FLUSH or Z_FINISH) straight to the file. */
static int gz_deflate(struct trace_writer *w, const char *p, size_t len, int flush)
{
	unsigned char out[64 << 10];
	int ret;

	w->z.next_in = (unsigned char *)p;
	w->z.avail_in = len;
	do {
		w->z.next_out = out;
		w->z.avail_out = sizeof(out);
		if (deflate(&w->z, flush) == Z_STREAM_ERROR)
			return -EIO;
		ret = plain_write(w, (const char *)out, sizeof(out) - w->z.avail_out);
		if (ret)
			return ret;
		w->out += sizeof(out) - w->z.avail_out;
	} while (w->z.avail_out == 0);
	return 0;
}

static int gz_write(struct trace_writer *w, const char *p, size_t len)
{
	int ret;

	if (!w->out) {
		ret = plain_write(w, (const char *)gzip_magic, sizeof(gzip_magic));
		if (ret)
			return ret;
		w->out = sizeof(gzip_magic);
	}
	w->crc = crc32(w->crc, (const unsigned char *)p, len);
	w->in += len;
	return gz_deflate(w, p, len, Z_FULL_FLUSH);
}

static int gz_close(struct trace_writer *w)
{
	unsigned char trailer[8];
	int ret = w->err;

	if (!ret && !w->out)
		ret = gz_write(w, "", 0);
	if (!ret)
		ret = gz_deflate(w, "", 0, Z_FINISH);
	for (int i = 0; i < 4; i++) {
		trailer[i] = w->crc >> (8 * i);
		trailer[4 + i] = (uint32_t)w->in >> (8 * i);
	}
	if (!ret)
		ret = plain_write(w, (const char *)trailer, sizeof(trailer));
	deflateEnd(&w->z);
	return plain_close(w) ?: ret;
}

static const struct sink_ops plain_ops = { plain_write, plain_close };
static const struct sink_ops gz_ops = { gz_write, gz_close };

static void good_at(struct trace_writer *w, uint64_t off, uint64_t in)
{
	struct cut_point *c = &w->good[w->ngood++ % 8];

	c->off = off;
	c->in = in;
	c->crc = w->crc;
}

/* A write failed after `partial` bytes of the buffer reached the file: the line ends in that
 * part are places to cut at, the latest first (earlier ones leave more room for the end). */
static void note_partial(struct trace_writer *w)
{
	static const size_t back[] = { 64 << 10, 16 << 10, 0 };

	for (int i = 0; i < 3; i++) {
		char *nl;

		if (w->partial <= back[i])
			continue;
		nl = memrchr(w->buf, '\n', w->partial - back[i]);
		if (nl)
			good_at(w, w->bytes + (nl - w->buf) + 1, w->bytes + (nl - w->buf) + 1);
	}
}

static void flush(struct trace_writer *w)
{
	if (!w->err && w->len) {
		w->err = w->ops->write(w, w->buf, w->len);
		if (!w->err)
			good_at(w, w->ops == &gz_ops ? w->out : w->bytes + w->len,
				w->bytes + w->len);
		else if (w->ops == &plain_ops)
			note_partial(w);
	}
	w->bytes += w->len;
	w->len = 0;
}

void trace_writer__flush(struct trace_writer *w)
{
	flush(w);
	fflush(w->sched); /* whole lines for a reader of trace_writer__sched_fd */
}

int trace_writer__sched_fd(const struct trace_writer *w)
{
	return fileno(w->sched);
}

/* Makes room for one event line; returns where to write it. */
static char *reserve(struct trace_writer *w)
{
	if (w->len > BUF_SIZE - BUF_ROOM)
		flush(w);
	return w->buf + w->len;
}

static void commit(struct trace_writer *w, char *end)
{
	w->len = end - w->buf;
	w->events++;
}

static char *put(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

static char *put_us(char *p, uint64_t ns)
{
	return p + fmt_us(p, ns);
}

/* A string field's value, escaped and bounded (names from the target are untrusted). */
static char *put_str(char *p, const char *s, size_t max)
{
	*p++ = '"';
	p += json_escape(p, 6 * max + 1, s, max);
	*p++ = '"';
	return p;
}

int trace_writer__open(struct trace_writer **wp, const char *path, int fd, uint64_t t0_ns)
{
	struct trace_writer *w = calloc(1, sizeof(*w));
	size_t l = strlen(path);

	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->t0 = t0_ns;
	w->ops = &plain_ops;
	if (l > 3 && !strcmp(path + l - 3, ".gz")) {
		if (gz_start(w)) {
			free(w);
			return -ENOMEM;
		}
		w->ops = &gz_ops;
	}
	w->sched = tmpfile();
	if (!w->sched) {
		int ret = -errno;

		w->ops->close(w);
		free(w);
		return ret;
	}
	w->len = snprintf(w->buf, BUF_SIZE, "{\"traceEvents\":[\n");
	*wp = w;
	return 0;
}

void trace_writer__process_name(struct trace_writer *w, int pid, const char *name)
{
	char *p = reserve(w);

	p = put(p, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
	p = json_put_u64(p, pid);
	p = put(p, ",\"tid\":");
	p = json_put_u64(p, pid);
	p = put(p, ",\"args\":{\"name\":");
	p = put_str(p, name, 256);
	commit(w, put(p, "}},\n"));
}

void trace_writer__thread_name(struct trace_writer *w, int pid, int tid, const char *name)
{
	char *p = reserve(w);

	p = put(p, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
	p = json_put_u64(p, pid);
	p = put(p, ",\"tid\":");
	p = json_put_u64(p, tid);
	p = put(p, ",\"args\":{\"name\":");
	p = put_str(p, name, 128); /* a comm, or Python's longer name (record/threads.h) */
	commit(w, put(p, "}},\n"));
}

static uint64_t rel(const struct trace_writer *w, uint64_t ns)
{
	return ns > w->t0 ? ns - w->t0 : 0;
}

static char *put_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p++ = '-';
		return json_put_u64(p, -(uint64_t)v);
	}
	return json_put_u64(p, v);
}

static char *put_pid_tid(char *p, int pid, int tid)
{
	p = put(p, ",\"pid\":");
	p = json_put_u64(p, pid);
	p = put(p, ",\"tid\":");
	return json_put_u64(p, tid);
}

/* ,"args":{...} with the span's own members and the marks of how it ended. */
static char *put_args(char *p, const char *args, uint32_t flags)
{
	static const struct {
		uint32_t flag;
		const char *member;
	} marks[] = { { SPAN_INCOMPLETE, "\"incomplete\":true" },
		      { SPAN_EXCEPTION, "\"exception\":true" } };
	bool any = args && *args;

	if (!any && !(flags & (SPAN_INCOMPLETE | SPAN_EXCEPTION)))
		return p;
	p = put(p, ",\"args\":{");
	if (any)
		p = put(p, args);
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		if (!(flags & marks[i].flag))
			continue;
		p = put(p, any ? "," : "");
		p = put(p, marks[i].member);
		any = true;
	}
	return put(p, "}");
}

void trace_writer__span(struct trace_writer *w, const struct span_rec *r, const char *name,
			const char *cat, const char *args)
{
	char *p = reserve(w);
	bool instant = r->flags & SPAN_INSTANT;

	p = put(p, instant ? "{\"ph\":\"i\",\"s\":\"t\",\"name\":" : "{\"ph\":\"X\",\"name\":");
	p = put_str(p, name, 256);
	p = put(p, ",\"cat\":\"");
	p = put(p, cat);
	p = put(p, "\",\"ts\":");
	p = put_us(p, rel(w, r->start_ns));
	if (!instant) {
		p = put(p, ",\"dur\":");
		p = put_us(p, r->end_ns - r->start_ns);
	}
	p = put_pid_tid(p, r->pid, r->tid);
	p = put_args(p, args, r->flags);
	commit(w, put(p, "},\n"));
}

void trace_writer__instant(struct trace_writer *w, int pid, int tid, uint64_t ts_ns,
			   const char *name, const char *args)
{
	char *p = reserve(w);

	p = put(p, "{\"ph\":\"i\",\"s\":\"t\",\"name\":");
	p = put_str(p, name, 256);
	p = put(p, ",\"cat\":\"tracer\",\"ts\":");
	p = put_us(p, rel(w, ts_ns));
	p = put_pid_tid(p, pid, tid);
	p = put_args(p, args, false);
	commit(w, put(p, "},\n"));
}

void trace_writer__started(struct trace_writer *w, const char *args)
{
	char *p = reserve(w);

	p = put(p, "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"recording started\",\"pid\":0,"
		   "\"tid\":0,\"ts\":0");
	p = put_args(p, args, false);
	commit(w, put(p, "},\n"));
}

void trace_writer__counter(struct trace_writer *w, int pid, uint64_t ts_ns, const char *name,
			   const char *key, int64_t value)
{
	char *p = reserve(w);

	p = put(p, "{\"ph\":\"C\",\"name\":");
	p = put_str(p, name, 256);
	p = put(p, ",\"ts\":");
	p = put_us(p, rel(w, ts_ns));
	p = put_pid_tid(p, pid, pid);
	p = put(p, ",\"args\":{");
	p = put_str(p, key, 64);
	p = put(p, ":");
	p = put_i64(p, value);
	commit(w, put(p, "}},\n"));
}

void trace_writer__flow(struct trace_writer *w, uint64_t id, int from_pid, int from_tid,
			uint64_t from_ns, int to_pid, int to_tid, uint64_t to_ns)
{
	char *p = reserve(w);

	p = put(p, "{\"ph\":\"s\",\"name\":\"wakeup\",\"cat\":\"wakeup\",\"id\":");
	p = json_put_u64(p, id);
	p = put(p, ",\"ts\":");
	p = put_us(p, rel(w, from_ns));
	p = put_pid_tid(p, from_pid, from_tid);
	commit(w, put(p, "},\n"));
	p = reserve(w);
	p = put(p, "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"wakeup\",\"cat\":\"wakeup\",\"id\":");
	p = json_put_u64(p, id);
	p = put(p, ",\"ts\":");
	p = put_us(p, rel(w, to_ns));
	p = put_pid_tid(p, to_pid, to_tid);
	commit(w, put(p, "},\n"));
}

void trace_writer__switch(struct trace_writer *w, const struct switch_rec *r)
{
	w->sched_bytes += ftrace_line__print_switch(w->sched, rel(w, r->ts), r);
	w->sched_lines++;
}

void trace_writer__wakeup(struct trace_writer *w, const struct wakeup_rec *r)
{
	w->sched_bytes += ftrace_line__print_wakeup(w->sched, rel(w, r->ts), r);
	w->sched_lines++;
}

uint64_t trace_writer__events(const struct trace_writer *w)
{
	return w->events + w->sched_lines;
}

uint64_t trace_writer__bytes(const struct trace_writer *w)
{
	return w->bytes + w->len + w->sched_bytes;
}

int trace_writer__error(const struct trace_writer *w)
{
	return w->err;
}

/* Copies the ftrace text into the JSON string, escaped, a whole number of lines at a time (so
 * that no UTF-8 sequence in a comm is split between two chunks). */
static void write_sched_text(struct trace_writer *w)
{
	char in[8192];
	size_t have = 0, n;

	if (fflush(w->sched) || fseek(w->sched, 0, SEEK_SET)) {
		w->err = w->err ? w->err : -EIO;
		return;
	}
	flush(w);
	w->len = snprintf(w->buf, BUF_SIZE, "\"%s", SCHED_TEXT_HEADER);
	while ((n = fread(in + have, 1, sizeof(in) - 1 - have, w->sched)) > 0 || have) {
		size_t len = have + n, lines = len;
		char *nl;

		in[len] = 0;
		nl = memrchr(in, '\n', len);
		if (nl && n) /* keep a partial last line for the next round */
			lines = nl - in + 1;
		if (w->len + 6 * lines + 16 > BUF_SIZE)
			flush(w);
		w->len += json_escape(w->buf + w->len, BUF_SIZE - w->len, in, lines);
		have = len - lines;
		memmove(in, in + lines, have);
		if (!n)
			break;
	}
	w->buf[w->len++] = '"';
}

/* Ends "traceEvents" and writes the rest of the file. */
static void write_footer(struct trace_writer *w, uint64_t end_ns, const char *stop_reason,
			 const char *metadata_json, bool sched_text)
{
	char *p = reserve(w);

	/* The last event has no comma after it. */
	p = put(p, "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"recording stopped\",\"pid\":0,\"tid\":0,"
		   "\"ts\":");
	p = put_us(p, rel(w, end_ns));
	p = put(p, ",\"args\":{\"reason\":");
	p = put_str(p, stop_reason, 128);
	commit(w, put(p, "}}\n],\n\"systemTraceEvents\":"));
	if (sched_text) {
		write_sched_text(w);
	} else {
		p = reserve(w);
		commit(w, put(p, "\"" SCHED_TEXT_HEADER "\""));
	}
	flush(w);
	w->len = snprintf(w->buf, 16, ",\n\"metadata\":");
	flush(w);
	if (!w->err)
		w->err = w->ops->write(w, metadata_json, strlen(metadata_json));
	w->len = snprintf(w->buf, 16, "}\n");
	flush(w);
}

/* The disk filled up: cut the file at the latest complete event line (for gzip, the latest
 * sync point) that leaves room for the footer (without the scheduler text), so what was
 * written stays a valid trace. */
static int recover(struct trace_writer *w, uint64_t end_ns, const char *stop_reason,
		   const char *metadata_json)
{
	static const char header[] = "{\"traceEvents\":[\n";
	unsigned int n = w->ngood < 8 ? w->ngood : 8;
	struct cut_point cuts[8];

	/* newest first; the failed attempts below add points of their own: not to these */
	for (unsigned int k = 0; k < n; k++)
		cuts[k] = w->good[(w->ngood - 1 - k) % 8];
	for (int k = 0; k <= (int)n; k++) {
		struct cut_point c = { 0 };

		if (k < (int)n)
			c = cuts[k];
		if (ftruncate(w->fd, c.off) || lseek(w->fd, c.off, SEEK_SET) < 0)
			return -errno;
		w->err = 0;
		w->len = 0;
		w->bytes = c.in;
		if (w->ops == &gz_ops) {
			/* a new raw deflate continues the member: blocks follow blocks */
			deflateEnd(&w->z);
			if (gz_start(w))
				return -ENOMEM;
			w->crc = c.crc;
			w->in = c.in;
			w->out = c.off;
		}
		if (!c.off)
			w->len = snprintf(w->buf, BUF_SIZE, "%s", header);
		write_footer(w, end_ns, stop_reason, metadata_json, false);
		if (!w->err)
			return 0;
	}
	return w->err;
}

int trace_writer__close(struct trace_writer *w, uint64_t end_ns, const char *stop_reason,
			const char *metadata_json)
{
	int ret, first_err;

	if (!w->err)
		write_footer(w, end_ns, stop_reason, metadata_json, true);
	first_err = w->err;
	if (first_err)
		recover(w, end_ns, stop_reason, metadata_json);
	ret = w->ops->close(w);
	ret = first_err ? first_err : ret;
	fclose(w->sched);
	free(w);
	return ret;
}
