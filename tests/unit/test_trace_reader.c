// SPDX-License-Identifier: MIT
/* Unit test of userspace/trace/trace_reader.c: tracer's layout, other valid layouts, gzip, every
 * truncation point, escapes (also across the reader's buffer), huge events, ftrace lines and
 * the number and string helpers. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "trace/trace_reader.h"
#include "unit.h"

static char dir[] = "/tmp/test_trace_reader.XXXXXX";

/* What a file yields, flattened to one string per item, to compare whole readings. */
struct items {
	char **v;
	size_t n;
	bool truncated;
	int ret;
	uint64_t oversized;
};

static void items_free(struct items *it)
{
	for (size_t i = 0; i < it->n; i++)
		free(it->v[i]);
	free(it->v);
	memset(it, 0, sizeof(*it));
}

static char *describe(const struct trace_item *it)
{
	char *s = NULL;
	const struct trace_event *e = &it->ev;

	switch (it->type) {
	case TI_EVENT:
		if (asprintf(&s, "E ph=%c name=%s cat=%s ts=%lld/%d dur=%lld/%d pid=%lld tid=%lld "
				 "argname=%s len=%zu",
			     e->ph ? e->ph : '-', e->name, e->cat, (long long)e->ts_ns, e->has_ts,
			     (long long)e->dur_ns, e->has_dur, (long long)e->pid,
			     (long long)e->tid, e->arg_name ? e->arg_name : "(none)", e->len) < 0)
			s = NULL;
		break;
	case TI_SCHED:
		if (asprintf(&s, "S %.*s", (int)it->len, it->text) < 0)
			s = NULL;
		break;
	case TI_METADATA:
		if (asprintf(&s, "M %.*s", (int)it->len, it->text) < 0)
			s = NULL;
		break;
	case TI_END:
		break;
	}
	return s;
}

static void read_all(const char *path, unsigned want, struct items *out)
{
	struct trace_reader *r;
	struct trace_item it;
	char msg[256];

	memset(out, 0, sizeof(*out));
	out->ret = trace_reader__open(&r, path, want, msg, sizeof(msg));
	if (out->ret)
		return;
	while ((out->ret = trace_reader__next(r, &it)) > 0) {
		out->v = realloc(out->v, (out->n + 1) * sizeof(char *));
		out->v[out->n++] = describe(&it);
	}
	out->truncated = trace_reader__truncated(r);
	out->oversized = trace_reader__oversized(r);
	trace_reader__close(r);
}

static const char *write_file(const char *name, const char *data, size_t len, bool gz)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (gz) {
		gzFile g = gzopen(path, "wb");

		gzwrite(g, data, len);
		gzclose(g);
	} else {
		f = fopen(path, "wb");
		fwrite(data, 1, len, f);
		fclose(f);
	}
	return path;
}

/* tracer's own layout (userspace/trace/trace_writer.c) */
static const char tracer_file[] =
	"{\"traceEvents\":[\n"
	"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"tid\":7,"
	"\"args\":{\"name\":\"pipe\"}},\n"
	"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":7,\"tid\":8,"
	"\"args\":{\"name\":\"decode-0\"}},\n"
	"{\"ph\":\"X\",\"name\":\"a \\\"q\\\" \\\\ \\u00e9 \\ud83d\\ude00\",\"cat\":\"decode\","
	"\"ts\":1234.567,\"dur\":0.001,\"pid\":7,\"tid\":8},\n"
	"{\"ph\":\"X\",\"name\":\"w\",\"cat\":\"queue\",\"ts\":2000.000,\"dur\":5.500,\"pid\":7,"
	"\"tid\":8,\"args\":{\"incomplete\":true}},\n"
	"{\"ph\":\"i\",\"s\":\"g\",\"name\":\"recording stopped\",\"pid\":0,\"tid\":0,"
	"\"ts\":9000.000,\"args\":{\"reason\":\"SIGINT\"}}\n"
	"],\n"
	"\"systemTraceEvents\":\"# tracer: nop\\n# clock_type=LINUX_CLOCK_MONOTONIC\\n"
	"        decode-0-8       (      7) [001] d..2 0.001000000: sched_switch: "
	"prev_comm=decode-0 prev_pid=8 prev_prio=120 prev_state=S ==> next_comm=swapper/1 "
	"next_pid=0 next_prio=120\\n"
	"          reader-9       (      7) [000] d..2 0.002000000: sched_waking: comm=decode-0 "
	"pid=8 prio=120 target_cpu=001\\n\",\n"
	"\"metadata\":{\"t0_monotonic_ns\":1000,\"probes\":[{\"name\":\"x\"}]}}\n";

static void test_tracer_layout(void)
{
	struct items a;

	read_all(write_file("t.json", tracer_file, strlen(tracer_file), false), TR_ALL, &a);
	CHECK(a.ret == 0);
	CHECK(!a.truncated);
	CHECK(a.n == 10);
	if (a.n != 10)
		goto out;
	CHECK(!strncmp(a.v[0], "E ph=M name=process_name cat= ts=0/0 dur=0/0 pid=7 tid=7 "
			       "argname=pipe",
		       60));
	CHECK(strstr(a.v[1], "argname=decode-0"));
	CHECK(!strncmp(a.v[2], "E ph=X name=a \"q\" \\ \xc3\xa9 \xf0\x9f\x98\x80 cat=decode "
			       "ts=1234567/1 dur=1/1 pid=7 tid=8",
		       strlen("E ph=X name=a \"q\" \\ \xc3\xa9 \xf0\x9f\x98\x80 cat=decode "
			      "ts=1234567/1 dur=1/1 pid=7 tid=8")));
	CHECK(strstr(a.v[3], "ts=2000000/1 dur=5500/1"));
	CHECK(strstr(a.v[4], "ph=i name=recording stopped"));
	CHECK_STR(a.v[5], "S # tracer: nop");
	CHECK_STR(a.v[6], "S # clock_type=LINUX_CLOCK_MONOTONIC");
	CHECK(!strncmp(a.v[7], "S         decode-0-8       (      7) [001] d..2 0.001000000", 55));
	CHECK(!strncmp(a.v[8], "S           reader-9", 20));
	CHECK_STR(a.v[9], "M {\"t0_monotonic_ns\":1000,\"probes\":[{\"name\":\"x\"}]}");
out:
	items_free(&a);
}

static void test_want_skips(void)
{
	const char *p = write_file("t.json", tracer_file, strlen(tracer_file), false);
	struct items a;

	read_all(p, TR_SCHED, &a);
	CHECK(a.ret == 0 && a.n == 4);
	for (size_t i = 0; i < a.n; i++)
		CHECK(a.v[i][0] == 'S');
	items_free(&a);
	read_all(p, TR_EVENTS | TR_METADATA, &a);
	CHECK(a.ret == 0 && a.n == 6);
	CHECK(a.n == 6 && a.v[5][0] == 'M');
	items_free(&a);
}

static void test_gzip_same_items(void)
{
	struct items a, b;

	read_all(write_file("t.json", tracer_file, strlen(tracer_file), false), TR_ALL, &a);
	read_all(write_file("t.json.gz", tracer_file, strlen(tracer_file), true), TR_ALL, &b);
	CHECK(b.ret == 0 && a.n == b.n);
	for (size_t i = 0; i < a.n && i < b.n; i++)
		CHECK_STR(a.v[i], b.v[i]);
	items_free(&a);
	items_free(&b);
}

/* Every cut of the file yields a prefix of the full reading, and says it was cut. */
static void test_every_truncation(void)
{
	size_t len = strlen(tracer_file);
	struct items full, cut;
	int bad = 0;

	read_all(write_file("t.json", tracer_file, len, false), TR_ALL, &full);
	for (size_t n = 1; n < len - 2; n++) {
		read_all(write_file("cut.json", tracer_file, n, n & 1), TR_ALL, &cut);
		if (cut.ret != 0 || !cut.truncated || cut.n > full.n) {
			fprintf(stderr, "  cut at %zu: ret %d truncated %d items %zu\n", n, cut.ret,
				cut.truncated, cut.n);
			bad++;
		}
		for (size_t i = 0; i < cut.n && i < full.n; i++) {
			/* a sched line may be cut itself; everything before it is whole */
			if (i + 1 == cut.n && cut.v[i][0] == 'S')
				bad += !!strncmp(full.v[i], cut.v[i], strlen(cut.v[i]));
			else
				bad += !!strcmp(full.v[i], cut.v[i]);
		}
		items_free(&cut);
	}
	CHECK(bad == 0);
	/* a gzip stream cut short: the complete items before the cut */
	{
		const char *p = write_file("t.json.gz", tracer_file, len, true);
		FILE *f = fopen(p, "rb");
		char gz[4096];
		size_t glen = fread(gz, 1, sizeof(gz), f);

		fclose(f);
		read_all(write_file("cutgz.json.gz", gz, glen - 12, false), TR_ALL, &cut);
		CHECK(cut.ret == 0 && cut.truncated && cut.n >= 5);
		items_free(&cut);
	}
	items_free(&full);
}

static void test_other_layouts(void)
{
	static const char pretty[] =
		"  {\n  \"displayTimeUnit\": \"ns\",\n"
		"  \"metadata\": {\"a\": [1, 2, {\"b\": \"}\"}]},\n"
		"  \"systemTraceEvents\": \"x-1 (1) [000] d..2 1.5: sched_waking: comm=y pid=2 "
		"prio=1 target_cpu=000\\n\",\n"
		"  \"traceEvents\": [\n    {\n      \"tid\": 3, \"ts\": 1e3, \"ph\": \"X\",\n"
		"      \"dur\": 2, \"name\": \"n\", \"pid\": \"browser\",\n"
		"      \"args\": {\"x\": [1, {}]}\n"
		"    },\n    {\"ph\": \"B\", \"ts\": 12.3456, \"name\": \"b\"},\n  ]\n}\n";
	static const char array[] = "[{\"ph\":\"X\",\"ts\":1,\"dur\":2,\"name\":\"a\",\"tid\":1},\n"
				    "{\"ph\":\"X\",\"ts\":3,\"dur\":4,\"name\":\"b\",\"tid\":1},";
	struct items a;

	read_all(write_file("p.json", pretty, strlen(pretty), false), TR_ALL, &a);
	CHECK(a.ret == 0 && !a.truncated && a.n == 4);
	if (a.n == 4) {
		CHECK_STR(a.v[0], "M {\"a\": [1, 2, {\"b\": \"}\"}]}");
		CHECK(!strncmp(a.v[1], "S x-1 (1) [000]", 15));
		CHECK(strstr(a.v[2], "ph=X name=n cat= ts=1000000/1 dur=2000/1 pid=0 tid=3"));
		CHECK(strstr(a.v[3], "ph=B name=b cat= ts=12346/1"));
	}
	items_free(&a);
	/* a bare array, cut after a comma (viewers load these) */
	read_all(write_file("a.json", array, strlen(array), false), TR_ALL, &a);
	CHECK(a.ret == 0 && a.truncated && a.n == 2);
	items_free(&a);
}

static void test_errors(void)
{
	struct trace_reader *r;
	struct trace_item it;
	char msg[256];
	static const struct {
		const char *text, *what;
	} bad[] = {
		{ "", "the file is empty" },
		{ "hello", "not a Chrome trace" },
		{ "{\"traceEvents\":[{\"ph\":\"X\"} {\"ph\":\"X\"}]}", "expected ','" },
		{ "{\"traceEvents\":[1]}", "not a well-formed object" },
		{ "{\"a\" 1}", "expected ':'" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *p = write_file("bad.json", bad[i].text, strlen(bad[i].text), false);
		int ret;

		CHECK(trace_reader__open(&r, p, TR_ALL, msg, sizeof(msg)) == 0);
		while ((ret = trace_reader__next(r, &it)) > 0)
			;
		CHECK(ret < 0);
		CHECK(strstr(trace_reader__error(r), bad[i].what));
		CHECK(strstr(trace_reader__error(r), "bad.json:1: "));
		trace_reader__close(r);
	}
	CHECK(trace_reader__open(&r, "/nonexistent/x.json", TR_ALL, msg, sizeof(msg)) == -ENOENT);
	CHECK(strstr(msg, "cannot open /nonexistent/x.json"));
	/* a JSON object that is no trace */
	{
		const char *p = write_file("o.json", "{\"a\":1}", 7, false);

		CHECK(trace_reader__open(&r, p, TR_ALL, msg, sizeof(msg)) == 0);
		CHECK(trace_reader__next(r, &it) == 0);
		CHECK(trace_reader__no_events(r));
		trace_reader__close(r);
	}
}

/* Lines of every length so that escapes (\n, \", \u00e9) fall across the 1 MB read buffer. */
static void test_sched_escapes_across_buffers(void)
{
	size_t cap = 3 << 20, len = 0, nlines = 0;
	char *text = malloc(cap);
	struct items a;
	int bad = 0;

	len += sprintf(text, "{\"systemTraceEvents\":\"");
	for (size_t i = 0; len < (5u << 19); i++) {
		size_t l = 20 + i % 37;

		for (size_t k = 0; k < l; k++)
			text[len++] = 'a' + (i + k) % 26;
		len += sprintf(text + len, "\\\"\\u00e9\\\\%zu\\n", i);
		nlines++;
	}
	len += sprintf(text + len, "\",\"traceEvents\":[]}");
	read_all(write_file("s.json", text, len, false), TR_SCHED, &a);
	CHECK(a.ret == 0 && a.n == nlines);
	for (size_t i = 0; i < a.n; i++) {
		char want[128];
		size_t l = 20 + i % 37, o = 2;

		want[0] = 'S';
		want[1] = ' ';
		for (size_t k = 0; k < l; k++)
			want[o++] = 'a' + (i + k) % 26;
		sprintf(want + o, "\"\xc3\xa9\\%zu", i);
		bad += !!strcmp(a.v[i], want);
	}
	CHECK(bad == 0);
	items_free(&a);
	free(text);
}

/* An event of 5 MB is read whole; one larger than TR_MAX_VALUE is skipped and counted. */
static void test_huge_events(void)
{
	size_t big = TR_MAX_VALUE + 1000, len = 0;
	char *text = malloc(big + (5 << 20) + 4096);
	struct items a;

	len += sprintf(text, "{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"thread_name\",\"tid\":1,"
			     "\"args\":{\"pad\":\"");
	memset(text + len, 'x', 5 << 20);
	len += 5 << 20;
	len += sprintf(text + len, "\",\"name\":\"big\"}},\n"
				   "{\"ph\":\"X\",\"name\":\"huge\",\"args\":{\"p\":\"");
	memset(text + len, 'y', big);
	len += big;
	len += sprintf(text + len, "\"}},\n{\"ph\":\"X\",\"name\":\"after\",\"ts\":1,\"dur\":1}]}");
	read_all(write_file("h.json", text, len, false), TR_EVENTS, &a);
	CHECK(a.ret == 0 && a.n == 2);
	CHECK(a.oversized == 1);
	if (a.n == 2) {
		CHECK(strstr(a.v[0], "argname=big"));
		CHECK(strstr(a.v[1], "name=after"));
	}
	items_free(&a);
	free(text);
}

static void test_ftrace_lines(void)
{
	struct ftrace_line l;
	const char *sw = "        decode-0-11367   (  11361) [001] d..2 3.108095178: sched_switch: "
			 "prev_comm=decode-0 prev_pid=11367 prev_prio=120 prev_state=R+ ==> "
			 "next_comm=swapper/1 next_pid=0 next_prio=120";
	const char *wk = "          tracer-9 [000] .N.. 12.5: sched_wakeup: comm=op-1 pid=11364 "
			 "prio=120 success=1 target_cpu=001";
	const char *nw = "  my thread-name-42   (  -----) [003] d..2 0.000000001: "
			 "sched_wakeup_new: comm=x pid=43 prio=120 target_cpu=000";

	CHECK(ftrace_line__parse(sw, strlen(sw), &l) == 0);
	CHECK(l.kind == FT_SWITCH && l.cpu == 1 && l.tid == 11367 && l.tgid == 11361);
	CHECK(l.ts_ns == 3108095178ll && l.prev_tid == 11367 && l.next_tid == 0);
	CHECK_STR(l.prev_state, "R+");
	CHECK(!strncmp(sw + l.tid_at.off, "11367", l.tid_at.len) && l.tid_at.len == 5);
	CHECK(!strncmp(sw + l.tgid_at.off, "11361", l.tgid_at.len) && l.tgid_at.len == 5);
	CHECK(!strncmp(sw + l.ts_at.off, "3.108095178", l.ts_at.len) && l.ts_at.len == 11);
	CHECK(!strncmp(sw + l.a_at.off - 9, "prev_pid=11367", 14));
	CHECK(!strncmp(sw + l.b_at.off - 9, "next_pid=0", 10) && l.b_at.len == 1);

	CHECK(ftrace_line__parse(wk, strlen(wk), &l) == 0);
	CHECK(l.kind == FT_WAKEUP && l.tid == 9 && l.tgid == -1 && l.cpu == 0);
	CHECK(l.ts_ns == 12500000000ll && l.woken_tid == 11364 && !l.in_irq);
	{ /* a wake-up in a hard or soft interrupt: the task is only the one it hit */
		const char *hi = "  python3-7 (  7) [000] d.h2 1.5: sched_waking: comm=x pid=8 "
				 "prio=120 target_cpu=000";
		const char *si = "  python3-7 (  7) [000] d.s2 1.5: sched_waking: comm=x pid=8 "
				 "prio=120 target_cpu=000";

		CHECK(ftrace_line__parse(hi, strlen(hi), &l) == 0 && l.in_irq && l.tid == 7);
		CHECK(ftrace_line__parse(si, strlen(si), &l) == 0 && l.in_irq);
		CHECK(ftrace_line__parse(sw, strlen(sw), &l) == 0 && !l.in_irq);
	}

	CHECK(ftrace_line__parse(nw, strlen(nw), &l) == 0);
	CHECK(l.kind == FT_WAKEUP_NEW && l.tid == 42 && l.tgid == -1 && l.woken_tid == 43);
	CHECK(l.ts_ns == 1 && l.cpu == 3);

	CHECK(ftrace_line__parse("# tracer: nop", 13, &l) == -EINVAL);
	CHECK(ftrace_line__parse("", 0, &l) == -EINVAL);
	CHECK(ftrace_line__parse("garbage line", 12, &l) == -EINVAL);
	{
		const char *o = "x-5 (5) [000] .... 1.000000000: cpu_frequency: state=1 cpu_id=0";

		CHECK(ftrace_line__parse(o, strlen(o), &l) == 0 && l.kind == FT_OTHER);
	}
	/* found by fuzz_ftrace_line: no task before the CPU (read before the line); seconds
	 * beyond what nanoseconds hold (overflow) */
	CHECK(ftrace_line__parse("(5) [000] 1.0: sched_waking: pid=1", 34, &l) == -EINVAL);
	CHECK(ftrace_line__parse("x-5 [000] 99999999999.0: sched_waking: pid=1", 44, &l) ==
	      -EINVAL);
}

static void test_numbers_and_strings(void)
{
	static const struct {
		const char *s;
		int64_t ns;
	} ok[] = {
		{ "1234.567", 1234567 },
		{ "12", 12000 },
		{ "0.0005", 1 },
		{ "0.0004", 0 },
		{ "1.2345", 1235 },
		{ "-1.5", -1500 },
		{ "1e3", 1000000 },
		{ "2.5E-3", 3 },
		{ "9007199254740.991", 9007199254740991 },
	};
	char out[64];
	const char *v;
	size_t n;
	int64_t ns;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK(json_us_to_ns(ok[i].s, strlen(ok[i].s), &ns) == 0);
		CHECK(ns == ok[i].ns);
	}
	CHECK(json_us_to_ns("x", 1, &ns) == -EINVAL);
	CHECK(json_us_to_ns("1.2.3", 5, &ns) == -EINVAL);
	CHECK(json_us_to_ns("", 0, &ns) == -EINVAL);

	CHECK(json_unescape("\"a\\tb\\u0041\\/\"x", 15, out, sizeof(out), NULL) == 14);
	CHECK_STR(out, "a\tbA/");
	CHECK(json_unescape("\"\\ud800x\"", 9, out, sizeof(out), NULL) == 9);
	CHECK_STR(out, "\xef\xbf\xbdx"); /* a lone surrogate */
	CHECK(json_unescape("\"abcdef\"", 8, out, 4, NULL) == 8);
	CHECK_STR(out, "abc"); /* cut to the room there is */
	CHECK(json_unescape("\"open", 5, out, sizeof(out), NULL) == 0);
	CHECK(json_unescape("\"bad\\q\"", 7, out, sizeof(out), NULL) == 0);

	CHECK(json_value_len("{\"a\":\"}\"} rest", 14) == 9);
	CHECK(json_value_len("[1,[2]],", 8) == 7);
	CHECK(json_value_len("-12.5e3,", 8) == 7);
	CHECK(json_value_len("{\"a\":1", 6) == 0);

	v = json_object_get(" {\"x\":{\"name\":1},\"name\" : \"n\\\"\"}", 32, "name", &n);
	CHECK(v && n == 5 && !strncmp(v, "\"n\\\"\"", 5));
	CHECK(!json_object_get("{\"x\":{\"name\":1}}", 16, "name", &n));
	CHECK(!json_object_get("[1]", 3, "name", &n));
}

/* json_valid: what a strict reader (Python's json) accepts, nothing else (repair keeps only such
 * lines). */
static void test_json_valid(void)
{
	static const char *const good[] = {
		"{}", " {\"a\" : [1, -0.5e+3, true, false, null, \"\\u00e9\\n\"]} ",
		"\"\xc3\xa9\"", "0", "[[]]", "{\"a\":{\"b\":{}}}",
	};
	static const char *const bad[] = {
		"", "{", "{\"a\" 1}", "{x}", "{\"a\":}", "{\"a\":1,}", "[1 2]", "{]", "[}",
		"01", "1.", "-", "1e", "NaN", "nul", "\"\x01\"", "\"\xff\"", "\"\\q\"",
		"\"\\u12G4\"", "\"open", "{} {}", "{1:2}",
	};
	char deep[2 * JSON_MAX_DEPTH + 4];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(json_valid(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!json_valid(bad[i], strlen(bad[i])));
	CHECK(!json_valid("\"a\0b\"", 5)); /* a NUL inside */
	memset(deep, '[', JSON_MAX_DEPTH + 1);
	memset(deep + JSON_MAX_DEPTH + 1, ']', JSON_MAX_DEPTH + 1);
	CHECK(!json_valid(deep, 2 * JSON_MAX_DEPTH + 2)); /* bounded recursion */
	CHECK(json_valid(deep + 1, 2 * JSON_MAX_DEPTH));
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_tracer_layout);
	RUN(test_want_skips);
	RUN(test_gzip_same_items);
	RUN(test_every_truncation);
	RUN(test_other_layouts);
	RUN(test_errors);
	RUN(test_sched_escapes_across_buffers);
	RUN(test_huge_events);
	RUN(test_ftrace_lines);
	RUN(test_numbers_and_strings);
	RUN(test_json_valid);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
	}
	UNIT_EXIT();
}
