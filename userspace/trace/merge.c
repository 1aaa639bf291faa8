// SPDX-License-Identifier: MIT
/* Merge: one timeline from several recordings.
 *
 * Clocks. Each recording's times count from its own zero, whose CLOCK_MONOTONIC and wall-clock
 * times its metadata gives (t0_monotonic_ns, t0_realtime_ns). Recordings of one boot are aligned
 * on CLOCK_MONOTONIC, which is exact; recordings of different boots or hosts (their boot times,
 * t0_realtime_ns - t0_monotonic_ns, differ by more than a second) are aligned on the wall
 * clock, as exact as the hosts' clock synchronisation. The merged zero is the earliest input's.
 *
 * Processes stay apart. A pid or tid (one namespace in Linux) of an input's own processes that
 * an earlier input already uses gets an unused number, consistently in the events and the
 * ftrace lines (across boots, any clashing id in the ftrace lines too); flow ids move out of
 * each other's way; every process name says which file it came from ("pipeline (B.json)").
 *
 * Everything streams: events are copied input after input, one per line; the inputs' ftrace
 * lines are merged in time order with one reader per input; metadata becomes
 * {"merged": [meta_A, meta_B, ...], "merge": {how}, t0 and duration of the merged zero}. */
#include "trace/merge.h"
#include "trace/json_text.h"
#include "trace/json_value.h"
#include "trace/outfile.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <uthash.h>

#define SAME_BOOT_NS 1000000000LL /* boot times closer than this: the same boot */
#define FLOW_ID_STRIDE (1ull << 40) /* flow ids of input k move up by k strides */

/* A set of positive ids, or a map between them; iterated in the order ids were added. */
struct id_entry {
	int64_t id, val;
	UT_hash_handle hh;
};

struct idmap {
	struct id_entry *head;
};

static void idmap_put(struct idmap *m, int64_t id, int64_t val)
{
	struct id_entry *e;

	if (id <= 0)
		return;
	HASH_FIND(hh, m->head, &id, sizeof(id), e);
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		e->id = id;
		HASH_ADD(hh, m->head, id, sizeof(e->id), e);
	}
	e->val = val;
}

static bool idmap_get(const struct idmap *m, int64_t id, int64_t *val)
{
	struct id_entry *e;

	if (id <= 0)
		return false;
	HASH_FIND(hh, m->head, &id, sizeof(id), e);
	if (e && val)
		*val = e->val;
	return e;
}

static void idmap_free(struct idmap *m)
{
	struct id_entry *e, *tmp;

	HASH_ITER(hh, m->head, e, tmp) {
		HASH_DEL(m->head, e);
		free(e);
	}
}

struct input {
	const char *path;
	const char *label; /* what its process names get: its file name */
	char *meta;	   /* its metadata object, or NULL */
	bool has_mono, has_real;
	int64_t t0_mono, t0_real, dur, offset;
	struct idmap ids;   /* every pid and tid it uses */
	struct idmap evids; /* those its events use: its own processes */
	struct idmap pids;  /* pids of its events */
	struct idmap named; /* pids with a process_name */
	struct idmap remap; /* id -> the id it gets */
	bool truncated;
	uint64_t not_json; /* events left out: their text is not JSON */
};

static int64_t meta_int(const char *meta, const char *key, bool *found)
{
	size_t n;
	const char *v = meta ? json_object_get(meta, strlen(meta), key, &n) : NULL;
	char buf[64];
	double d;

	*found = false;
	if (!v || n >= sizeof(buf))
		return 0;
	if (*v == '"') { /* also written as a string, to keep every digit */
		v++;
		n -= 2;
	}
	memcpy(buf, v, n);
	buf[n] = 0;
	if (strspn(buf, "-0123456789") == n) {
		*found = n > 0;
		return strtoll(buf, NULL, 10);
	}
	d = strtod(buf, NULL);
	*found = isfinite(d);
	return *found ? llround(d) : 0;
}

static void scan_event(struct input *in, const struct trace_event *ev)
{
	if (ev->has_pid && ev->pid > 0) {
		idmap_put(&in->ids, ev->pid, 0);
		idmap_put(&in->evids, ev->pid, 0);
		if (ev->ph != 'M')
			idmap_put(&in->pids, ev->pid, 0);
		if (ev->ph == 'M' && !strcmp(ev->name, "process_name"))
			idmap_put(&in->named, ev->pid, 0);
	}
	if (ev->has_tid && ev->tid > 0) {
		idmap_put(&in->ids, ev->tid, 0);
		idmap_put(&in->evids, ev->tid, 0);
	}
}

static void scan_sched(struct input *in, const struct ftrace_line *l)
{
	idmap_put(&in->ids, l->tid, 0);
	idmap_put(&in->ids, l->tgid, 0);
	if (l->kind == FT_SWITCH) {
		idmap_put(&in->ids, l->prev_tid, 0);
		idmap_put(&in->ids, l->next_tid, 0);
	} else if (l->kind != FT_OTHER) {
		idmap_put(&in->ids, l->woken_tid, 0);
	}
}

/* Pass 1 over one input: its ids, process names and clocks. */
static int scan_input(struct input *in)
{
	struct trace_reader *r;
	struct trace_item it;
	struct ftrace_line fl;
	char err[1024];
	bool found;
	int ret;

	ret = trace_reader__open(&r, in->path, TR_ALL, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	while ((ret = trace_reader__next(r, &it)) > 0) {
		if (it.type == TI_EVENT) {
			scan_event(in, &it.ev);
		} else if (it.type == TI_SCHED) {
			if (!ftrace_line__parse(it.text, it.len, &fl))
				scan_sched(in, &fl);
		} else if (it.type == TI_METADATA && !in->meta && json_valid(it.text, it.len)) {
			in->meta = xcalloc(1, it.len + 1);
			memcpy(in->meta, it.text, it.len);
		} else if (it.type == TI_METADATA && !in->meta) {
			pr_warn("%s: its metadata is not valid JSON: the merge leaves it out", in->path);
		}
	}
	if (ret < 0)
		pr_err("%s", trace_reader__error(r));
	else if (trace_reader__no_events(r) && !trace_reader__truncated(r))
		pr_err("%s: not a Chrome trace: no \"traceEvents\" array", in->path);
	else
		trace_reader__warn_skipped(r, in->path);
	in->truncated = trace_reader__truncated(r);
	if (!ret && trace_reader__no_events(r) && !in->truncated)
		ret = -EINVAL;
	trace_reader__close(r);
	if (ret < 0)
		return ret;
	in->t0_mono = meta_int(in->meta, "t0_monotonic_ns", &in->has_mono);
	in->t0_real = meta_int(in->meta, "t0_realtime_ns", &in->has_real);
	in->dur = meta_int(in->meta, "duration_ns", &found);
	return 0;
}

/* The clock to align on, and each input's offset from the merged zero. */
static const char *align(struct input *in, size_t n, int64_t *zero_mono, int64_t *zero_real)
{
	bool mono = true, real = true;

	for (size_t i = 0; i < n; i++) {
		mono &= in[i].has_mono;
		real &= in[i].has_real;
	}
	if (mono && real) { /* one boot? */
		int64_t boot0 = in[0].t0_real - in[0].t0_mono;

		for (size_t i = 1; i < n; i++)
			if (llabs(in[i].t0_real - in[i].t0_mono - boot0) > SAME_BOOT_NS)
				mono = false;
	}
	if (!mono && !real) {
		for (size_t i = 0; i < n; i++)
			if (!in[i].has_mono && !in[i].has_real)
				pr_warn("%s has no t0_monotonic_ns or t0_realtime_ns in its "
					"metadata: its times are kept as they are",
					in[i].path);
		return "none";
	}
	*zero_mono = *zero_real = INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		int64_t t = mono ? in[i].t0_mono : in[i].t0_real;

		if (t < (mono ? *zero_mono : *zero_real)) {
			*zero_mono = in[i].t0_mono;
			*zero_real = in[i].t0_real;
		}
	}
	for (size_t i = 0; i < n; i++)
		in[i].offset = mono ? in[i].t0_mono - *zero_mono : in[i].t0_real - *zero_real;
	return mono ? "CLOCK_MONOTONIC" : "CLOCK_REALTIME";
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Gives every id an earlier input already uses a new, unused number. Within one boot only the
 * inputs' own processes can clash (other tids in their ftrace lines are the same real threads);
 * across boots or hosts any number can. */
static void assign_ids(struct input *in, size_t n, bool one_boot)
{
	struct idmap used = { 0 };
	int64_t next = PID_MAX_LIMIT + 1; /* plainly not a real tid */

	const struct id_entry *e, *tmp;

	for (size_t i = 0; i < n; i++)
		HASH_ITER(hh, in[i].ids.head, e, tmp)
			if (e->id >= next)
				next = e->id + 1;
	for (size_t i = 0; i < n; i++) {
		const struct idmap *mine = one_boot ? &in[i].evids : &in[i].ids;
		int64_t *ids = xcalloc(HASH_COUNT(mine->head) + 1, sizeof(int64_t));
		size_t cnt = 0;

		HASH_ITER(hh, mine->head, e, tmp)
			ids[cnt++] = e->id;
		qsort(ids, cnt, sizeof(*ids), cmp_i64);
		for (size_t k = 0; k < cnt; k++) {
			if (!idmap_get(&used, ids[k], NULL)) {
				idmap_put(&used, ids[k], 0);
				continue;
			}
			while (idmap_get(&used, next, NULL))
				next++;
			idmap_put(&in[i].remap, ids[k], next);
			idmap_put(&used, next, 0);
		}
		free(ids);
	}
	idmap_free(&used);
}

/* ---- rewriting -------------------------------------------------------------------------- */

struct sub {
	struct text_span at;
	char with[96];
	const char *longer; /* instead of with, when set */
};

static int by_off(const void *a, const void *b)
{
	const struct sub *x = a, *y = b;

	return x->at.off < y->at.off ? -1 : x->at.off > y->at.off;
}

static void fmt_ns_us(char *out, int64_t ns)
{
	if (ns < 0) {
		*out++ = '-';
		ns = -ns;
	}
	fmt_us(out, ns);
}

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = xrealloc(b->p, b->cap, 1);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = 0;
}

/* Raw control bytes or invalid UTF-8 from the input made valid (json_clean): the output is JSON
 * whatever the input held. */
static void clean(struct buf *b)
{
	size_t i = 0;
	char *p;

	while (i < b->len && (unsigned char)b->p[i] >= 0x20 && (unsigned char)b->p[i] < 0x80)
		i++;
	if (i == b->len)
		return;
	/* the room json_clean may need, from the length before cleaning */
	b->cap = 6 * b->len + 1;
	p = xcalloc(b->cap, 1);
	b->len = json_clean(p, b->p, b->len);
	free(b->p);
	b->p = p;
}

/* text with the subs applied, white space outside strings dropped (one event, one line). */
static void rewrite(struct buf *out, const char *text, size_t len, struct sub *subs, size_t n,
		    bool minify)
{
	struct buf tmp = { 0 };
	size_t pos = 0;

	qsort(subs, n, sizeof(*subs), by_off);
	out->len = 0;
	for (size_t i = 0; i < n; i++) {
		const char *w = subs[i].longer ? subs[i].longer : subs[i].with;

		buf_add(minify ? &tmp : out, text + pos, subs[i].at.off - pos);
		buf_add(minify ? &tmp : out, w, strlen(w));
		pos = subs[i].at.off + subs[i].at.len;
	}
	buf_add(minify ? &tmp : out, text + pos, len - pos);
	if (minify) {
		bool in_str = false, esc = false;

		for (size_t i = 0; i < tmp.len; i++) {
			char c = tmp.p[i];

			if (in_str) {
				esc = !esc && c == '\\';
				if (c == '"' && !esc)
					in_str = false;
			} else if (c == '"') {
				in_str = true;
			} else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				continue;
			}
			buf_add(out, &c, 1);
		}
		free(tmp.p);
	}
	clean(out);
}

/* A flow id of input k, moved out of the other inputs' way. */
static void flow_id(struct sub *s, const char *v, size_t n, size_t k)
{
	char tmp[64];
	unsigned long long x;
	char *end;

	if (n >= sizeof(tmp) || !n)
		return;
	memcpy(tmp, v, n);
	tmp[n] = 0;
	if (tmp[0] == '"') { /* Perfetto reads string ids as hex */
		tmp[n - 1] = 0;
		x = strtoull(tmp + 1, &end, 16);
		if (*end || end == tmp + 1)
			snprintf(s->with, sizeof(s->with), "\"%zu:%s\"", k, tmp + 1);
		else
			snprintf(s->with, sizeof(s->with), "\"0x%llx\"", x + k * FLOW_ID_STRIDE);
	} else {
		x = strtoull(tmp, &end, 10);
		if (*end)
			return;
		snprintf(s->with, sizeof(s->with), "%llu", x + k * FLOW_ID_STRIDE);
	}
}

static void map_id(const struct input *in, struct sub *subs, size_t *n, struct text_span at,
		   int64_t id)
{
	int64_t to;

	if (at.len && idmap_get(&in->remap, id, &to)) {
		subs[*n].at = at;
		subs[*n].longer = NULL;
		snprintf(subs[*n].with, sizeof(subs[*n].with), "%" PRId64, to);
		(*n)++;
	}
}

struct writer {
	struct outfile *f;
	struct buf line, name;
	bool first;
	uint64_t events;
};

static void emit(struct writer *w, const char *p, size_t n)
{
	outfile__puts(w->f, w->first ? "\n" : ",\n");
	outfile__write(w->f, p, n);
	w->first = false;
	w->events++;
}

static void copy_event(struct writer *w, struct input *in, size_t k,
		       const struct trace_event *ev)
{
	struct sub subs[8];
	size_t n = 0;
	bool minify = memchr(ev->text, '\n', ev->len) || memchr(ev->text, '\r', ev->len);

	if (ev->has_ts && in->offset) {
		subs[n].at = ev->ts_at;
		subs[n].longer = NULL;
		fmt_ns_us(subs[n++].with, ev->ts_ns + in->offset);
	}
	if (ev->has_pid)
		map_id(in, subs, &n, ev->pid_at, ev->pid);
	if (ev->has_tid)
		map_id(in, subs, &n, ev->tid_at, ev->tid);
	if (k && ev->id_at.len) {
		subs[n].at = ev->id_at;
		subs[n].longer = NULL;
		subs[n].with[0] = 0;
		flow_id(&subs[n], ev->text + ev->id_at.off, ev->id_at.len, k);
		n += subs[n].with[0] != 0;
	}
	if (k && ev->bind_id_at.len) {
		subs[n].at = ev->bind_id_at;
		subs[n].longer = NULL;
		subs[n].with[0] = 0;
		flow_id(&subs[n], ev->text + ev->bind_id_at.off, ev->bind_id_at.len, k);
		n += subs[n].with[0] != 0;
	}
	if (ev->ph == 'M' && !strcmp(ev->name, "process_name") && ev->args_at.len) {
		char *esc = xcalloc(1, 6 * (strlen(ev->arg_name ? ev->arg_name : "") +
					    strlen(in->label)) + 32);
		char *label = xcalloc(1, strlen(ev->arg_name ? ev->arg_name : "") +
					       strlen(in->label) + 8);

		sprintf(label, "%s (%s)", ev->arg_name ? ev->arg_name : "", in->label);
		json_escape(esc, 6 * strlen(label) + 1, label, strlen(label));
		w->name.len = 0;
		buf_add(&w->name, "{\"name\":\"", 9);
		buf_add(&w->name, esc, strlen(esc));
		buf_add(&w->name, "\"}", 2);
		free(esc);
		free(label);
		subs[n].at = ev->args_at;
		subs[n++].longer = w->name.p;
	}
	rewrite(&w->line, ev->text, ev->len, subs, n, minify);
	if (!json_valid(w->line.p, w->line.len)) {
		in->not_json++; /* the reader finds its fields; a strict reader would refuse it */
		return;
	}
	emit(w, w->line.p, w->line.len);
}

static int copy_events(struct writer *w, struct input *in, size_t k)
{
	const struct id_entry *e, *tmp;
	struct trace_reader *r;
	struct trace_item it;
	char err[1024];
	int ret;

	ret = trace_reader__open(&r, in->path, TR_EVENTS, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	while ((ret = trace_reader__next(r, &it)) > 0)
		copy_event(w, in, k, &it.ev);
	if (ret < 0)
		pr_err("%s", trace_reader__error(r));
	trace_reader__close(r);
	if (ret < 0)
		return ret;
	if (in->not_json)
		pr_warn("%s: %" PRIu64 " event%s left out: not valid JSON", in->path, in->not_json,
			plural_s(in->not_json));
	/* processes the input never named: name them after the file */
	HASH_ITER(hh, in->pids.head, e, tmp) {
		int64_t pid = e->id, to = pid;
		char line[512], esc[400];

		if (idmap_get(&in->named, pid, NULL))
			continue;
		idmap_get(&in->remap, pid, &to);
		json_escape(esc, sizeof(esc), in->label, strlen(in->label));
		snprintf(line, sizeof(line),
			 "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
			 ",\"tid\":%" PRId64 ",\"args\":{\"name\":\"pid %" PRId64 " (%s)\"}}",
			 to, to, pid, esc);
		emit(w, line, strlen(line));
	}
	return 0;
}

/* ---- ftrace lines, merged in time order ------------------------------------------------- */

struct sched_src {
	struct trace_reader *r;
	const char *text;
	size_t len;
	struct ftrace_line fl;
	bool live;
};

static int sched_next(struct sched_src *s, const char *path)
{
	struct trace_item it;
	int ret;

	while ((ret = trace_reader__next(s->r, &it)) > 0) {
		if (ftrace_line__parse(it.text, it.len, &s->fl))
			continue; /* comments (the header is written once), unknown lines */
		s->text = it.text;
		s->len = it.len;
		return 1;
	}
	s->live = false;
	if (ret < 0)
		pr_err("%s", trace_reader__error(s->r));
	return ret;
}

static void copy_sched_line(struct writer *w, const struct input *in, const struct sched_src *s)
{
	const struct ftrace_line *l = &s->fl;
	struct sub subs[5];
	size_t n = 0;
	int64_t ts = l->ts_ns + in->offset;
	char *esc;

	if (in->offset) {
		subs[n].at = l->ts_at;
		subs[n].longer = NULL;
		snprintf(subs[n++].with, sizeof(subs[0].with), "%" PRId64 ".%09" PRId64,
			 ts / 1000000000, ts % 1000000000);
	}
	map_id(in, subs, &n, l->tid_at, l->tid);
	if (l->tgid > 0)
		map_id(in, subs, &n, l->tgid_at, l->tgid);
	if (l->kind == FT_SWITCH) {
		map_id(in, subs, &n, l->a_at, l->prev_tid);
		map_id(in, subs, &n, l->b_at, l->next_tid);
	} else if (l->kind != FT_OTHER) {
		map_id(in, subs, &n, l->a_at, l->woken_tid);
	}
	rewrite(&w->line, s->text, s->len, subs, n, false);
	esc = xcalloc(1, 6 * w->line.len + 1);
	json_escape(esc, 6 * w->line.len + 1, w->line.p, w->line.len);
	outfile__puts(w->f, esc);
	outfile__puts(w->f, "\\n");
	free(esc);
}

static int merge_sched(struct writer *w, struct input *in, size_t n)
{
	struct sched_src *src = xcalloc(n, sizeof(*src));
	char err[1024];
	int ret = 0;

	outfile__puts(w->f, "\"# tracer: nop\\n# clock_type=LINUX_CLOCK_MONOTONIC\\n");
	for (size_t i = 0; i < n && !ret; i++) {
		ret = trace_reader__open(&src[i].r, in[i].path, TR_SCHED, err, sizeof(err));
		if (ret) {
			pr_err("%s", err);
			break;
		}
		src[i].live = true;
		ret = sched_next(&src[i], in[i].path);
		ret = ret < 0 ? ret : 0;
	}
	while (!ret) {
		size_t best = n;

		for (size_t i = 0; i < n; i++)
			if (src[i].live &&
			    (best == n || src[i].fl.ts_ns + in[i].offset <
						  src[best].fl.ts_ns + in[best].offset))
				best = i;
		if (best == n)
			break;
		copy_sched_line(w, &in[best], &src[best]);
		ret = sched_next(&src[best], in[best].path);
		ret = ret < 0 ? ret : 0;
	}
	outfile__puts(w->f, "\"");
	for (size_t i = 0; i < n; i++)
		trace_reader__close(src[i].r);
	free(src);
	return ret;
}

static void write_metadata(struct writer *w, struct input *in, size_t n, const char *clock,
			   int64_t zero_mono, int64_t zero_real)
{
	const struct id_entry *e, *tmp;
	int64_t dur = 0;
	char esc[1024];

	outfile__puts(w->f, ",\n\"metadata\":{\"merged\":[");
	for (size_t i = 0; i < n; i++) {
		outfile__puts(w->f, i ? "," : "");
		outfile__puts(w->f, in[i].meta ? in[i].meta : "null");
		if (in[i].offset + in[i].dur > dur)
			dur = in[i].offset + in[i].dur;
	}
	outfile__printf(w->f, "],\"merge\":{\"tracer_version\":\"%s\",\"aligned_on\":\"%s\","
			      "\"inputs\":[",
			TRACER_VERSION, clock);
	for (size_t i = 0; i < n; i++) {
		bool first = true;

		json_escape(esc, sizeof(esc), in[i].path, strlen(in[i].path));
		outfile__printf(w->f, "%s{\"file\":\"%s\",\"offset_ns\":%" PRId64 ",\"ids\":{",
				i ? "," : "", esc, in[i].offset);
		HASH_ITER(hh, in[i].remap.head, e, tmp) {
			outfile__printf(w->f, "%s\"%" PRId64 "\":%" PRId64, first ? "" : ",", e->id,
					e->val);
			first = false;
		}
		outfile__puts(w->f, "}}");
	}
	outfile__puts(w->f, "]}");
	if (!strcmp(clock, "CLOCK_MONOTONIC"))
		outfile__printf(w->f, ",\"clock\":\"CLOCK_MONOTONIC\",\"t0_monotonic_ns\":%" PRId64,
				zero_mono);
	if (strcmp(clock, "none") && zero_real != INT64_MAX)
		outfile__printf(w->f, ",\"t0_realtime_ns\":%" PRId64, zero_real);
	outfile__printf(w->f, ",\"duration_ns\":%" PRId64 "}}\n", dur);
}

/* merge_sched reads every input at once: a descriptor each, two for a pipe (its spool). */
static int enough_files(size_t n)
{
	rlim_t need = 2 * n + 16;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return 0;
	rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
	if (rl.rlim_cur >= need && !setrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	pr_err("merging %zu files needs %llu open files, more than the limit (%llu): raise it "
	       "(ulimit -n) or merge them in groups, then merge the groups' outputs",
	       n, (unsigned long long)need, (unsigned long long)rl.rlim_max);
	return -EMFILE;
}

static int merge(struct input *in, size_t n, const char *out)
{
	struct writer w = { .first = true };
	int64_t zero_mono = 0, zero_real = INT64_MAX;
	const char *clock;
	char err[1024];
	int ret = enough_files(n);

	for (size_t i = 0; i < n && !ret; i++)
		ret = scan_input(&in[i]);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		if (in[i].truncated)
			pr_warn("%s ends before its closing bracket (recording killed?): merging "
				"its complete events",
				in[i].path);
	clock = align(in, n, &zero_mono, &zero_real);
	assign_ids(in, n, !strcmp(clock, "CLOCK_MONOTONIC"));
	ret = outfile__open(&w.f, out, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	outfile__puts(w.f, "{\"traceEvents\":[");
	for (size_t i = 0; i < n && !ret; i++)
		ret = copy_events(&w, &in[i], i);
	if (!ret) {
		outfile__puts(w.f, "\n],\n\"systemTraceEvents\":");
		ret = merge_sched(&w, in, n);
	}
	if (!ret)
		write_metadata(&w, in, n, clock, zero_mono, zero_real);
	if (!ret && w.first) {
		pr_err("the inputs hold no events: nothing to merge");
		ret = -EINVAL;
	}
	int cret = outfile__close(w.f, !ret);

	if (!ret && cret) {
		pr_err("cannot write %s: %s", out, strerror(-cret));
		ret = cret;
	}
	if (!ret)
		pr_info("wrote %s: %" PRIu64 " events from %zu recordings, aligned on %s", out,
			w.events, n, clock);
	free(w.line.p);
	free(w.name.p);
	return ret;
}

int trace_merge(char *const *paths, size_t n, const char *out)
{
	struct input *in = xcalloc(n, sizeof(*in));
	int ret;

	for (size_t i = 0; i < n; i++) {
		in[i].path = paths[i];
		in[i].label = strrchr(in[i].path, '/') ? strrchr(in[i].path, '/') + 1 : in[i].path;
	}
	/* two inputs of one name (a/run.json, b/run.json): label them by path */
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < n; k++)
			if (i != k && !strcmp(in[i].label, in[k].label))
				in[i].label = in[i].path;
	ret = merge(in, n, out);
	for (size_t i = 0; i < n; i++) {
		free(in[i].meta);
		idmap_free(&in[i].ids);
		idmap_free(&in[i].evids);
		idmap_free(&in[i].pids);
		idmap_free(&in[i].named);
		idmap_free(&in[i].remap);
	}
	free(in);
	return ret;
}
