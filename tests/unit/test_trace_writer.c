// SPDX-License-Identifier: MIT
/* Unit test of userspace/trace/trace_writer.c: the escaping and number helpers, then whole files
 * (plain and gzip) read back and parsed, then a write error. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "trace/ftrace_line.h"
#include "trace/json_text.h"
#include "trace/trace_writer.h"
#include "unit.h"

#define FFFD "\xef\xbf\xbd"
#define T0 1000000000000ull /* the trace's zero, in CLOCK_MONOTONIC ns */

static const char *esc(const char *s, size_t len, size_t max)
{
	static char out[1024];

	json_escape(out, len, s, max);
	return out;
}

static void test_json_escape_ascii(void)
{
	char out[64];

	CHECK_STR(esc("plain text", 64, 100), "plain text");
	CHECK_STR(esc("a\"b\\c", 64, 100), "a\\\"b\\\\c");
	CHECK_STR(esc("l1\nl2\tx\ry", 64, 100), "l1\\nl2\\tx\\ry");
	CHECK_STR(esc("\x01\x1f\x08\x0c", 64, 100), "\\u0001\\u001f\\u0008\\u000c");
	CHECK_STR(esc("del\x7f!", 64, 100), "del\\u007f!");
	CHECK_STR(esc("", 64, 100), "");
	CHECK(json_escape(out, sizeof(out), "a\"b", 100) == 4);
	CHECK_STR(out, "a\\\"b");
	/* the NUL ends the input even when max is larger */
	CHECK(json_escape(out, sizeof(out), "ab\0cd", 5) == 2);
}

static void test_json_escape_utf8(void)
{
	/* valid 2, 3 and 4 byte sequences are kept as they are */
	CHECK_STR(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", 64, 100),
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf");
	/* a lone continuation byte */
	CHECK_STR(esc("a\x80z", 64, 100), "a" FFFD "z");
	/* a truncated sequence: each byte of it is replaced */
	CHECK_STR(esc("a\xe2\x82z", 64, 100), "a" FFFD FFFD "z");
	CHECK_STR(esc("a\xe2\x82", 64, 100), "a" FFFD FFFD);
	/* overlong encodings */
	CHECK_STR(esc("\xc0\xaf", 64, 100), FFFD FFFD);
	CHECK_STR(esc("\xe0\x80\xaf", 64, 100), FFFD FFFD FFFD);
	/* a UTF-16 surrogate */
	CHECK_STR(esc("\xed\xa0\x80", 64, 100), FFFD FFFD FFFD);
	/* beyond U+10FFFF */
	CHECK_STR(esc("\xf4\x90\x80\x80", 64, 100), FFFD FFFD FFFD FFFD);
	CHECK_STR(esc("\xff\xfe", 64, 100), FFFD FFFD);
	/* a valid sequence cut by max is not valid any more */
	CHECK_STR(esc("\xc3\xa9", 64, 1), FFFD);
}

static void test_json_escape_bounds(void)
{
	char out[16];

	memset(out, 'X', sizeof(out));
	/* at most len-1 bytes plus the NUL, never half an escape */
	CHECK(json_escape(out, 5, "abcdefgh", 100) == 4);
	CHECK_STR(out, "abcd");
	CHECK(out[5] == 'X');
	CHECK(json_escape(out, 5, "ab\"c", 100) == 4);
	CHECK_STR(out, "ab\\\"");
	CHECK(json_escape(out, 5, "abc\"", 100) == 3);
	CHECK_STR(out, "abc");
	CHECK(json_escape(out, 6, "a\x01", 100) == 1);
	CHECK_STR(out, "a");
	CHECK(json_escape(out, 4, "\xc3\xa9\xc3\xa9", 100) == 2);
	CHECK_STR(out, "\xc3\xa9");
	CHECK(json_escape(out, 3, "\x80", 100) == 0);
	CHECK_STR(out, "");
	out[0] = 'X';
	CHECK(json_escape(out, 0, "abc", 100) == 0);
	CHECK(out[0] == 'X');
	/* max bytes of input */
	CHECK(json_escape(out, sizeof(out), "abcdef", 3) == 3);
	CHECK_STR(out, "abc");
	CHECK(json_escape(out, sizeof(out), "abcdef", 0) == 0);
	CHECK_STR(out, "");
}

static const char *us(uint64_t ns)
{
	static char out[32];
	size_t n = fmt_us(out, ns);

	CHECK(n == strlen(out));
	return out;
}

static void test_fmt_us(void)
{
	CHECK_STR(us(0), "0.000");
	CHECK_STR(us(1), "0.001");
	CHECK_STR(us(10), "0.010");
	CHECK_STR(us(999), "0.999");
	CHECK_STR(us(1000), "1.000");
	CHECK_STR(us(1234567), "1234.567");
	CHECK_STR(us(3600000000000ull), "3600000000.000");
	CHECK_STR(us(1000000000000000001ull), "1000000000000000.001");
	CHECK_STR(us(UINT64_MAX), "18446744073709551.615");
}

static void test_ftrace_prev_state(void)
{
	CHECK_STR(ftrace_prev_state(0, false), "R");
	CHECK_STR(ftrace_prev_state(0, true), "R+");
	CHECK_STR(ftrace_prev_state(1, true), "R+");
	CHECK_STR(ftrace_prev_state(2, true), "R+");
	CHECK_STR(ftrace_prev_state(1, false), "S");
	CHECK_STR(ftrace_prev_state(2, false), "D");
	CHECK_STR(ftrace_prev_state(0x402, false), "S");
	CHECK_STR(ftrace_prev_state(4, false), "T");
	CHECK_STR(ftrace_prev_state(8, false), "t");
	CHECK_STR(ftrace_prev_state(0x20, false), "Z");
	CHECK_STR(ftrace_prev_state(0x10, false), "X");
	CHECK_STR(ftrace_prev_state(0x80, false), "X");
}

/* ---- whole files ---- */

static char *read_plain(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = 0;
	fclose(f);
	return buf;
}

static char *read_gz(const char *path)
{
	gzFile gz = gzopen(path, "rb");
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	int n;

	if (!gz || !buf) {
		free(buf);
		return NULL;
	}
	while ((n = gzread(gz, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (cap - len < 4096)
			buf = realloc(buf, cap *= 2);
	}
	gzclose(gz);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

static struct span_rec span(uint32_t pid, uint32_t tid, uint64_t start, uint64_t end,
			    uint32_t flags)
{
	struct span_rec r = { .type = REC_SPAN, .pid = pid, .tid = tid, .start_ns = start,
			      .end_ns = end, .flags = flags };

	return r;
}

static struct wakeup_rec wakeup(uint32_t kind, uint64_t ts, uint32_t waker_pid)
{
	struct wakeup_rec r = { .type = REC_WAKEUP, .kind = kind, .ts = ts, .pid = 100,
				.tid = 101, .prio = 120, .target_cpu = 2, .cpu = 1,
				.waker_pid = waker_pid, .waker_tid = waker_pid ? 200 : 0 };

	snprintf(r.comm, COMM_LEN, "worker");
	snprintf(r.waker_comm, COMM_LEN, "%s", waker_pid ? "waker thread" : "swapper/1");
	return r;
}

/* What the test wrote, to compare with what it reads. */
#define N_JSON_EVENTS 9 /* + "recording stopped" */
#define N_SCHED_LINES 6

static uint64_t write_trace(struct trace_writer *w)
{
	struct span_rec s;
	struct switch_rec sw = { .type = REC_SWITCH, .cpu = 3, .ts = T0 + 5000000123ull,
				 .prev_pid = 100, .prev_tid = 101, .prev_prio = 120,
				 .prev_state = 1, .next_pid = 0, .next_tid = 0, .next_prio = 120 };
	struct wakeup_rec wr;

	trace_writer__process_name(w, 100, "my \"app\"\n\\");
	trace_writer__thread_name(w, 100, 101, "ctl\x01\x1f\x7f");
	trace_writer__thread_name(w, 100, 102, "bad\xff\xc0\xafutf");
	trace_writer__thread_name(w, 100, 103, "caf\xc3\xa9");
	s = span(100, 101, T0 + 1234567, T0 + 1234567 + 1000, 0);
	trace_writer__span(w, &s, "decode \"frame\"", "decode", NULL);
	s = span(100, 102, T0 + 2000000, T0 + 2000001, SPAN_INCOMPLETE);
	trace_writer__span(w, &s, "queue_pop", "queue", NULL);
	/* started before the trace's zero: clamped to 0 */
	s = span(100, 103, T0 - 5, T0 + 995, 0);
	trace_writer__span(w, &s, "early", "io", NULL);
	trace_writer__instant(w, 100, 101, T0 + 7000000, "lost 3 events", NULL);
	trace_writer__instant(w, 100, 102, T0 + 7000001, "ctl\x02", NULL);

	/* a comm with spaces and brackets, and one that fills COMM_LEN without a NUL */
	memcpy(sw.prev_comm, "my [app] x", 11);
	memcpy(sw.next_comm, "swapper/3", 10);
	trace_writer__switch(w, &sw);
	sw.ts += 1000;
	sw.preempt = 1;
	memcpy(sw.prev_comm, "0123456789abcdefXX", COMM_LEN);
	sw.next_pid = 300;
	sw.next_tid = 301;
	memcpy(sw.next_comm, "tab\there", 9);
	trace_writer__switch(w, &sw);
	wr = wakeup(WAKEUP_WAKING, T0 + 6000000000ull, 200);
	trace_writer__wakeup(w, &wr);
	wr = wakeup(WAKEUP_WAKEUP, T0 + 6000000100ull, 200);
	trace_writer__wakeup(w, &wr);
	wr = wakeup(WAKEUP_NEW, T0 + 6000000200ull, 200);
	trace_writer__wakeup(w, &wr);
	/* woken from an interrupt on the idle task: no tgid */
	wr = wakeup(WAKEUP_WAKING, T0 + 6000000300ull, 0);
	trace_writer__wakeup(w, &wr);

	CHECK(trace_writer__events(w) == N_JSON_EVENTS + N_SCHED_LINES);
	CHECK(trace_writer__bytes(w) > 0);
	CHECK(trace_writer__error(w) == 0);
	return T0 + 9000000000ull;
}

static const cJSON *find_event(const cJSON *events, const char *ph, int tid, const char *name)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "ph");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "tid");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");

		if (cJSON_IsString(p) && !strcmp(p->valuestring, ph) && cJSON_IsNumber(t) &&
		    t->valueint == tid && cJSON_IsString(n) && (!name || !strcmp(n->valuestring, name)))
			return e;
	}
	return NULL;
}

static const char *arg_name(const cJSON *e)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(args, "name");

	return cJSON_IsString(n) ? n->valuestring : NULL;
}

/* Each line between the first and the closing "]" is one JSON object; X events have ts and dur
 * with three decimals. Returns how many lines. */
static int check_event_lines(const char *text)
{
	const char *p = strchr(text, '\n'), *end = strstr(text, "\n],\n\"systemTraceEvents\":");
	regex_t ts_re, dur_re;
	int lines = 0;

	CHECK(!strncmp(text, "{\"traceEvents\":[\n", 17));
	CHECK(p && end);
	if (!p || !end)
		return 0;
	CHECK(regcomp(&ts_re, "\"ts\":[0-9]+\\.[0-9]{3}[,}]", REG_EXTENDED | REG_NOSUB) == 0);
	CHECK(regcomp(&dur_re, "\"dur\":[0-9]+\\.[0-9]{3}[,}]", REG_EXTENDED | REG_NOSUB) == 0);
	for (p++; p <= end; ) {
		const char *nl = strchr(p, '\n');
		size_t n = nl - p;
		char *line = strndup(p, n);
		cJSON *obj;

		if (n && line[n - 1] == ',')
			line[n - 1] = 0;
		else
			CHECK(nl == end); /* only the last one has no comma */
		obj = cJSON_Parse(line);
		if (!cJSON_IsObject(obj))
			fprintf(stderr, "  not one JSON object: %s\n", line);
		CHECK(cJSON_IsObject(obj));
		if (strstr(line, "\"ph\":\"X\"")) {
			CHECK(regexec(&ts_re, line, 0, NULL, 0) == 0);
			CHECK(regexec(&dur_re, line, 0, NULL, 0) == 0);
		}
		if (strstr(line, "\"ts\":"))
			CHECK(regexec(&ts_re, line, 0, NULL, 0) == 0);
		cJSON_Delete(obj);
		free(line);
		lines++;
		p = nl + 1;
	}
	regfree(&ts_re);
	regfree(&dur_re);
	return lines;
}

/* The value of key= in an ftrace line, up to the next space. */
static void field(const char *line, const char *key, char *out, size_t len)
{
	const char *p = strstr(line, key);
	size_t n;

	out[0] = 0;
	if (!p)
		return;
	p += strlen(key);
	n = strcspn(p, " ");
	snprintf(out, len, "%.*s", (int)n, p);
}

static void check_comm(const char *comm)
{
	CHECK(comm[0]);
	CHECK(!strpbrk(comm, " \t[]"));
	for (const char *c = comm; *c; c++)
		CHECK((unsigned char)*c > ' ');
}

static void check_sched_text(const char *text)
{
	static const char header[] = "# tracer: nop\n# clock_type=LINUX_CLOCK_MONOTONIC\n";
	regex_t re;
	regmatch_t m[4];
	int lines = 0, wakeups = 0, wakings = 0, switches = 0, no_tgid = 0;
	char *copy, *save = NULL;

	CHECK(!strncmp(text, header, strlen(header)));
	CHECK(text[strlen(text) - 1] == '\n');
	CHECK(regcomp(&re,
		      "^ *([^ ]+)-([0-9]+) +\\( *([0-9]+|-----)\\) \\[[0-9]{3}\\] d\\.\\.2 "
		      "[0-9]+\\.[0-9]{9}: (sched_switch|sched_wakeup|sched_waking|"
		      "sched_wakeup_new): .+$",
		      REG_EXTENDED) == 0);
	copy = strdup(text + strlen(header));
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char comm[64], ev[32];
		int ok = regexec(&re, l, 4, m, 0) == 0;

		if (!ok)
			fprintf(stderr, "  bad ftrace line: '%s'\n", l);
		CHECK(ok);
		lines++;
		if (!ok)
			continue;
		snprintf(comm, sizeof(comm), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), l + m[1].rm_so);
		check_comm(comm);
		no_tgid += l[m[3].rm_so] == '-';
		sscanf(strstr(l, "d..2 "), "d..2 %*s %31[^:]", ev);
		if (!strcmp(ev, "sched_switch")) {
			switches++;
			field(l, "prev_comm=", comm, sizeof(comm));
			check_comm(comm);
			CHECK(strstr(l, " prev_pid="));
			field(l, "next_comm=", comm, sizeof(comm));
			check_comm(comm);
			CHECK(strstr(l, " next_pid="));
			CHECK(strstr(l, " ==> "));
		} else {
			field(l, " comm=", comm, sizeof(comm));
			check_comm(comm);
			CHECK_STR(comm, "worker");
			CHECK(strstr(l, " pid=101 prio=120"));
			CHECK(strstr(l, " target_cpu=002"));
			if (!strcmp(ev, "sched_waking")) {
				wakings++;
				CHECK(!strstr(l, "success="));
			} else {
				wakeups++;
				CHECK(strstr(l, " success=1 "));
			}
		}
	}
	CHECK(lines == N_SCHED_LINES);
	CHECK(switches == 2);
	CHECK(wakings == 2);
	CHECK(wakeups == 2);
	CHECK(no_tgid == 1);
	/* exact text of a few fields */
	CHECK(strstr(text, "[003] d..2 5.000000123: sched_switch: "));
	CHECK(strstr(text, "prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/3 "
			   "next_pid=0 next_prio=120\n"));
	CHECK(strstr(text, "prev_state=R+ ==> "));
	CHECK(strstr(text, "prev_comm=0123456789abcde "));
	CHECK(strstr(text, "6.000000200: sched_wakeup_new: comm=worker pid=101"));
	CHECK(strstr(text, "6.000000300: sched_waking: "));
	regfree(&re);
	free(copy);
}

static void check_trace(const char *text)
{
	cJSON *root = cJSON_Parse(text);
	const cJSON *events, *sys, *meta, *e, *args;

	CHECK(cJSON_IsObject(root));
	if (!root)
		return;
	events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	sys = cJSON_GetObjectItemCaseSensitive(root, "systemTraceEvents");
	meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	CHECK(cJSON_IsArray(events));
	CHECK(cJSON_IsString(sys));
	CHECK(cJSON_IsObject(meta));
	CHECK(cJSON_GetArraySize(root) == 3);
	CHECK(cJSON_GetArraySize(events) == N_JSON_EVENTS + 1);
	CHECK(check_event_lines(text) == N_JSON_EVENTS + 1);

	/* hostile names come back as the text written, invalid bytes as U+FFFD */
	CHECK_STR(arg_name(find_event(events, "M", 100, "process_name")), "my \"app\"\n\\");
	CHECK_STR(arg_name(find_event(events, "M", 101, "thread_name")), "ctl\x01\x1f\x7f");
	CHECK_STR(arg_name(find_event(events, "M", 102, "thread_name")),
		  "bad" FFFD FFFD FFFD "utf");
	CHECK_STR(arg_name(find_event(events, "M", 103, "thread_name")), "caf\xc3\xa9");

	e = find_event(events, "X", 101, "decode \"frame\"");
	CHECK(e);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "cat")), "decode");
	CHECK(strstr(text, "\"ts\":1234.567,\"dur\":1.000,"));
	CHECK(cJSON_GetObjectItem(e, "args") == NULL);
	e = find_event(events, "X", 102, "queue_pop");
	args = cJSON_GetObjectItem(e, "args");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(args, "incomplete")));
	CHECK(strstr(text, "\"ts\":2000.000,\"dur\":0.001,"));
	CHECK(find_event(events, "X", 103, "early"));
	CHECK(strstr(text, "\"ts\":0.000,\"dur\":1.000,"));
	e = find_event(events, "i", 101, "lost 3 events");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "s")), "t");
	CHECK(find_event(events, "i", 102, "ctl\x02"));
	e = find_event(events, "i", 0, "recording stopped");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "s")), "g");
	args = cJSON_GetObjectItem(e, "args");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(args, "reason")), "duration \"5s\"");
	CHECK(strstr(text, "\"ts\":9000000.000,\"args\":"));
	/* the "recording stopped" instant is last */
	CHECK(e == cJSON_GetArrayItem(events, N_JSON_EVENTS));

	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(meta, "tracer")), "0.1.0");
	CHECK(cJSON_GetObjectItem(meta, "pids") &&
	      cJSON_GetArraySize(cJSON_GetObjectItem(meta, "pids")) == 2);
	if (cJSON_IsString(sys))
		check_sched_text(sys->valuestring);
	/* the file ends with the metadata object and a newline */
	CHECK(strlen(text) > 3 && !strcmp(text + strlen(text) - 2, "}\n"));
	cJSON_Delete(root);
}

static const char metadata[] = "{\"tracer\":\"0.1.0\",\"pids\":[100,300]}";

static void whole_file(const char *suffix, char *(*read)(const char *))
{
	char path[] = "/tmp/test_trace_writer.XXXXXX";
	char named[64];
	struct trace_writer *w = NULL;
	uint64_t end;
	char *text;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	/* the writer picks gzip from the path's name; the fd is what it writes to */
	snprintf(named, sizeof(named), "%s%s", path, suffix);
	CHECK(rename(path, named) == 0);
	CHECK(trace_writer__open(&w, named, fd, T0) == 0);
	if (!w)
		return;
	end = write_trace(w);
	CHECK(trace_writer__close(w, end, "duration \"5s\"", metadata) == 0);
	CHECK(fcntl(fd, F_GETFD) < 0); /* the writer closed it */
	text = read(named);
	CHECK(text != NULL);
	if (text) {
		if (suffix[0])
			CHECK(strncmp(text, "{\"traceEvents\"", 14) == 0);
		check_trace(text);
	}
	free(text);
	unlink(named);
}

static void test_whole_file_plain(void)
{
	whole_file("", read_plain);
}

static void test_whole_file_gzip(void)
{
	FILE *f;
	unsigned char magic[2] = { 0 };
	char path[] = "/tmp/test_trace_writer_gz.XXXXXX";
	char named[64];
	struct trace_writer *w = NULL;
	int fd = mkstemp(path);

	whole_file(".json.gz", read_gz);

	/* and the bytes on disk really are gzip */
	CHECK(fd >= 0);
	snprintf(named, sizeof(named), "%s.json.gz", path);
	CHECK(rename(path, named) == 0);
	CHECK(trace_writer__open(&w, named, fd, T0) == 0);
	if (!w)
		return;
	trace_writer__process_name(w, 1, "init");
	CHECK(trace_writer__close(w, T0, "done", "{}") == 0);
	f = fopen(named, "r");
	CHECK(f && fread(magic, 1, 2, f) == 2);
	CHECK(magic[0] == 0x1f && magic[1] == 0x8b);
	if (f)
		fclose(f);
	unlink(named);
}

/* A large scheduler text with valid UTF-8 comms: it is copied into the JSON string in chunks,
 * and no valid character may be broken into U+FFFD on the way. */
static void test_sched_text_utf8_chunks(void)
{
	char path[] = "/tmp/test_trace_writer_utf8.XXXXXX";
	struct trace_writer *w = NULL;
	struct switch_rec sw = { .type = REC_SWITCH, .prev_pid = 10, .prev_tid = 11,
				 .prev_state = 1, .next_pid = 20, .next_tid = 21 };
	const cJSON *sys;
	cJSON *root;
	char *text;
	int fd = mkstemp(path), broken = 0;

	CHECK(fd >= 0);
	CHECK(trace_writer__open(&w, path, fd, 0) == 0);
	if (!w)
		return;
	/* "é" x7 and "日本語" + "スレ": two and three byte characters */
	memcpy(sw.prev_comm, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 15);
	memcpy(sw.next_comm, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x82\xb9\xe3\x83\xac",
	       COMM_LEN);
	for (int i = 0; i < 3000; i++) {
		sw.ts = 1000000ull * i;
		sw.cpu = i % 8;
		trace_writer__switch(w, &sw);
	}
	CHECK(trace_writer__close(w, 3000000000ull, "done", "{}") == 0);
	text = read_plain(path);
	root = text ? cJSON_Parse(text) : NULL;
	sys = cJSON_GetObjectItemCaseSensitive(root, "systemTraceEvents");
	CHECK(cJSON_IsString(sys));
	if (cJSON_IsString(sys)) {
		for (const char *p = sys->valuestring; (p = strstr(p, FFFD)); p++)
			broken++;
		if (broken)
			fprintf(stderr, "  %d U+FFFD in the scheduler text of valid UTF-8 comms\n",
				broken);
		CHECK(broken == 0);
		CHECK(strstr(sys->valuestring,
			     "prev_comm=\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 "));
	}
	cJSON_Delete(root);
	free(text);
	unlink(path);
}

/* Writes that fail are reported: to the caller of close, and by trace_writer__error once the
 * buffer has been flushed. */
static void test_write_error(void)
{
	struct trace_writer *w = NULL;
	struct span_rec s = span(1, 1, 10, 20, 0);
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(trace_writer__open(&w, "/dev/full", fd, 0) == 0);
	if (!w)
		return;
	trace_writer__process_name(w, 1, "x");
	CHECK(trace_writer__close(w, 100, "done", "{}") == -ENOSPC);

	/* enough events to flush the buffer before close: the error sticks */
	fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	CHECK(trace_writer__open(&w, "/dev/full", fd, 0) == 0);
	if (!w)
		return;
	for (int i = 0; i < 30000; i++)
		trace_writer__span(w, &s, "some_function_name", "operator", NULL);
	CHECK(trace_writer__error(w) == -ENOSPC);
	CHECK(trace_writer__close(w, 100, "done", "{}") == -ENOSPC);
}

/* Span args, entry-only instants, counters and flow arrows, read back with cJSON. */
static void test_args_counters_flows(void)
{
	char path[] = "/tmp/tracer-unit-XXXXXX";
	int fd = mkstemp(path);
	struct trace_writer *w;
	struct span_rec s;
	const cJSON *ev, *e;
	cJSON *root;
	char *text;
	int n_s = 0, n_f = 0;

	CHECK(fd >= 0 && trace_writer__open(&w, path, fd, T0) == 0);
	s = span(100, 101, T0 + 1000, T0 + 3000, 0);
	trace_writer__span(w, &s, "pop", "queue", "\"queue\":\"0x1f\",\"n\":-3");
	s = span(100, 101, T0 + 5000, T0 + 5000, SPAN_INSTANT | SPAN_INCOMPLETE);
	trace_writer__span(w, &s, "go_entry", "other", "\"a\":1");
	trace_writer__counter(w, 100, T0 + 2500, "queue 0x1f", "depth", 4);
	trace_writer__flow(w, 7, 100, 102, T0 + 2000, 100, 101, T0 + 2100);
	CHECK(trace_writer__close(w, T0 + 9000, "test", "{}") == 0);
	text = read_plain(path);
	unlink(path);
	root = text ? cJSON_Parse(text) : NULL;
	CHECK(root != NULL);
	ev = cJSON_GetObjectItem(root, "traceEvents");
	e = find_event(ev, "X", 101, "pop");
	CHECK(e && cJSON_GetObjectItem(e, "args") &&
	      !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "queue")->valuestring,
		      "0x1f") &&
	      cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "n")->valuedouble == -3);
	e = find_event(ev, "i", 101, "go_entry");
	CHECK(e && !cJSON_GetObjectItem(e, "dur") &&
	      cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "incomplete")) &&
	      cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "a")->valuedouble == 1);
	cJSON_ArrayForEach(e, ev) {
		const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;

		if (!strcmp(ph, "C")) {
			CHECK_STR(cJSON_GetObjectItem(e, "name")->valuestring, "queue 0x1f");
			CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "depth")
				      ->valuedouble == 4);
			CHECK(cJSON_GetObjectItem(e, "ts")->valuedouble == 2.5);
		}
		if (!strcmp(ph, "s")) {
			n_s++;
			CHECK(cJSON_GetObjectItem(e, "tid")->valuedouble == 102);
			CHECK(cJSON_GetObjectItem(e, "id")->valuedouble == 7);
		}
		if (!strcmp(ph, "f")) {
			n_f++;
			CHECK(cJSON_GetObjectItem(e, "tid")->valuedouble == 101);
			CHECK_STR(cJSON_GetObjectItem(e, "bp")->valuestring, "e");
			CHECK(cJSON_GetObjectItem(e, "ts")->valuedouble == 2.1);
		}
	}
	CHECK(n_s == 1 && n_f == 1);
	CHECK(text && check_event_lines(text) >= 0);
	cJSON_Delete(root);
	free(text);
}

int main(int argc, char **argv)
{
	RUN(test_json_escape_ascii);
	RUN(test_json_escape_utf8);
	RUN(test_json_escape_bounds);
	RUN(test_fmt_us);
	RUN(test_ftrace_prev_state);
	RUN(test_whole_file_plain);
	RUN(test_whole_file_gzip);
	RUN(test_sched_text_utf8_chunks);
	RUN(test_write_error);
	RUN(test_args_counters_flows);
	UNIT_EXIT();
}
