// SPDX-License-Identifier: MIT
/* The report as a table, CSV or JSON. */
#include "analyze/report.h"
#include "trace/json_text.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_TOP 20

static const double quantiles[] = { 0.5, 0.9, 0.95, 0.99, 0.999 };
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))

static const char *const by_names[] = { "name", "category", "thread", "stage" };

int report_by__parse(const char *s, enum report_by *by)
{
	for (size_t i = 0; i < sizeof(by_names) / sizeof(by_names[0]); i++) {
		if (!strcmp(s, by_names[i])) {
			*by = i;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *const sort_names[] = { "self", "total", "count", "p99" };

int report_sort__parse(const char *s, enum report_sort *sort)
{
	for (size_t i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++) {
		if (!strcmp(s, sort_names[i])) {
			*sort = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *report_sort__order(enum report_sort sort)
{
	static const char *const order[] = { "most self time", "largest total", "most spans",
					     "slowest p99" };

	return order[sort];
}

static long rows(const struct report *r, const struct report_opts *o)
{
	long top = o->top < 0 ? (o->format == FMT_TABLE ? TABLE_TOP : 0) : o->top;

	return top && (size_t)top < r->ngroups ? top : (long)r->ngroups;
}

static void json_str(FILE *f, const char *s)
{
	char buf[1024];
	size_t n = strlen(s);

	fputc('"', f);
	while (n) { /* in pieces: escaping grows a piece at most 6 times */
		size_t take = n < 150 ? n : 150;

		/* never split a UTF-8 sequence */
		while (take < n && take > 1 && ((unsigned char)s[take] & 0xc0) == 0x80)
			take--;
		json_escape(buf, sizeof(buf), s, take);
		fputs(buf, f);
		s += take;
		n -= take;
	}
	fputc('"', f);
}

static void csv_str(FILE *f, const char *s)
{
	size_t n = strlen(s);
	char *cell = xcalloc(CSV_CELL_MAX(n), 1);

	fwrite(cell, 1, csv_cell(cell, s, n), f);
	free(cell);
}

static void print_table(FILE *f, const struct report *r, const struct report_opts *o)
{
	long nrows = rows(r, o);
	char b[7 + NQ][32], w[64], *path = text_safe_dup(o->path);

	fprintf(f, "%s: %" PRIu64 " span%s", path, r->spans, plural_s(r->spans));
	free(path);
	if (r->incomplete)
		fprintf(f, " (%" PRIu64 " incomplete)", r->incomplete);
	fprintf(f, " on %zu thread%s, %s recorded", r->nthreads, plural_s(r->nthreads),
		fmt_duration(r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0, w, sizeof(w)));
	if (r->cpus)
		fprintf(f, ", %d CPU%s", r->cpus, plural_s(r->cpus));
	fprintf(f, "\nSpans by %s, %s first; percentiles from a quantile sketch, within "
		   "%g%% (relative)",
		by_names[o->by], report_sort__order(o->sort), 100 * SKETCH_REL_ERR);
	if (o->min_dur_ns)
		fprintf(f, "; spans under %s left out", fmt_duration(o->min_dur_ns, w, sizeof(w)));
	if (o->by == BY_THREAD || o->by == BY_STAGE)
		fputs("\nTOTAL: the time its threads spent inside spans, nested spans counted once "
		      "(so SELF\nis the same); MEAN: of the spans' own durations",
		      f);
	else
		fputs("\nSELF: TOTAL less the time of the spans nested inside them", f);
	fprintf(f, "\n\n%8s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s  %s\n",
		"COUNT", "TOTAL", "SELF", "MEAN", "MIN", "MAX", "P50", "P90", "P95", "P99", "P99.9",
		o->by == BY_NAME ? "NAME" : o->by == BY_CATEGORY ? "CATEGORY" :
		o->by == BY_THREAD ? "THREAD" : "STAGE");
	/* the name last and whole, as perf prints symbols: two names never print the same */
	for (long i = 0; i < nrows; i++) {
		const struct report_group *g = r->groups[i];

		fprintf(f, "%8" PRIu64 " %6s %6s %6s %6s %6s", g->count,
			fmt_duration(g->total_ns, b[0], 32), fmt_duration(g->self_ns, b[6], 32),
			fmt_duration(g->sum_ns / g->count, b[1], 32),
			fmt_duration(g->sketch.min, b[2], 32),
			fmt_duration(g->sketch.max, b[3], 32));
		for (size_t q = 0; q < NQ; q++) {
			uint64_t v = sketch__quantile(&g->sketch, quantiles[q]);

			fprintf(f, " %6s", fmt_duration(v, b[4 + q], 32));
		}
		fprintf(f, "  %s\n", g->key);
	}
	if ((size_t)nrows < r->ngroups)
		fprintf(f, "(%zu more; --top 0 shows all)\n", r->ngroups - nrows);
	if (r->folded)
		fprintf(f, "(%" PRIu64 " span%s of %s past the first %zu are counted in \"%s\")\n",
			r->folded, plural_s(r->folded),
			o->by == BY_NAME ? "names" : "categories", r->max_groups, REPORT_OTHER);
	if (!r->ngroups)
		fprintf(f, "(no spans)\n");
	if (r->has_sched)
		fputs("\nStages: threads grouped by name; shares of each thread's observed time\n",
		      f);
	else
		fputs("\nStages: no scheduler states in the trace; shares of the time from each "
		      "thread's first span\nto its last; IN-SPANS is time inside spans that are "
		      "not queue spans\n",
		      f);
	stages__print(f, r->stages, r->nstages);
	fprintf(f, "\n%s\n", r->verdict);
}

static void print_csv(FILE *f, const struct report *r, const struct report_opts *o)
{
	long nrows = rows(r, o);

	fprintf(f, "group,category,count,total_ns,self_ns,mean_ns,min_ns,max_ns,p50_ns,p90_ns,"
		   "p95_ns,p99_ns,p999_ns\n");
	for (long i = 0; i < nrows; i++) {
		const struct report_group *g = r->groups[i];

		csv_str(f, g->key);
		fputc(',', f);
		csv_str(f, g->cat);
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
			g->count, g->total_ns, g->self_ns, g->sum_ns / g->count, g->sketch.min,
			g->sketch.max);
		for (size_t q = 0; q < NQ; q++)
			fprintf(f, ",%" PRIu64, sketch__quantile(&g->sketch, quantiles[q]));
		fputc('\n', f);
	}
}

static void print_json(FILE *f, const struct report *r, const struct report_opts *o)
{
	static const char *const qnames[NQ] = { "p50_ns", "p90_ns", "p95_ns", "p99_ns", "p999_ns" };
	long nrows = rows(r, o);

	fputs("{\"trace\":", f);
	json_str(f, o->path);
	fprintf(f, ",\"spans\":%" PRIu64 ",\"incomplete\":%" PRIu64 ",\"start_ns\":%" PRId64
		   ",\"end_ns\":%" PRId64 ",\"cpus\":%d,\"scheduler_states\":%s,\"truncated\":%s,"
		   "\"approximate_spans\":%" PRIu64 ",\"folded_spans\":%" PRIu64
		   ",\"group_by\":\"%s\",\"sort_by\":\"%s\",\"relative_error\":%g,"
		   "\"min_dur_ns\":%" PRIu64 ",\"groups\":[",
		r->spans, r->incomplete, r->start_ns, r->end_ns, r->cpus,
		r->has_sched ? "true" : "false", r->truncated ? "true" : "false", r->approx,
		r->folded, by_names[o->by], sort_names[o->sort], SKETCH_REL_ERR, o->min_dur_ns);
	for (long i = 0; i < nrows; i++) {
		const struct report_group *g = r->groups[i];

		fputs(i ? ",\n{\"group\":" : "\n{\"group\":", f);
		json_str(f, g->key);
		if (o->by == BY_NAME) {
			fputs(",\"category\":", f);
			json_str(f, g->cat);
		}
		fprintf(f, ",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64
			   ",\"mean_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64,
			g->count, g->total_ns, g->self_ns, g->sum_ns / g->count, g->sketch.min,
			g->sketch.max);
		for (size_t q = 0; q < NQ; q++)
			fprintf(f, ",\"%s\":%" PRIu64, qnames[q],
				sketch__quantile(&g->sketch, quantiles[q]));
		fputc('}', f);
	}
	fputs("],\n\"stages\":[", f);
	for (size_t i = 0; i < r->nstages; i++) {
		const struct stage_stats *s = &r->stages[i];

		fputs(i ? ",\n{\"stage\":" : "\n{\"stage\":", f);
		json_str(f, s->name);
		fprintf(f, ",\"threads\":%u,\"spans\":%" PRIu64 ",\"wall_ns\":%" PRIu64
			   ",\"running\":%.4f,\"runnable\":%.4f,\"queue_wait\":%.4f,"
			   "\"blocked\":%.4f,\"idle\":%.4f}",
			s->threads, s->spans, s->wall_ns, stage__share(s, s->running_ns),
			stage__share(s, s->runnable_ns), stage__share(s, s->queue_wait_ns),
			stage__share(s, s->blocked_ns), stage__share(s, s->idle_ns));
	}
	fputs("],\n\"threads\":[", f);
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct thread_time *t = &r->threads[i];
		char stage[64];

		stage__fold(t->name ? t->name : "(unnamed)", stage, sizeof(stage));
		fprintf(f, "%s{\"tid\":%d,\"pid\":%d,\"name\":", i ? ",\n" : "\n", t->tid, t->pid);
		json_str(f, t->name ? t->name : "");
		fputs(",\"stage\":", f);
		json_str(f, stage);
		fprintf(f, ",\"spans\":%" PRIu64 ",\"wall_ns\":%" PRIu64 ",\"running_ns\":%" PRIu64
			   ",\"runnable_ns\":%" PRIu64 ",\"queue_wait_ns\":%" PRIu64
			   ",\"blocked_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64 ",\"category_ns\":{",
			t->spans, thread_time__wall(t), t->running_ns, t->runnable_ns,
			t->queue_wait_ns, t->blocked_ns, t->idle_ns);
		for (int k = 0; k < CAT_MAX; k++)
			fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", category__name(k),
				t->cat_ns[k]);
		fputs("}}", f);
	}
	fputs("],\n\"verdict\":", f);
	json_str(f, r->verdict);
	fputs("}\n", f);
}

void report__print(FILE *f, const struct report *r, const struct report_opts *o)
{
	switch (o->format) {
	case FMT_TABLE:
		print_table(f, r, o);
		break;
	case FMT_CSV:
		print_csv(f, r, o);
		break;
	case FMT_JSON:
		print_json(f, r, o);
		break;
	}
}
