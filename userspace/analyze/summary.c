// SPDX-License-Identifier: MIT
#include "analyze/summary.h"
#include "analyze/report.h"
#include "analyze/stages.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void summary__init(struct summary *s)
{
	memset(s, 0, sizeof(*s));
	s->names = xcalloc(SUMMARY_MAX_NAMES + 1, sizeof(*s->names));
}

/* A name past the first SUMMARY_MAX_NAMES: remembered (up to a bound) to say how many there
 * were, its spans counted in SUMMARY_OTHER. */
static void note_folded(struct summary *s, const char *name)
{
	struct folded_name *fn;
	size_t len = strlen(name);

	HASH_FIND(hh, s->folded, name, len, fn);
	if (fn)
		return;
	s->nfolded++;
	if (s->nfolded > SUMMARY_MAX_FOLDED)
		return;
	fn = xcalloc(1, sizeof(*fn) + len + 1);
	memcpy(fn->name, name, len);
	HASH_ADD_KEYPTR(hh, s->folded, fn->name, len, fn);
}

static struct span_stats *stats_of(struct summary *s, const char *name, enum category cat)
{
	struct span_stats *st;

	HASH_FIND_STR(s->by_name, name, st);
	if (st)
		return st;
	if (s->nnames >= SUMMARY_MAX_NAMES) {
		note_folded(s, name);
		HASH_FIND_STR(s->by_name, SUMMARY_OTHER, st);
		if (st)
			return st;
		name = SUMMARY_OTHER;
	}
	st = xcalloc(1, sizeof(*st));
	st->name = xstrdup(name);
	st->cat = cat;
	sketch__init(&st->sketch);
	s->names[s->nnames++] = st;
	HASH_ADD_KEYPTR(hh, s->by_name, st->name, strlen(st->name), st);
	return st;
}

void summary__span(struct summary *s, const char *name, enum category cat, uint64_t start_ns,
		   uint64_t end_ns, uint64_t self_ns, bool incomplete)
{
	struct span_stats *st = stats_of(s, name, cat);
	uint64_t dur_ns = end_ns > start_ns ? end_ns - start_ns : 0;

	st->count++;
	st->total_ns += dur_ns;
	st->self_ns += self_ns;
	st->incomplete += incomplete;
	sketch__add(&st->sketch, dur_ns);
	/* the live view's interval gets the span's part inside it (its self time spread evenly):
	 * a call of 1.9 s ending in a frame of 1 s was 190% of one CPU there */
	if (end_ns > s->recent_from && dur_ns)
		st->recent_self_ns +=
			start_ns >= s->recent_from
				? self_ns
				: (uint64_t)((double)self_ns * (end_ns - s->recent_from) / dur_ns);
}

/* Most self time first: the work itself leads, not the frames that only wrap it. */
static int by_self(const void *a, const void *b)
{
	const struct span_stats *x = *(const struct span_stats *const *)a;
	const struct span_stats *y = *(const struct span_stats *const *)b;

	if (x->self_ns != y->self_ns)
		return x->self_ns < y->self_ns ? 1 : -1;
	return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : 0;
}

/* What SUMMARY_OTHER holds, said under the table that shows it. */
static void print_folded(FILE *f, const struct summary *s)
{
	if (!s->nfolded)
		return;
	fprintf(f, "%s: the spans of %s%zu more names, counted together past the first %d "
		   "distinct names (memory stays bounded); tracer report FILE shows each\n",
		SUMMARY_OTHER, s->nfolded > SUMMARY_MAX_FOLDED ? "over " : "",
		s->nfolded > SUMMARY_MAX_FOLDED ? (size_t)SUMMARY_MAX_FOLDED : s->nfolded,
		SUMMARY_MAX_NAMES);
}

static void print_spans(FILE *f, const struct summary *s)
{
	const struct span_stats **order = xcalloc(s->nnames, sizeof(*order));
	char b[6][32], safe[4 * SPAN_NAME_LEN + 256];

	for (size_t i = 0; i < s->nnames; i++)
		order[i] = s->names[i];
	qsort(order, s->nnames, sizeof(*order), by_self);
	/* SELF: less the spans nested inside; the name last and whole, as perf prints symbols */
	fprintf(f, "%8s %8s %8s %8s %8s %8s %8s  %-8s  %s\n", "COUNT", "TOTAL", "SELF", "MEAN",
		"P50", "P99", "MAX", "CATEGORY", "SPAN");
	for (size_t i = 0; i < s->nnames; i++) {
		const struct span_stats *st = order[i];

		if (!st->count)
			continue;
		fprintf(f, "%8llu %8s %8s %8s %8s %8s %8s  %-8s  %s\n",
			(unsigned long long)st->count, fmt_duration(st->total_ns, b[0], 32),
			fmt_duration(st->self_ns, b[5], 32),
			fmt_duration(st->total_ns / st->count, b[1], 32),
			fmt_duration(sketch__quantile(&st->sketch, 0.5), b[2], 32),
			fmt_duration(sketch__quantile(&st->sketch, 0.99), b[3], 32),
			fmt_duration(st->sketch.max, b[4], 32), category__name(st->cat),
			printable(st->name, safe, sizeof(safe)));
	}
	print_folded(f, s);
	free(order);
}

/* The live view: the work first, then the waits (queue spans: many threads wait at once);
 * each by self time since the last call, then since the start. */
static int by_recent_self(const void *a, const void *b)
{
	const struct span_stats *x = *(const struct span_stats *const *)a;
	const struct span_stats *y = *(const struct span_stats *const *)b;
	uint64_t rx = x->recent_self_ns, ry = y->recent_self_ns;

	if ((x->cat == CAT_QUEUE) != (y->cat == CAT_QUEUE))
		return x->cat == CAT_QUEUE ? 1 : -1;
	if (rx != ry)
		return rx < ry ? 1 : -1;
	return x->self_ns < y->self_ns ? 1 : x->self_ns > y->self_ns ? -1 : 0;
}

/* top --sort total|count|p99, since the start (the waits last too); qsort has no context */
static int sort_key;

static int by_key(const void *a, const void *b)
{
	const struct span_stats *x = *(const struct span_stats *const *)a;
	const struct span_stats *y = *(const struct span_stats *const *)b;
	uint64_t kx, ky;

	if ((x->cat == CAT_QUEUE) != (y->cat == CAT_QUEUE))
		return x->cat == CAT_QUEUE ? 1 : -1;
	kx = sort_key == SORT_TOTAL ? x->total_ns :
	     sort_key == SORT_COUNT ? x->count : sketch__quantile(&x->sketch, 0.99);
	ky = sort_key == SORT_TOTAL ? y->total_ns :
	     sort_key == SORT_COUNT ? y->count : sketch__quantile(&y->sketch, 0.99);
	if (kx != ky)
		return kx < ky ? 1 : -1;
	return by_recent_self(a, b);
}

void summary__print_recent(FILE *f, struct summary *s, uint64_t interval_ns, uint64_t now,
			   int sort, size_t rows)
{
	const struct span_stats **order = xcalloc(s->nnames + 1, sizeof(*order));
	char b[3][32], safe[4 * SPAN_NAME_LEN + 256];
	size_t n = 0;

	for (size_t i = 0; i < s->nnames; i++)
		if (s->names[i]->count)
			order[n++] = s->names[i];
	sort_key = sort;
	qsort(order, n, sizeof(*order), sort == SORT_SELF ? by_recent_self : by_key);
	/* RATE and SELF% over the last interval (SELF% of one CPU); the rest since the start.
	 * Narrow enough to leave an 80-column window room for the names. */
	fprintf(f, "%8s %6s %8s %8s %8s %8s  %s\n", "RATE/s", "SELF%", "COUNT", "SELF", "P50",
		"P99", "SPAN");
	for (size_t i = 0; i < n && i < rows; i++) {
		const struct span_stats *st = order[i];
		double secs = interval_ns ? interval_ns / 1e9 : 1;

		fprintf(f, "%8.0f %5.1f%% %8llu %8s %8s %8s  %s\n", (st->count - st->shown_count) / secs,
			100.0 * st->recent_self_ns / (secs * 1e9),
			(unsigned long long)st->count, fmt_duration(st->self_ns, b[0], 32),
			fmt_duration(sketch__quantile(&st->sketch, 0.5), b[1], 32),
			fmt_duration(sketch__quantile(&st->sketch, 0.99), b[2], 32),
			printable(st->name, safe, sizeof(safe)));
	}
	if (!n)
		fprintf(f, "(no spans yet)\n");
	for (size_t i = 0; i < n && i < rows; i++)
		if (!strcmp(order[i]->name, SUMMARY_OTHER))
			print_folded(f, s);
	for (size_t i = 0; i < s->nnames; i++) {
		s->names[i]->shown_count = s->names[i]->count;
		s->names[i]->recent_self_ns = 0;
	}
	s->recent_from = now;
	free(order);
}

static int by_pid_tid(const void *a, const void *b)
{
	const struct thread *x = *(const struct thread *const *)a;
	const struct thread *y = *(const struct thread *const *)b;

	return x->pid != y->pid ? x->pid - y->pid : x->tid - y->tid;
}

#define MAX_PROCESS_ROWS 40

struct process_row {
	const char *comm; /* its main thread's name */
	int pid;
	size_t threads;
	unsigned long long spans;
};

static int by_spans(const void *a, const void *b)
{
	const struct process_row *x = a, *y = b;

	if (x->spans != y->spans)
		return x->spans < y->spans ? 1 : -1;
	return x->threads < y->threads ? 1 : x->threads > y->threads ? -1 : x->pid - y->pid;
}

static int by_pid(const void *a, const void *b)
{
	return ((const struct process_row *)a)->pid - ((const struct process_row *)b)->pid;
}

/* With several processes (--follow, -p A,B, workers): one line each, by pid and command (its
 * main thread's name); of thousands of short-lived ones, those with the most spans. order is
 * sorted by pid, then tid. */
static void print_processes(FILE *f, const struct thread **order, size_t n)
{
	struct process_row *rows;
	size_t nrows = 0, shown, rest = 0;

	if (!n || order[0]->pid == order[n - 1]->pid)
		return;
	rows = xcalloc(n, sizeof(*rows));
	for (size_t i = 0, end; i < n; i = end) {
		struct process_row *r = &rows[nrows++];

		r->comm = "?";
		r->pid = order[i]->pid;
		for (end = i; end < n && order[end]->pid == order[i]->pid; end++) {
			r->spans += order[end]->spans;
			if (order[end]->tid == order[end]->pid)
				r->comm = order[end]->name;
		}
		r->threads = end - i;
	}
	shown = nrows;
	if (nrows > MAX_PROCESS_ROWS) {
		qsort(rows, nrows, sizeof(*rows), by_spans);
		shown = MAX_PROCESS_ROWS;
		for (size_t i = shown; i < nrows; i++)
			rest += rows[i].threads;
		qsort(rows, shown, sizeof(*rows), by_pid);
	}
	fprintf(f, "\n%-16s %7s %8s %9s\n", "PROCESS", "PID", "THREADS", "SPANS");
	for (size_t i = 0; i < shown; i++) {
		char name[4 * THREAD_NAME_LEN + 8];

		fprintf(f, "%-16s %7d %8zu %9llu\n", printable(rows[i].comm, name, sizeof(name)),
			rows[i].pid, rows[i].threads, rows[i].spans);
	}
	if (shown < nrows)
		fprintf(f, "... and %zu more processes of %zu threads, with fewer spans\n",
			nrows - shown, rest);
	free(rows);
}

#define MAX_THREAD_ROWS 40

/* Running, runnable and blocked time, then spans: the threads worth a row. */
static int by_activity(const void *a, const void *b)
{
	const struct thread *x = *(const struct thread *const *)a;
	const struct thread *y = *(const struct thread *const *)b;
	uint64_t bx = x->state_ns[TS_RUNNING] + x->state_ns[TS_RUNNABLE] + x->state_ns[TS_BLOCKED];
	uint64_t by = y->state_ns[TS_RUNNING] + y->state_ns[TS_RUNNABLE] + y->state_ns[TS_BLOCKED];

	if (bx != by)
		return bx < by ? 1 : -1;
	return x->spans < y->spans ? 1 : x->spans > y->spans ? -1 : 0;
}

static void print_threads(FILE *f, const struct threads *ts)
{
	const struct thread **order = xcalloc(ts->cnt, sizeof(*order));
	size_t n = 0, shown;

	for (uint32_t i = 0; i < ts->cap; i++)
		if (ts->v[i].tid)
			order[n++] = &ts->v[i];
	shown = n;
	if (n > MAX_THREAD_ROWS) { /* thousands of short-lived threads: the busiest only */
		qsort(order, n, sizeof(*order), by_activity);
		shown = MAX_THREAD_ROWS;
	}
	qsort(order, shown, sizeof(*order), by_pid_tid);
	fprintf(f, "\n%-16s %7s %8s %8s %8s %8s %8s %9s\n", "THREAD", "TID", "RUNNING", "RUNNABLE",
		"SLEEPING", "BLOCKED", "IN-QUEUE", "SPANS");
	for (size_t i = 0; i < shown; i++) {
		const struct thread *t = order[i];
		char name[4 * THREAD_NAME_LEN + 8];
		uint64_t seen = 0;

		printable(t->name, name, sizeof(name));
		for (int k = TS_RUNNING; k < TS_MAX; k++)
			seen += t->state_ns[k];
		if (!seen) {
			fprintf(f, "%-16s %7d %8s %8s %8s %8s %8s %9llu\n", name, t->tid, "-", "-",
				"-", "-", "-", (unsigned long long)t->spans);
			continue;
		}
		fprintf(f, "%-16s %7d %7.1f%% %7.1f%% %7.1f%% %7.1f%% %7.1f%% %9llu\n", name,
			t->tid, 100.0 * t->state_ns[TS_RUNNING] / seen,
			100.0 * t->state_ns[TS_RUNNABLE] / seen,
			100.0 * t->state_ns[TS_SLEEPING] / seen,
			100.0 * t->state_ns[TS_BLOCKED] / seen, 100.0 * t->queue_ns / seen,
			(unsigned long long)t->spans);
	}
	if (shown < n)
		fprintf(f, "... and %zu more threads, less busy (tracer report FILE --by thread lists "
			   "every one)\n",
			n - shown);
	qsort(order, n, sizeof(*order), by_pid_tid);
	print_processes(f, order, n);
	free(order);
}

/* The pipeline's stages and the verdict, as `tracer report` prints them. The recorder knows the
 * time inside queue spans, not its state: queue spans are waits, so it is counted as waiting
 * (thread_time__from_states). now: the live view's present, counted in each thread's current
 * state (0 once the threads are finished). */
void summary__print_stages(FILE *f, const struct threads *ts, uint64_t now)
{
	struct thread_time *tt = xcalloc(ts->cnt + 1, sizeof(*tt));
	char (*names)[4 * THREAD_NAME_LEN + 8] = xcalloc(ts->cnt + 1, sizeof(*names));
	struct stage_stats *st;
	size_t n = 0, nst;
	char verdict[512];

	for (uint32_t i = 0; i < ts->cap; i++) {
		const struct thread *t = &ts->v[i];
		uint64_t ns[TS_MAX];

		if (!t->tid)
			continue;
		tt[n].name = printable(t->name, names[n], sizeof(names[n]));
		tt[n].pid = t->pid;
		tt[n].tid = t->tid;
		tt[n].role = t->role;
		tt[n].spans = t->spans;
		memcpy(ns, t->state_ns, sizeof(ns));
		if (now > t->since && t->state != TS_UNKNOWN && !t->exited)
			ns[t->state] += now - t->since;
		thread_time__from_states(&tt[n++], ns[TS_RUNNING], ns[TS_RUNNABLE],
					 ns[TS_SLEEPING], ns[TS_BLOCKED], t->queue_ns);
	}
	if (!stages__from_threads(tt, n, &st, &nst)) {
		fputc('\n', f);
		stages__print(f, st, nst);
		stages__verdict(verdict, sizeof(verdict), st, nst,
				(int)sysconf(_SC_NPROCESSORS_ONLN));
		fprintf(f, "\n%s\n", verdict);
		free(st);
	}
	free(tt);
	free(names);
}

void summary__print(FILE *f, const struct summary *s, const struct threads *threads,
		    uint64_t wall_ns, const uint64_t *c, const struct report *rep)
{
	uint64_t lost_sched = c[CNT_LOST_SWITCH] + c[CNT_LOST_WAKEUP] + c[CNT_LOST_TASK];
	uint64_t incomplete = c[CNT_STALE_FRAMES] + c[CNT_EXIT_FRAMES];
	char b[32];

	/* as tracer report counts the file's */
	uint64_t spans = c[CNT_SPANS] + s->py_spans + s->gil_spans;

	fprintf(f, "\nRecorded %s: %llu span%s", fmt_duration(wall_ns, b, sizeof(b)),
		(unsigned long long)spans, plural_s(spans));
	if (s->py_spans)
		fprintf(f, " (%llu of them Python's)", (unsigned long long)s->py_spans);
	fprintf(f, " from %u thread%s", threads->cnt, plural_s(threads->cnt));
	if (c[CNT_SHORT_SPANS])
		fprintf(f, " (%llu shorter than --min-dur not kept)",
			(unsigned long long)c[CNT_SHORT_SPANS]);
	fprintf(f, ".\n\n");
	print_spans(f, s);
	print_threads(f, threads);
	if (rep) {
		fputc('\n', f);
		stages__print(f, rep->stages, rep->nstages);
		fprintf(f, "\n%s\n", rep->verdict);
	} else {
		summary__print_stages(f, threads, 0);
	}
	if (c[CNT_LOST_SPAN] || lost_sched)
		fprintf(f, "\nLOST: %llu spans and %llu scheduler events (ring buffer full: "
			   "raise --buffer-size or --min-dur).\n",
			(unsigned long long)c[CNT_LOST_SPAN], (unsigned long long)lost_sched);
	if (c[CNT_SKIPPED_SCHED] || c[CNT_SKIPPED_PROBES])
		fprintf(f, "\nLOST: %llu scheduler events and %llu probe hits the kernel skipped "
			   "(one of tracer's programs was already running on that CPU).\n",
			(unsigned long long)c[CNT_SKIPPED_SCHED],
			(unsigned long long)c[CNT_SKIPPED_PROBES]);
	if (c[CNT_TARGETS_FULL])
		fprintf(f, "\nLOST: %llu processes not traced: more traced processes alive at once "
			   "than the kernel side holds (%d).\n",
			(unsigned long long)c[CNT_TARGETS_FULL], MAX_TARGETS);
	if (c[CNT_UNKNOWN_SITES])
		fprintf(f, "\nLOST: %llu probe hits whose function was not found by its address "
			   "(the tracefs events of kernels without uprobe_multi).\n",
			(unsigned long long)c[CNT_UNKNOWN_SITES]);
	if (c[CNT_SCHED_GAPS])
		fprintf(f, "\nMissing switches: %llu times a thread was switched out (or in) twice "
			   "in a row; its state between is unknown (marked on its track), not "
			   "guessed.\n",
			(unsigned long long)c[CNT_SCHED_GAPS]);
	if (c[CNT_UNREPORTED_SWITCHES])
		fprintf(f, "\nUnreported switches: %llu switches into traced threads fired no "
			   "sched_switch; each was placed at the arrival the scheduler logged "
			   "(sched_info.last_arrival).\n",
			(unsigned long long)c[CNT_UNREPORTED_SWITCHES]);
	if (c[CNT_EXCEPTION_SPANS])
		fprintf(f, "\nC++ exceptions: %llu spans ended by an exception thrown through them "
			   "(marked \"exception\", ending at its catch).\n",
			(unsigned long long)c[CNT_EXCEPTION_SPANS]);
	if (incomplete || c[CNT_DEEP_FRAMES] || c[CNT_UNMATCHED_RETS])
		fprintf(f, "\nIncomplete: %llu spans whose return was never seen (longjmp, deep "
			   "recursion, thread exit); %llu calls nested too deep to record; %llu "
			   "returns without an entry.\n",
			(unsigned long long)incomplete, (unsigned long long)c[CNT_DEEP_FRAMES],
			(unsigned long long)c[CNT_UNMATCHED_RETS]);
}

void summary__free(struct summary *s)
{
	struct folded_name *fn, *tmp;

	HASH_ITER(hh, s->folded, fn, tmp) {
		HASH_DEL(s->folded, fn);
		free(fn);
	}
	HASH_CLEAR(hh, s->by_name); /* the table only: the stats are freed below */
	for (size_t i = 0; i < s->nnames; i++) {
		sketch__free(&s->names[i]->sketch);
		free(s->names[i]->name);
		free(s->names[i]);
	}
	free(s->names);
	memset(s, 0, sizeof(*s));
}
