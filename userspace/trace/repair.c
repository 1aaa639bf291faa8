// SPDX-License-Identifier: MIT
/* Repair: closes a trace that was cut short (tracer killed with SIGKILL, the machine lost
 * power). Every complete event line is kept and the end a recording writes is added, in a new
 * file that takes the trace's name; the file as it was stays beside it (FILE.cut). A complete
 * file is never touched. Memory is bounded: one line at a time, of at most TR_MAX_VALUE (longer
 * ones are left out, as the reader skips them), and the check streams. A .gz trace
 * (a gzip stream cut short) is read as far as it goes and repaired into a .gz again. */
#include "trace/repair.h"
#include "trace/json_text.h"
#include "trace/json_value.h"
#include "trace/trace_file.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static const char header[] = "{\"traceEvents\":[\n";

/* One line of "traceEvents": a whole JSON object, with a trailing comma. Returns its ts in ns
 * (0 when it has none) or -1 when the line is not a complete event. Nothing is allocated: a
 * trace has millions of lines. */
static int64_t event_line(const char *line, size_t len)
{
	const char *ts;
	size_t n = len - 2, tslen;
	int64_t ns = 0;

	if (len < 4 || strcmp(line + len - 2, ",\n") || line[0] != '{' || !json_valid(line, n))
		return -1;
	ts = json_object_get(line, n, "ts", &tslen);
	if (ts && (json_us_to_ns(ts, tslen, &ns) || ns < 0))
		ns = 0;
	return ns;
}

/* ---- .gz through stdio: the repair reads and writes lines, whatever the compression ---- */

static ssize_t gz_read(void *c, char *buf, size_t n)
{
	int got = gzread(c, buf, n > INT_MAX ? INT_MAX : (unsigned)n);
	int err = Z_OK;

	if (got >= 0)
		return got;
	gzerror(c, &err);
	return err == Z_BUF_ERROR ? 0 : -1; /* a stream cut short ends where it was cut */
}

static ssize_t gz_write(void *c, const char *buf, size_t n)
{
	return n && gzwrite(c, buf, n > INT_MAX ? INT_MAX : (unsigned)n) <= 0 ? -1 : (ssize_t)n;
}

static int gz_close(void *c)
{
	return gzclose(c) == Z_OK ? 0 : EOF;
}

/* A FILE over a gzip stream on fd (owned by it from here, closed with it), mode "r" or "w". */
static FILE *gz_stdio(int fd, const char *mode)
{
	cookie_io_functions_t io = { .read = gz_read, .write = gz_write, .close = gz_close };
	gzFile g = gzdopen(fd, mode[0] == 'r' ? "rb" : "wb");
	FILE *f;

	if (!g) {
		close(fd);
		return NULL;
	}
	f = fopencookie(g, mode, io);
	if (!f)
		gzclose(g);
	return f;
}

static bool is_gz(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".gz");
}

/* The whole file is one complete JSON trace (the streaming reader, in bounded memory). */
static bool complete_trace(const char *path)
{
	struct trace_reader *r;
	struct trace_item it;
	bool complete;
	int ret;

	if (trace_reader__open(&r, path, 0, NULL, 0))
		return false;
	while ((ret = trace_reader__next(r, &it)) > 0)
		;
	complete = !ret && !trace_reader__truncated(r) && !trace_reader__no_events(r);
	trace_reader__close(r);
	return complete;
}

/* The members of the "recording started" instant's args (tracer's version, the command line,
 * the clock and its zero, the CPUs): what the end's metadata would have said first. NULL if
 * the line is another event. */
static char *started_args(const char *line, size_t len)
{
	size_t nlen, alen;
	const char *name = json_object_get(line, len - 2, "name", &nlen);
	const char *args = json_object_get(line, len - 2, "args", &alen);

	if (!name || nlen != 19 || strncmp(name, "\"recording started\"", 19) || !args ||
	    args[0] != '{' || json_skip_ws(args + 1, args + alen - 1) == args + alen - 1)
		return NULL; /* not it, or no members to add */
	return strndup(args + 1, alen - 2);
}

#define LINE_TOO_LONG (-2)

/* The next line of in, '\n' included, into *line (grown up to max bytes): its length, 0 at the
 * end, -1 on an error, or LINE_TOO_LONG for a longer line, read to its end and not kept (a
 * line of a gigabyte must not take a gigabyte). */
static ssize_t read_line(FILE *in, char **line, size_t *cap, size_t max)
{
	size_t len = 0;
	bool too_long = false;
	int c;

	while ((c = getc_unlocked(in)) != EOF) {
		if (!too_long && len + 2 > *cap) {
			size_t want = *cap ? 2 * *cap : 4096;

			if (want > max + 2)
				want = max + 2;
			if (len + 2 > want) {
				too_long = true;
			} else {
				*line = xrealloc(*line, want, 1);
				*cap = want;
			}
		}
		if (!too_long)
			(*line)[len++] = (char)c;
		if (c == '\n')
			break;
	}
	if (ferror(in))
		return -1;
	if (too_long)
		return LINE_TOO_LONG;
	if (len)
		(*line)[len] = '\0';
	return len;
}

/* Copies the header and every complete event line of in to out up to the end of the array,
 * then the end a recording writes. A line that is not an event is left out and counted in
 * *dropped; one longer than the trace reader keeps (TR_MAX_VALUE) in *too_long. Returns the
 * events kept, or -errno. */
static int64_t write_repaired(FILE *in, FILE *out, uint64_t *dropped, uint64_t *too_long)
{
	uint64_t events = 0, last_ns = 0;
	char *line = NULL, *started = NULL, end[512];
	size_t cap = 0;
	ssize_t len;

	fputs(header, out);
	while ((len = read_line(in, &line, &cap, TR_MAX_VALUE)) != 0) {
		int64_t ns;

		if (len == LINE_TOO_LONG) {
			++*too_long;
			continue;
		}
		ns = len < 0 ? -1 : event_line(line, len);
		if (len < 0 || (ns < 0 && line[0] == ']'))
			break; /* the end of "traceEvents": no event after it */
		if (ns < 0) {
			*dropped += line[len - 1] == '\n'; /* not the line the cut ended */
			continue;
		}
		if (!events)
			started = started_args(line, len);
		fwrite(line, 1, len, out);
		events++;
		if ((uint64_t)ns > last_ns)
			last_ns = ns;
	}
	free(line);
	fmt_us(end, last_ns);
	fprintf(out,
		"{\"ph\":\"i\",\"s\":\"g\",\"name\":\"recording stopped\",\"pid\":0,\"tid\":0,"
		"\"ts\":%s,\"args\":{\"reason\":\"cut short; repaired\"}}\n],\n"
		"\"systemTraceEvents\":\"# tracer: nop\\n\",\n"
		"\"metadata\":{%s%s\"duration_ns\":%llu,\"repaired\":true,\"events_kept\":%llu,"
		"\"note\":\"the recording was cut short: events after the last one kept, the "
		"scheduler text and the end of the recording's metadata (counts, probes) are "
		"missing\"}}\n",
		end, started ? started : "", started ? "," : "", (unsigned long long)last_ns,
		(unsigned long long)events);
	free(started);
	if (ferror(in))
		return -EIO;
	return fflush(out) || ferror(out) ? -(errno ? errno : EIO) : (int64_t)events;
}

/* The repaired file, created by the output policy (trace_file.h). */
static FILE *create_repaired(const char *path, struct trace_file_tmp *tmp)
{
	char err[1024];
	int fd = trace_file__create(path, TF_RENAME, tmp, err, sizeof(err));
	FILE *out;

	if (fd < 0) {
		pr_err("%s; nothing was changed", err);
		return NULL;
	}
	out = is_gz(path) ? gz_stdio(fd, "w") : fdopen(fd, "w");
	if (!out) {
		pr_err("cannot write %s: %s; nothing was changed", path, strerror(errno));
		if (!is_gz(path))
			close(fd);
		trace_file__commit(tmp, path, false);
	}
	return out;
}

int trace_repair(const char *path)
{
	char *line = NULL, cut[PATH_MAX + 8];
	struct trace_file_tmp tmp;
	FILE *in = NULL, *out = NULL;
	uint64_t dropped = 0;
	size_t cap = 0;
	int64_t kept;
	uint64_t too_long = 0;
	ssize_t len;
	int fd, ret = -EINVAL;
	bool tracer_header;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	in = fd < 0 ? NULL : is_gz(path) ? gz_stdio(fd, "r") : fdopen(fd, "r");
	if (!in) {
		if (fd >= 0 && !is_gz(path))
			close(fd);
		pr_err("cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	len = read_line(in, &line, &cap, strlen(header));
	tracer_header = len == (ssize_t)strlen(header) && !strcmp(line, header);
	free(line);
	if (complete_trace(path)) { /* whoever wrote it: never cut a complete file */
		pr_info("%s is a complete trace: nothing to repair", path);
		ret = 0;
		goto out;
	}
	if (!tracer_header) {
		pr_err("%s is not a trace written by tracer (it starts with {\"traceEvents\":[ on a "
		       "line of its own): nothing was changed",
		       path);
		goto out;
	}
	snprintf(cut, sizeof(cut), "%s.cut", path);
	if (!access(cut, F_OK)) {
		pr_err("%s exists: repair keeps the file as it was there; move it away first", cut);
		goto out;
	}
	out = create_repaired(path, &tmp);
	if (!out)
		goto out;
	kept = write_repaired(in, out, &dropped, &too_long);
	if (kept >= 0 && fclose(out))
		kept = -errno;
	out = NULL;
	/* the file as it was keeps its data under another name; the repaired one takes the name */
	if (kept >= 0 && link(path, cut))
		kept = -errno;
	ret = trace_file__commit(&tmp, path, kept >= 0);
	if (ret && kept >= 0) {
		unlink(cut);
		kept = ret;
	}
	if (kept < 0) {
		ret = (int)kept;
		pr_err("cannot repair %s: %s; nothing was changed", path, strerror(-ret));
		goto out;
	}
	if (dropped)
		pr_info("repaired %s: kept %lld event%s, left out %llu line%s that %s not complete "
			"events; the file as it was is %s", path, (long long)kept, plural_s(kept),
			(unsigned long long)dropped, plural_s(dropped), dropped == 1 ? "was" : "were",
			cut);
	else
		pr_info("repaired %s: kept %lld event%s; the file as it was is %s", path,
			(long long)kept, plural_s(kept), cut);
	if (too_long)
		pr_warn("%s: %llu line%s longer than %u MB left out (no reader keeps them)", path,
			(unsigned long long)too_long, plural_s(too_long), TR_MAX_VALUE >> 20);
	ret = 0;
out:
	if (out)
		fclose(out);
	fclose(in);
	return ret;
}
