// SPDX-License-Identifier: MIT
/* `tracer export TRACE --jsonl|--csv [-o FILE]`: one row per span (name, category, pid, tid,
 * thread, start_ns, dur_ns, args), the shape BigQuery, DuckDB, Spark and pandas load directly.
 * Two streaming passes: the first learns every thread's last name (a viewer-valid trace may
 * name a thread after its spans), the second writes the rows, naming each span's thread as it
 * was named at that point of the file when it was, so renames are kept. */
#include "cmd/commands.h"
#include "trace/json_text.h"
#include "trace/outfile.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xthread {
	int64_t tid;
	char *last; /* the name at the end of the file */
	char *now;  /* the name at this point of the second pass */
};

struct names {
	struct xthread *v; /* open addressing on tid */
	size_t cap, cnt;
};

static struct xthread *names_get(struct names *n, int64_t tid, bool create)
{
	size_t i;

	if (create && (n->cnt + 1) * 2 > n->cap) {
		struct xthread *old = n->v;
		size_t oldcap = n->cap;

		n->cap = n->cap ? n->cap * 2 : 256;
		n->v = xcalloc(n->cap, sizeof(*n->v));
		for (size_t k = 0; k < oldcap; k++) {
			if (!old[k].last)
				continue;
			for (i = (uint64_t)old[k].tid * 0x9e3779b97f4a7c15ull >> 20 & (n->cap - 1);
			     n->v[i].last; i = (i + 1) & (n->cap - 1))
				;
			n->v[i] = old[k];
		}
		free(old);
	}
	if (!n->cap)
		return NULL;
	for (i = (uint64_t)tid * 0x9e3779b97f4a7c15ull >> 20 & (n->cap - 1); n->v[i].last;
	     i = (i + 1) & (n->cap - 1))
		if (n->v[i].tid == tid)
			return &n->v[i];
	if (!create)
		return NULL;
	n->cnt++;
	n->v[i].tid = tid;
	n->v[i].last = xstrdup("");
	return &n->v[i];
}

static void set_name(char **slot, const char *name)
{
	free(*slot);
	*slot = xstrdup(name);
}

static void names_free(struct names *n)
{
	for (size_t i = 0; i < n->cap; i++) {
		free(n->v[i].last);
		free(n->v[i].now);
	}
	free(n->v);
}

static bool is_thread_name(const struct trace_event *ev)
{
	return ev->ph == 'M' && ev->has_tid && ev->arg_name && !strcmp(ev->name, "thread_name");
}

static int learn_names(const char *path, struct names *n, char *err, size_t errlen)
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

/* A string as a JSON literal. */
static void put_json(struct outfile *f, const char *s, char **buf, size_t *cap)
{
	size_t n = strlen(s), need = 6 * n + 1;

	if (need > *cap) {
		*cap = need;
		*buf = xrealloc(*buf, need, 1);
	}
	json_escape(*buf, *cap, s, n);
	outfile__puts(f, "\"");
	outfile__puts(f, *buf);
	outfile__puts(f, "\"");
}

static void put_csv(struct outfile *f, const char *s, size_t n)
{
	const char *q;

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

static void put_ns(struct outfile *f, int64_t v)
{
	outfile__printf(f, "%" PRId64, v);
}

static void row(struct outfile *f, const struct trace_event *ev, const char *thread, bool csv,
		char **buf, size_t *cap)
{
	const char *args = ev->args_at.len ? ev->text + ev->args_at.off : NULL;

	if (csv) {
		put_csv(f, ev->name, strlen(ev->name));
		outfile__puts(f, ",");
		put_csv(f, ev->cat, strlen(ev->cat));
		outfile__puts(f, ",");
		if (ev->has_pid)
			put_ns(f, ev->pid);
		outfile__puts(f, ",");
		if (ev->has_tid)
			put_ns(f, ev->tid);
		outfile__puts(f, ",");
		put_csv(f, thread, strlen(thread));
		outfile__puts(f, ",");
		put_ns(f, ev->ts_ns);
		outfile__puts(f, ",");
		put_ns(f, ev->dur_ns);
		outfile__puts(f, ",");
		if (args)
			put_csv(f, args, ev->args_at.len);
		outfile__puts(f, "\n");
		return;
	}
	outfile__puts(f, "{\"name\":");
	if (ev->name_at.len && ev->text[ev->name_at.off] == '"') /* the file's own literal */
		outfile__write(f, ev->text + ev->name_at.off, ev->name_at.len);
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
		outfile__write(f, args, ev->args_at.len);
	else
		outfile__puts(f, "null");
	outfile__puts(f, "}\n");
}

static int write_rows(const char *path, struct names *n, struct outfile *f, bool csv,
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
	free(buf);
	trace_reader__close(r);
	return ret;
}

static const char export_usage[] =
	"Usage: tracer export TRACE.json[.gz] --jsonl|--csv [-o FILE]\n"
	"\n"
	"One row per span: name, category, pid, tid, thread (its name), start_ns (from the\n"
	"trace's zero), dur_ns, args (JSON) — for BigQuery, DuckDB, Spark, pandas. Output goes\n"
	"to FILE (.gz compresses) or stdout.\n"
	"\n"
	"  --jsonl          one JSON object per line\n"
	"  --csv            CSV with a header line; args as JSON text\n"
	"  -o, --output F   write to F instead of stdout\n"
	"  -h, --help       this text\n"
	"\n"
	"Examples:\n"
	"  tracer export run.json --jsonl -o spans.jsonl.gz\n"
	"  tracer export run.json --csv | duckdb -c \"SELECT name, quantile_cont(dur_ns, 0.99)\n"
	"      FROM read_csv_auto('/dev/stdin') GROUP BY name\"\n";

int cmd_export(int argc, char **argv)
{
	enum { OPT_JSONL = 256, OPT_CSV };
	static const struct option longopts[] = {
		{ "jsonl", no_argument, NULL, OPT_JSONL },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *in, *out = NULL;
	struct names names = { 0 };
	struct outfile *f = NULL;
	int fmt = 0, ch, ret, cret;
	uint64_t rows = 0;
	char err[1024];

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_JSONL:
		case OPT_CSV:
			if (fmt && fmt != ch)
				return usage_error("export", "--jsonl and --csv exclude each other");
			fmt = ch;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(export_usage, stdout);
			return 0;
		case ':':
			return usage_error("export", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("export", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return usage_error("export", "no trace given: tracer export TRACE.json --jsonl");
	if (optind + 1 < argc)
		return usage_error("export", "unexpected argument '%s'", argv[optind + 1]);
	if (!fmt)
		return usage_error("export", "say which format: --jsonl or --csv");
	in = argv[optind];

	ret = learn_names(in, &names, err, sizeof(err));
	if (ret < 0) {
		pr_err("%s", err);
		goto out;
	}
	ret = outfile__open(&f, out);
	if (ret) {
		pr_err("cannot write %s: %s", out ? out : "stdout", strerror(-ret));
		goto out;
	}
	ret = write_rows(in, &names, f, fmt == OPT_CSV, &rows, err, sizeof(err));
	cret = outfile__close(f, ret >= 0);
	if (ret < 0) {
		pr_err("%s", err);
	} else if (cret) {
		pr_err("cannot write %s: %s", out ? out : "stdout", strerror(-cret));
		ret = cret;
	} else if (out) {
		pr_info("wrote %" PRIu64 " spans to %s", rows, out);
	}
out:
	names_free(&names);
	return ret < 0 ? 1 : 0;
}
