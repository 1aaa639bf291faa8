// SPDX-License-Identifier: MIT
/* tracer diff as a table or JSON: the rows, the stages of both runs side by side, both verdicts. */
#include "analyze/diff.h"
#include "trace/json_text.h"
#include "util/util.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_TOP 20
#define STAGE_W 20

static const char *const by_names[] = { "name", "category", "thread", "stage" };

static void json_str(FILE *f, const char *s)
{
	size_t n = strlen(s);
	char *buf = xcalloc(6 * n + 1, 1);

	json_escape(buf, 6 * n + 1, s, n);
	fprintf(f, "\"%s\"", buf);
	free(buf);
}

static size_t shown_rows(const struct diff *d, const struct diff_opts *o)
{
	long top = o->top < 0 ? (o->format == FMT_TABLE ? TABLE_TOP : 0) : o->top;

	return top && (size_t)top < d->nrows ? (size_t)top : d->nrows;
}

static uint64_t p50(const struct report_group *g)
{
	return g ? sketch__quantile(&g->sketch, 0.5) : 0;
}

static uint64_t p99(const struct report_group *g)
{
	return g ? sketch__quantile(&g->sketch, 0.99) : 0;
}

/* ---- table -------------------------------------------------------------------------------- */

static const char *cell(const struct report_group *g, uint64_t v, char *buf)
{
	return g ? fmt_duration(v, buf, 32) : "-";
}

static void run_line(FILE *f, const char *label, const struct report *r, const char *path)
{
	char w[32], *safe = text_safe_dup(path);

	fprintf(f, "%s: %s: %" PRIu64 " span%s on %zu thread%s, %s recorded", label, safe, r->spans,
		plural_s(r->spans), r->nthreads, plural_s(r->nthreads),
		fmt_duration(r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0, w, sizeof(w)));
	free(safe);
	if (r->cpus)
		fprintf(f, ", %d CPU%s", r->cpus, plural_s(r->cpus));
	fputc('\n', f);
}

static const struct stage_stats *stage_named(const struct report *r, const char *name)
{
	for (size_t i = 0; i < r->nstages; i++)
		if (!strcmp(r->stages[i].name, name))
			return &r->stages[i];
	return NULL;
}

static void share_pair(FILE *f, const struct stage_stats *a, const struct stage_stats *b,
		       size_t off, bool last)
{
	char x[16] = "-", y[16] = "-";

	if (a && a->wall_ns)
		snprintf(x, sizeof(x), "%.1f%%",
			 100 * stage__share(a, *(const uint64_t *)((const char *)a + off)));
	if (b && b->wall_ns)
		snprintf(y, sizeof(y), "%.1f%%",
			 100 * stage__share(b, *(const uint64_t *)((const char *)b + off)));
	fprintf(f, last ? " %6s>%s" : " %6s>%-6s", x, y);
}

/* One line per stage of either run: each share in A, then in B. */
static void print_stages(FILE *f, const struct diff *d)
{
	static const size_t offs[] = {
		offsetof(struct stage_stats, running_ns),
		offsetof(struct stage_stats, runnable_ns),
		offsetof(struct stage_stats, queue_wait_ns),
		offsetof(struct stage_stats, blocked_ns),
		offsetof(struct stage_stats, idle_ns),
	};

	fprintf(f, "\nStages, A>B: shares of each stage's observed time\n%-*s %7s %13s %13s %13s "
		   "%13s %13s\n",
		STAGE_W, "STAGE", "THREADS", d->a.has_sched || d->b.has_sched ? "RUNNING" :
		"IN-SPANS", "RUNNABLE", "IN-QUEUE", "BLOCKED", "IDLE");
	for (int side = 0; side < 2; side++) {
		const struct report *r = side ? &d->b : &d->a;

		for (size_t i = 0; i < r->nstages; i++) {
			const char *name = r->stages[i].name;
			const struct stage_stats *a = stage_named(&d->a, name);
			const struct stage_stats *b = stage_named(&d->b, name);
			char *safe, th[32];

			if (side && a)
				continue; /* printed with A's */
			safe = text_safe_dup(name);
			snprintf(th, sizeof(th), "%u>%u", a ? a->threads : 0, b ? b->threads : 0);
			fprintf(f, "%-*.*s %7s", STAGE_W, STAGE_W, safe, th);
			free(safe);
			for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
				share_pair(f, a, b, offs[k],
					   k + 1 == sizeof(offs) / sizeof(offs[0]));
			fputc('\n', f);
		}
	}
}

static void p_text(double p, char *buf, size_t len)
{
	if (p < 1e-300)
		snprintf(buf, len, "<1e-300");
	else if (p < 0.001)
		snprintf(buf, len, "%.0e", p);
	else
		snprintf(buf, len, "%.3f", p);
}

static void print_table(FILE *f, const struct diff *d, const struct diff_opts *o)
{
	size_t n = shown_rows(d, o), sig = 0;
	char b[8][32], ratio[16], pv[16], dl[16];

	run_line(f, "A", &d->a, o->a);
	run_line(f, "B", &d->b, o->b);
	for (size_t i = 0; i < d->nrows; i++)
		sig += d->rows[i].significant;
	fprintf(f, "\nSpans by %s, what moved most first; %zu of %zu changed significantly (*).\n"
		   "Test: Mann-Whitney U on every call's duration (1%% buckets); * p < %g, "
		   "|DELTA| >= %g\nand the median moved %g%% or more. DELTA: P(B > A) - P(B < A). "
		   "Waits sort after work.\n\n",
		by_names[o->by], sig, d->nrows, DIFF_ALPHA, DIFF_MIN_EFFECT, 100 * DIFF_MIN_MOVE);
	fprintf(f, "  %8s %8s %7s %7s %7s %7s %7s %7s %6s %6s %7s  %s\n", "COUNT A", "COUNT B",
		"SELF A", "SELF B", "P50 A", "P50 B", "P99 A", "P99 B", "P50", "DELTA", "P",
		o->by == BY_NAME ? "NAME" : o->by == BY_CATEGORY ? "CATEGORY" :
		o->by == BY_THREAD ? "THREAD" : "STAGE");
	for (size_t i = 0; i < n; i++) {
		const struct diff_row *r = &d->rows[i];
		char ca[24] = "-", cb[24] = "-";

		if (r->a)
			snprintf(ca, sizeof(ca), "%" PRIu64, r->a->count);
		if (r->b)
			snprintf(cb, sizeof(cb), "%" PRIu64, r->b->count);
		if (r->p50_ratio > 0)
			snprintf(ratio, sizeof(ratio), "%.2fx", r->p50_ratio);
		else
			snprintf(ratio, sizeof(ratio), "%s", r->a ? "gone" : "new");
		if (r->a && r->b) {
			p_text(r->mw.p, pv, sizeof(pv));
			snprintf(dl, sizeof(dl), "%+.2f", r->mw.delta);
		} else {
			snprintf(pv, sizeof(pv), "-");
			snprintf(dl, sizeof(dl), "-");
		}
		fprintf(f, "%c %8s %8s %7s %7s %7s %7s %7s %7s %6s %6s %7s  %s\n",
			r->significant ? '*' : ' ', ca, cb,
			cell(r->a, r->a ? r->a->self_ns : 0, b[0]),
			cell(r->b, r->b ? r->b->self_ns : 0, b[1]), cell(r->a, p50(r->a), b[2]),
			cell(r->b, p50(r->b), b[3]), cell(r->a, p99(r->a), b[4]),
			cell(r->b, p99(r->b), b[5]), ratio, dl, pv, r->key);
	}
	if (n < d->nrows)
		fprintf(f, "(%zu more; --top 0 shows all)\n", d->nrows - n);
	if (!d->nrows)
		fprintf(f, "(no spans in either run)\n");
	print_stages(f, d);
	fprintf(f, "\nA %s\nB %s\n", d->a.verdict, d->b.verdict);
}

/* ---- JSON --------------------------------------------------------------------------------- */

static void json_run(FILE *f, const struct report *r, const char *path)
{
	fputs("{\"trace\":", f);
	json_str(f, path);
	fprintf(f, ",\"spans\":%" PRIu64 ",\"threads\":%zu,\"start_ns\":%" PRId64
		   ",\"end_ns\":%" PRId64 ",\"cpus\":%d,\"scheduler_states\":%s,\"truncated\":%s,"
		   "\"folded_spans\":%" PRIu64 ",\"stages\":[",
		r->spans, r->nthreads, r->start_ns, r->end_ns, r->cpus,
		r->has_sched ? "true" : "false", r->truncated ? "true" : "false", r->folded);
	for (size_t i = 0; i < r->nstages; i++) {
		const struct stage_stats *s = &r->stages[i];

		fputs(i ? ",{\"stage\":" : "{\"stage\":", f);
		json_str(f, s->name);
		fprintf(f, ",\"threads\":%u,\"spans\":%" PRIu64 ",\"wall_ns\":%" PRIu64
			   ",\"running\":%.4f,\"runnable\":%.4f,\"queue_wait\":%.4f,"
			   "\"blocked\":%.4f,\"idle\":%.4f}",
			s->threads, s->spans, s->wall_ns, stage__share(s, s->running_ns),
			stage__share(s, s->runnable_ns), stage__share(s, s->queue_wait_ns),
			stage__share(s, s->blocked_ns), stage__share(s, s->idle_ns));
	}
	fputs("]}", f);
}

static void json_side(FILE *f, const struct report_group *g)
{
	if (!g) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64
		   ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 "}",
		g->count, g->total_ns, g->self_ns, p50(g), p99(g));
}

static void json_num(FILE *f, const char *key, bool have, double v)
{
	if (have && isfinite(v))
		fprintf(f, ",\"%s\":%.6g", key, v);
	else
		fprintf(f, ",\"%s\":null", key);
}

static void json_change(FILE *f, const struct diff_row *r)
{
	const struct report_group *a = r->a, *b = r->b;
	bool both = a && b;
	uint64_t a99 = p99(a), b99 = p99(b);

#define DELTA(field) ((int64_t)(b ? b->field : 0) - (int64_t)(a ? a->field : 0))
	fprintf(f, "{\"count\":%" PRId64 ",\"total_ns\":%" PRId64 ",\"self_ns\":%" PRId64
		   ",\"p50_ns\":%" PRId64 ",\"p99_ns\":%" PRId64,
		DELTA(count), DELTA(total_ns), DELTA(self_ns), (int64_t)p50(b) - (int64_t)p50(a),
		(int64_t)b99 - (int64_t)a99);
#undef DELTA
	json_num(f, "p50_ratio", r->p50_ratio > 0, r->p50_ratio);
	json_num(f, "p99_ratio", both && a99, a99 ? (double)b99 / a99 : 0);
	json_num(f, "p_value", both, r->mw.p);
	json_num(f, "z", both, r->mw.z);
	json_num(f, "effect", both, r->mw.delta);
	fprintf(f, ",\"significant\":%s,\"wait\":%s}", r->significant ? "true" : "false",
		r->wait ? "true" : "false");
}

static void print_json(FILE *f, const struct diff *d, const struct diff_opts *o)
{
	size_t n = shown_rows(d, o);

	fputs("{\"a\":", f);
	json_run(f, &d->a, o->a);
	fputs(",\n\"b\":", f);
	json_run(f, &d->b, o->b);
	fprintf(f, ",\n\"group_by\":\"%s\",\"test\":\"mann-whitney-u\",\"alpha\":%g,"
		   "\"min_effect\":%g,\"min_move\":%g,\"rows\":[",
		by_names[o->by], DIFF_ALPHA, DIFF_MIN_EFFECT, DIFF_MIN_MOVE);
	for (size_t i = 0; i < n; i++) {
		const struct diff_row *r = &d->rows[i];

		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
		json_str(f, r->key);
		if (o->by == BY_NAME) {
			fputs(",\"category\":", f);
			json_str(f, r->cat);
		}
		fputs(",\"a\":", f);
		json_side(f, r->a);
		fputs(",\"b\":", f);
		json_side(f, r->b);
		fputs(",\"change\":", f);
		json_change(f, r);
		fputc('}', f);
	}
	fputs("],\n\"verdict_a\":", f);
	json_str(f, d->a.verdict);
	fputs(",\"verdict_b\":", f);
	json_str(f, d->b.verdict);
	fputs("}\n", f);
}

void diff__print(FILE *f, const struct diff *d, const struct diff_opts *o)
{
	if (o->format == FMT_JSON)
		print_json(f, d, o);
	else
		print_table(f, d, o);
}
