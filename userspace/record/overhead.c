// SPDX-License-Identifier: MIT
#include "record/overhead.h"
#include "util/proc.h"
#include "util/util.h"

#include <bpf/bpf.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_EVERY_NS 20000000ULL /* a target that exits keeps what was read last */
/* The BPF statistics cost each program run two clock reads (about 15% of an empty uprobe's
 * cost here): they are on for a window of every period (a few % of the runs, a few ns a call on
 * average; the event loop's tick, 10 ms, ends a window), and the mean run time they measure is
 * multiplied by the runs counted otherwise. Many short windows rather than a few long ones: the
 * windows a preemption inflated are left out (windows_mean). */
#define STATS_WINDOW_NS 5000000ULL
#define STATS_PERIOD_NS 500000000ULL
/* The first window stays open until it has seen the span programs run (at most this long): a
 * recording whose calls last a fraction of a second must still have its cost measured. Not
 * windows every 50 ms until then: each turn of the statistics on or off patches every
 * bpf_prog_run site in the kernel (a static key: int3s and IPIs to every CPU), and 6.1 in the
 * emulated VM wedged, both CPUs looping through exc_int3 at bpf_trace_run1. */
#define STATS_FIRST_MAX_NS 2000000000ULL
/* A window whose mean run time is this many times the median window's was preempted. */
#define PREEMPTED_FACTOR 3.0

/* Calibration probes tracer's own code. Under valgrind that code only runs translated, so the
 * traps never fire, and the breakpoints written into the text it translates have crashed
 * valgrind itself (3.19, kernel 6.18). Its preload library is the sign. */
static bool under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

static int read_cpu_ns(int pid, uint64_t *ns)
{
	struct proc_stat ps;
	int err = proc_stat__read(pid, 0, &ps);

	if (!err)
		*ns = proc_stat__cpu_ns(&ps);
	return err;
}

int overhead__start(struct overhead *o, const int *pids, size_t npids, bool multi)
{
	int err;

	memset(o, 0, sizeof(*o));
	o->started = true;
	o->multi = multi;
	for (int i = 0; i < SPAN_PROGS; i++)
		o->span_fd[i] = -1;
	o->start = now_ns();
	o->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (o->stats_fd < 0) {
		err = -errno;
		o->stats_fd = -1;
		return err;
	}
	o->stats_since = o->start;
	err = under_valgrind() ? -ENOTSUP : overhead_cal__measure(&o->cal, multi);
	if (err)
		pr_debug("trap cost calibration failed: %s", strerror(-err));
	else
		pr_debug("trap cost per hit: emulated %.0f ns, optimized %.0f ns, single-stepped "
			 "%.0f ns, return %.0f ns; out of the caches +%.0f ns an entry, +%.0f ns a "
			 "return (a %zu KB sweep: %.1f us); the statistics add %.0f ns a run "
			 "(calibrated in %.1f ms)",
			 o->cal.entry_ns[INSN_EMULATED], o->cal.entry_ns[INSN_OPTIMIZED],
			 o->cal.entry_ns[INSN_STEPPED], o->cal.return_ns, o->cal.cold_entry_ns,
			 o->cal.cold_return_ns, o->cal.sweep_bytes >> 10, o->cal.sweep_ns / 1e3,
			 o->cal.stats_ns, o->cal.took_ns / 1e6);
	o->npids = o->nprimary = npids;
	o->pids = xcalloc(npids, sizeof(int));
	o->cpu_start = xcalloc(npids, sizeof(uint64_t));
	o->cpu_last = xcalloc(npids, sizeof(uint64_t));
	for (size_t i = 0; i < npids; i++) {
		o->pids[i] = pids[i];
		read_cpu_ns(pids[i], &o->cpu_start[i]);
		o->cpu_last[i] = o->cpu_start[i];
	}
	o->last_sample = now_ns();
	o->stats_since = o->last_sample; /* the first window starts after calibrating */
	return 0;
}

/* Reads the span programs' cumulative runs and run time: at a window's start (open) or its end
 * (the window's share is appended). */
static void window_edge(struct overhead *o, bool open)
{
	struct overhead_window w = { 0 };
	bool ran = false;

	for (int i = 0; i < SPAN_PROGS; i++) {
		uint64_t runs = 0, ns = 0;

		if (o->span_fd[i] < 0 || overhead__prog_stats(o->span_fd[i], &runs, &ns))
			continue;
		if (!open && runs >= o->win_start[i][0] && ns >= o->win_start[i][1]) {
			w.runs[i] = runs - o->win_start[i][0];
			w.ns[i] = ns - o->win_start[i][1];
			ran |= w.runs[i] > 0;
		}
		o->win_start[i][0] = runs;
		o->win_start[i][1] = ns;
	}
	if (open || !ran)
		return;
	o->win = xrealloc(o->win, o->nwin + 1, sizeof(*o->win));
	o->win[o->nwin++] = w;
}

void overhead__watch(struct overhead *o, const int fds[SPAN_PROGS])
{
	if (!o->started)
		return;
	for (int i = 0; i < SPAN_PROGS; i++)
		o->span_fd[i] = fds[i];
	if (o->stats_fd >= 0)
		window_edge(o, true);
}

void overhead__add_pid(struct overhead *o, int pid, bool born)
{
	if (!o->started || o->done)
		return;
	for (size_t i = 0; i < o->npids; i++)
		if (o->pids[i] == pid)
			return;
	o->pids = xrealloc(o->pids, o->npids + 1, sizeof(int));
	o->cpu_start = xrealloc(o->cpu_start, o->npids + 1, sizeof(uint64_t));
	o->cpu_last = xrealloc(o->cpu_last, o->npids + 1, sizeof(uint64_t));
	o->pids[o->npids] = pid;
	o->cpu_start[o->npids] = 0;
	if (!born)
		read_cpu_ns(pid, &o->cpu_start[o->npids]);
	o->cpu_last[o->npids] = o->cpu_start[o->npids];
	read_cpu_ns(pid, &o->cpu_last[o->npids]);
	o->npids++;
}

static void sample(struct overhead *o)
{
	for (size_t i = 0; i < o->npids; i++) {
		uint64_t ns;

		if (!o->pids[i])
			continue;
		if (read_cpu_ns(o->pids[i], &ns)) {
			if (i >= o->nprimary) /* a child gone: it keeps what was read last */
				o->pids[i] = 0;
		} else if (ns >= o->cpu_last[i]) {
			o->cpu_last[i] = ns;
		}
	}
	o->last_sample = now_ns();
}

/* Whether a span program ran since the open window began. */
static bool window_saw_runs(const struct overhead *o)
{
	for (int i = 0; i < SPAN_PROGS; i++) {
		uint64_t runs, ns;

		if (o->span_fd[i] >= 0 && !overhead__prog_stats(o->span_fd[i], &runs, &ns) &&
		    runs > o->win_start[i][0])
			return true;
	}
	return false;
}

static void stats_off(struct overhead *o, uint64_t now)
{
	window_edge(o, false);
	close(o->stats_fd);
	o->stats_fd = -1;
	o->stats_on_ns += now - o->stats_since;
}

void overhead__sample(struct overhead *o)
{
	uint64_t now = now_ns();

	if (!o->started || o->done)
		return;
	if (now - o->last_sample >= SAMPLE_EVERY_NS)
		sample(o);
	if (o->stats_fd >= 0 && now - o->stats_since >= STATS_WINDOW_NS &&
	    (o->nwin || window_saw_runs(o) || now - o->stats_since >= STATS_FIRST_MAX_NS)) {
		stats_off(o, now);
	} else if (o->stats_fd < 0 && now - o->stats_since >= STATS_PERIOD_NS) {
		o->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		o->stats_since = now;
		if (o->stats_fd >= 0)
			window_edge(o, true);
	}
}

/* Mean run time of span program i over the windows, leaving out the windows a preemption
 * inflated (their mean PREEMPTED_FACTOR times the median window's). *runs: the runs counted.
 * Returns -1 when no window saw it run (the caller falls back to the cumulative figures). */
static double windows_mean(struct overhead *o, int i, uint64_t *runs)
{
	double *means = xcalloc(o->nwin + 1, sizeof(double)), median, ns = 0;
	size_t n = 0;

	*runs = 0;
	for (size_t k = 0; k < o->nwin; k++)
		if (o->win[k].runs[i])
			means[n++] = (double)o->win[k].ns[i] / o->win[k].runs[i];
	if (!n) {
		free(means);
		return -1;
	}
	qsort(means, n, sizeof(double), cmp_double);
	median = n % 2 ? means[n / 2] : (means[n / 2 - 1] + means[n / 2]) / 2;
	free(means);
	for (size_t k = 0; k < o->nwin; k++) {
		const struct overhead_window *w = &o->win[k];

		if (!w->runs[i])
			continue;
		if (n >= 3 && (double)w->ns[i] / w->runs[i] > PREEMPTED_FACTOR * median) {
			o->windows_dropped++;
			continue;
		}
		*runs += w->runs[i];
		ns += w->ns[i];
	}
	return *runs ? ns / *runs : median;
}

/* Mean run time of a program over all the statistics windows (its cumulative figures); -1 if
 * it never ran in one. */
static double sampled_mean(int fd, uint64_t *runs)
{
	uint64_t ns = 0;

	*runs = 0;
	if (fd < 0 || overhead__prog_stats(fd, runs, &ns) || !*runs)
		return -1;
	return (double)ns / *runs;
}

/* Mean run time of span program i (enum span_prog), fd, less what the statistics add to
 * their measure; the runs sampled are added to *sampled. -1: it never ran while they were on. */
static double prog_mean(struct overhead *o, int i, int fd, uint64_t *sampled)
{
	uint64_t runs = 0;
	double mean = o->span_fd[i] == fd ? windows_mean(o, i, &runs) : -1;

	if (mean < 0) /* not watched, or no window saw it run */
		mean = sampled_mean(fd, &runs);
	if (mean < 0)
		return -1;
	*sampled += runs;
	return overhead__own_ns(o, mean, 1);
}

double overhead__own_ns(const struct overhead *o, double ns, double runs)
{
	ns -= runs * o->cal.stats_ns;
	return ns > 0 ? ns : 0;
}

void overhead__finish(struct overhead *o, const int fds[SPAN_PROGS], const int *other_fds,
		      size_t nother, const uint64_t calls[INSN_CLASS_MAX], uint64_t exits,
		      uint64_t returns)
{
	uint64_t runs, ns, entries = 0, now = now_ns();
	double mean[SPAN_PROGS];

	if (!o->started || o->done)
		return;
	sample(o);
	if (o->stats_fd >= 0)
		stats_off(o, now);

	for (int c = 0; c < INSN_CLASS_MAX; c++) {
		o->entry_hits[c] = calls[c];
		entries += calls[c];
	}
	o->exit_hits = exits < entries ? exits : entries;
	o->return_hits = returns;
	o->sampled_runs = 0;
	for (int i = 0; i < SPAN_PROGS; i++)
		mean[i] = prog_mean(o, i, fds[i], &o->sampled_runs);
	/* an exit program never measured: its work is a return's (end_call) */
	if (mean[SPAN_PROG_EXIT] < 0)
		mean[SPAN_PROG_EXIT] = mean[SPAN_PROG_RETURN];
	for (int i = 0; i < SPAN_PROGS; i++)
		mean[i] = mean[i] < 0 ? 0 : mean[i];
	o->span_bpf_runs = entries + returns;
	o->span_bpf_ns = mean[SPAN_PROG_ENTRY] * (entries - o->exit_hits) +
			 mean[SPAN_PROG_EXIT] * o->exit_hits + mean[SPAN_PROG_RETURN] * returns;
	/* scheduler programs run on every task: their runs scale with time, not with calls */
	for (size_t i = 0; i < nother && o->stats_on_ns; i++)
		if (!overhead__prog_stats(other_fds[i], &runs, &ns)) {
			double scale = (double)(now - o->start) / o->stats_on_ns;

			o->other_bpf_ns += overhead__own_ns(o, ns, runs) * scale;
			o->other_bpf_runs += runs * scale;
		}
	o->target_cpu_ns = 0;
	for (size_t i = 0; i < o->npids; i++)
		o->target_cpu_ns += o->cpu_last[i] - o->cpu_start[i];
	overhead__charge_traps(o);
	o->done = true;
}

void overhead__charge_traps(struct overhead *o)
{
	uint64_t calls = 0;

	for (int c = 0; c < INSN_CLASS_MAX; c++)
		calls += o->entry_hits[c];
	/* the targets ran as long as the sweep a call, or longer: their own work between two
	 * calls has evicted the trap path as the sweep did (calibrated on that pattern) */
	o->cold = o->cal.sweep_ns > 0 && calls &&
		  (double)o->target_cpu_ns / calls >= o->cal.sweep_ns;
	o->trap_entry_ns = 0;
	for (int c = 0; c < INSN_CLASS_MAX; c++)
		o->trap_entry_ns += o->entry_hits[c] * overhead__entry_ns(o, c);
	o->trap_return_ns = o->return_hits * overhead__return_ns(o);
}

double overhead__entry_ns(const struct overhead *o, enum insn_class c)
{
	return o->cal.entry_ns[c] + (o->cold ? o->cal.cold_entry_ns : 0);
}

double overhead__return_ns(const struct overhead *o)
{
	return o->cal.return_ns + (o->cold ? o->cal.cold_return_ns : 0);
}

double overhead__total_ns(const struct overhead *o)
{
	return o->span_bpf_ns + o->python_ns +
	       (o->cal.ok ? o->trap_entry_ns + o->trap_return_ns : 0);
}

double overhead__share(const struct overhead *o)
{
	return o->target_cpu_ns ? overhead__total_ns(o) / o->target_cpu_ns : 0;
}

void overhead__print(FILE *f, const struct overhead *o)
{
	char b[6][32];
	uint64_t entries = 0;

	if (!o->done)
		return;
	for (int c = 0; c < INSN_CLASS_MAX; c++)
		entries += o->entry_hits[c];
	fprintf(f, "overhead: %s charged to the target",
		fmt_duration(overhead__total_ns(o), b[0], 32));
	if (o->target_cpu_ns && o->npids > o->nprimary)
		fprintf(f, " (%.2f%% of the %s CPU time of the %zu processes traced)",
			100 * overhead__share(o), fmt_duration(o->target_cpu_ns, b[1], 32),
			o->npids);
	else if (o->target_cpu_ns)
		fprintf(f, " (%.2f%% of its %s CPU time)", 100 * overhead__share(o),
			fmt_duration(o->target_cpu_ns, b[1], 32));
	fprintf(f, ": BPF ~%s", fmt_duration(o->span_bpf_ns, b[2], 32));
	if (o->python_ns)
		fprintf(f, ", Python stack reads %s", fmt_duration(o->python_ns, b[5], 32));
	if (o->cal.ok)
		fprintf(f, ", probe traps ~%s (%llu entries, %llu returns)",
			fmt_duration(o->trap_entry_ns + o->trap_return_ns, b[3], 32),
			(unsigned long long)entries, (unsigned long long)o->return_hits);
	else
		fprintf(f, ", probe traps unknown (calibration failed)");
	if (o->entry_hits[INSN_STEPPED])
		fprintf(f, "; %llu hits on single-stepped sites cost ~%s",
			(unsigned long long)o->entry_hits[INSN_STEPPED],
			fmt_duration(o->entry_hits[INSN_STEPPED] * overhead__entry_ns(o, INSN_STEPPED),
				     b[4], 32));
	if (o->other_bpf_runs)
		fprintf(f, "; scheduler programs %s system-wide",
			fmt_duration(o->other_bpf_ns, b[5], 32));
	fputc('\n', f);
}

void overhead__add_json(const struct overhead *o, struct cJSON *meta)
{
	cJSON *j, *h, *c;

	if (!o->done)
		return;
	j = cJSON_AddObjectToObject(meta, "overhead");
	cJSON_AddNumberToObject(j, "total_ns", (uint64_t)overhead__total_ns(o));
	cJSON_AddNumberToObject(j, "target_cpu_ns", o->target_cpu_ns);
	cJSON_AddNumberToObject(j, "share_of_target_cpu", overhead__share(o));
	cJSON_AddNumberToObject(j, "bpf_ns", o->span_bpf_ns);
	cJSON_AddNumberToObject(j, "python_read_ns", o->python_ns);
	cJSON_AddNumberToObject(j, "bpf_runs", o->span_bpf_runs);
	cJSON_AddNumberToObject(j, "bpf_stats_on_ns", o->stats_on_ns);
	cJSON_AddNumberToObject(j, "bpf_stats_sampled_runs", o->sampled_runs);
	cJSON_AddNumberToObject(j, "bpf_stats_windows", o->nwin);
	cJSON_AddNumberToObject(j, "bpf_stats_windows_preempted", o->windows_dropped);
	cJSON_AddNumberToObject(j, "sched_bpf_ns", (uint64_t)o->other_bpf_ns);
	cJSON_AddNumberToObject(j, "sched_bpf_runs", (uint64_t)o->other_bpf_runs);
	if (o->cal.ok) {
		cJSON_AddNumberToObject(j, "trap_entry_ns", (uint64_t)o->trap_entry_ns);
		cJSON_AddNumberToObject(j, "trap_return_ns", (uint64_t)o->trap_return_ns);
	}
	h = cJSON_AddObjectToObject(j, "entry_hits");
	for (int k = 0; k < INSN_CLASS_MAX; k++)
		cJSON_AddNumberToObject(h, insn_class__name(k), o->entry_hits[k]);
	cJSON_AddNumberToObject(j, "return_hits", o->return_hits);
	cJSON_AddNumberToObject(j, "exit_hits", o->exit_hits);
	c = cJSON_AddObjectToObject(j, "calibration");
	cJSON_AddBoolToObject(c, "ok", o->cal.ok);
	cJSON_AddStringToObject(c, "attach", o->multi ? "uprobe_multi" : "uprobe");
	for (int k = 0; k < INSN_CLASS_MAX && o->cal.ok; k++) {
		char key[48];

		snprintf(key, sizeof(key), "entry_%s_ns", insn_class__name(k));
		cJSON_AddNumberToObject(c, key, (uint64_t)(o->cal.entry_ns[k] + 0.5));
	}
	if (o->cal.ok) {
		cJSON_AddNumberToObject(c, "return_ns", (uint64_t)(o->cal.return_ns + 0.5));
		cJSON_AddNumberToObject(c, "cold_entry_ns", (uint64_t)(o->cal.cold_entry_ns + 0.5));
		cJSON_AddNumberToObject(c, "cold_return_ns", (uint64_t)(o->cal.cold_return_ns + 0.5));
		cJSON_AddNumberToObject(c, "sweep_ns", (uint64_t)(o->cal.sweep_ns + 0.5));
		cJSON_AddNumberToObject(c, "sweep_bytes", o->cal.sweep_bytes);
		cJSON_AddNumberToObject(c, "stats_ns", (uint64_t)(o->cal.stats_ns + 0.5));
	}
	cJSON_AddBoolToObject(j, "traps_cold", o->cold);
	cJSON_AddNumberToObject(c, "took_ns", o->cal.took_ns);
}

void overhead__free(struct overhead *o)
{
	if (!o->started)
		return;
	if (o->stats_fd >= 0)
		close(o->stats_fd);
	o->stats_fd = -1;
	free(o->pids);
	free(o->cpu_start);
	free(o->cpu_last);
	free(o->win);
	o->win = NULL;
	o->nwin = 0;
	o->pids = NULL;
	o->cpu_start = o->cpu_last = NULL;
}
