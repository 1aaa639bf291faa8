// SPDX-License-Identifier: MIT
#include "record/overhead.h"
#include "record/attach.h"
#include "util/proc.h"
#include "util/util.h"

#include <bpf/bpf.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/* The sites calibration probes, one per class, written in assembly so that their first
 * instruction is known whatever the compiler does. Each returns its argument plus one. */
__asm__(".text\n"
	".p2align 4\n"
	".globl overhead_site_push\n"
	".hidden overhead_site_push\n"
	".type overhead_site_push,@function\n"
	"overhead_site_push:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	"	lea 1(%rdi),%eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size overhead_site_push,.-overhead_site_push\n"
	".p2align 4\n"
	".globl overhead_site_nop5\n"
	".hidden overhead_site_nop5\n"
	".type overhead_site_nop5,@function\n"
	"overhead_site_nop5:\n"
	"	.byte 0x0f,0x1f,0x44,0x00,0x00\n" /* nopl 0(%rax,%rax,1) */
	"	lea 1(%rdi),%eax\n"
	"	ret\n"
	".size overhead_site_nop5,.-overhead_site_nop5\n"
	".p2align 4\n"
	".globl overhead_site_step\n"
	".hidden overhead_site_step\n"
	".type overhead_site_step,@function\n"
	"overhead_site_step:\n"
	"	sub $8,%rsp\n"
	"	lea 1(%rdi),%eax\n"
	"	add $8,%rsp\n"
	"	ret\n"
	".size overhead_site_step,.-overhead_site_step\n"
	".p2align 4\n"
	".globl overhead_site_ret\n"
	".hidden overhead_site_ret\n"
	".type overhead_site_ret,@function\n"
	"overhead_site_ret:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	"	lea 1(%rdi),%eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size overhead_site_ret,.-overhead_site_ret\n"
	".p2align 4\n"
	".globl overhead_site_plain\n"
	".hidden overhead_site_plain\n"
	".type overhead_site_plain,@function\n"
	"overhead_site_plain:\n" /* never probed: the cold calibration's baseline */
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	"	lea 1(%rdi),%eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size overhead_site_plain,.-overhead_site_plain\n");

int overhead_site_push(int x);
int overhead_site_nop5(int x);
int overhead_site_step(int x);
int overhead_site_ret(int x);
int overhead_site_plain(int x);

typedef int (*site_fn)(int);

/* Calls per round, by class: enough to average over, few enough to stay near 20 ms in all. */
static const int site_calls[INSN_CLASS_MAX] = { 1000, 1000, 300 };
/* Calls of each site with the caches swept before each (about 10 us a call with a 1 MB L2) */
#define COLD_CALLS 300
#define COLD_MIN_CALLS 40
/* what the cold calibration may take: its sweeps are slow where memory is (an emulated VM
 * wrote 8 MB a call for 1,200 calls, minutes), and tracer's start waits for them */
#define COLD_BUDGET_NS (150 * 1000000.0)
#define COLD_OUTLIER_FACTOR 10.0
#define COLD_SWEEP_DEFAULT (1 << 20) /* when the L2's size is unknown */
#define COLD_SWEEP_MAX (8 << 20)


/* File offset of one of our own functions, from the mapping that holds it: needs no symbols,
 * so it works on a stripped tracer too. */
static int self_offset(const void *fn, uint64_t *offset)
{
	uintptr_t addr = (uintptr_t)fn;
	unsigned long long start, end, pgoff;
	char line[512];
	int ret = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %*s %llx", &start, &end, &pgoff) != 3)
			continue;
		if (addr >= start && addr < end) {
			*offset = addr - start + pgoff;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* A buffer written a line of every 64 bytes before a call: what a program's own work between
 * two hits does to the trap path's code and data. */
struct sweep {
	volatile uint8_t *buf;
	size_t size;
};

/* The thread's CPU time: the waits for a CPU are not in it. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static double per_call_ns(site_fn f, int n)
{
	uint64_t t = now_ns();
	int x = 0;

	for (int i = 0; i < n; i++)
		x = f(x);
	__asm__ volatile("" : : "r"(x));
	return (double)(now_ns() - t) / n;
}

/* The least of a few rounds: the machine is shared, and noise only ever adds time. */
static double best_ns(site_fn f, int n)
{
	double best = 1e18;

	for (int r = 0; r < 3; r++) {
		double v = per_call_ns(f, n);

		if (v < best)
			best = v;
	}
	return best;
}

static double prog_avg_ns(int prog_fd)
{
	uint64_t runs = 0, ns = 0;

	if (overhead__prog_stats(prog_fd, &runs, &ns) || !runs)
		return 0;
	return (double)ns / runs;
}

static void *close_probes(void *arg)
{
	empty_probes__close(arg);
	free(arg);
	return NULL;
}

/* Closing a link waits for the kernel's grace periods, tens to hundreds of milliseconds on a
 * busy machine: a thread of its own does it, so that neither starting nor the event loop (which
 * must keep draining the ring buffer) waits. It touches nothing else. */
static void close_probes_later(struct empty_probes *e)
{
	struct empty_probes *copy = xcalloc(1, sizeof(*copy));
	pthread_attr_t attr;
	pthread_t th;

	*copy = *e;
	e->fds = NULL;
	e->nfds = 0;
	e->prog_fd[0] = e->prog_fd[1] = -1;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, close_probes, copy))
		close_probes(copy);
	pthread_attr_destroy(&attr);
}

static double prog_runs_ns(int prog_fd, uint64_t *runs)
{
	uint64_t ns = 0;

	*runs = 0;
	if (overhead__prog_stats(prog_fd, runs, &ns))
		*runs = 0;
	return ns;
}

/* The mean run time of program fd since (*runs, *ns) were read. */
static double prog_avg_since(int fd, uint64_t runs, double ns)
{
	uint64_t r;
	double n = prog_runs_ns(fd, &r);

	return r > runs ? (n - ns) / (r - runs) : 0;
}

static int by_value(const void *a, const void *b);

static void sweep_once(const struct sweep *sw)
{
	for (size_t j = 0; j < sw->size; j += 64)
		sw->buf[j]++;
}

/* Mean of the times above, leaving out those a preemption or an interrupt made many times the
 * median (they are no part of a hit's cost). */
static double robust_mean(double *v, int n)
{
	double median, sum = 0;
	int k = 0;

	qsort(v, n, sizeof(double), by_value);
	median = v[n / 2];
	for (int i = 0; i < n; i++)
		if (v[i] <= COLD_OUTLIER_FACTOR * median) {
			sum += v[i];
			k++;
		}
	return sum / k;
}

/* What a call of f costs more than one of the unprobed site when the buffer was swept just
 * before it, each call timed alone (the sweep is not: its time varies more than a hit costs),
 * the two in turn; less the mean run time of program fd. */
static double cold_extra_ns(site_fn f, int fd, const struct sweep *sw, int calls)
{
	static site_fn const volatile plain = overhead_site_plain;
	double *t[2], ns0, ret;
	uint64_t runs0;
	int x = 0;

	t[0] = xcalloc(calls, sizeof(double));
	t[1] = xcalloc(calls, sizeof(double));
	ns0 = prog_runs_ns(fd, &runs0);
	for (int i = 0; i < calls; i++)
		for (int k = 0; k < 2; k++) {
			uint64_t t0;

			sweep_once(sw);
			t0 = now_ns();
			x = (k ? f : plain)(x);
			t[k][i] = now_ns() - t0;
		}
	__asm__ volatile("" : : "r"(x));
	ret = robust_mean(t[1], calls) - robust_mean(t[0], calls) -
	      prog_avg_since(fd, runs0, ns0);
	free(t[0]);
	free(t[1]);
	return ret;
}

/* The push site and the return site again, with a buffer the L2's size swept before each call
 * (the empty programs attached, their run time taken off): what a hit costs when the trap
 * path's code and data are out of the caches, as in a program that works between hits
 * (gst-launch encoding audio: 1.5 us an entry and return, empty programs on its probed
 * functions, against 0.8 us calibrated on a hot loop). */
static void calibrate_cold(struct overhead_cal *cal, const struct empty_probes *e)
{
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	struct sweep sw = { .size = l2 > 0 ? (size_t)l2 : COLD_SWEEP_DEFAULT };
	double entry, both, sweeps[5];
	int calls;

	if (sw.size > COLD_SWEEP_MAX)
		sw.size = COLD_SWEEP_MAX;
	sw.buf = calloc(1, sw.size);
	if (!sw.buf)
		return;
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = thread_cpu_ns();

		sweep_once(&sw);
		sweeps[i] = thread_cpu_ns() - t0;
	}
	qsort(sweeps, 5, sizeof(double), by_value);
	/* four sweeps a call (two sites, each probed and not): as many calls as the budget
	 * holds; too few to measure, and the cold costs stay unknown (charged as hot) */
	calls = sweeps[2] > 0 ? (int)(COLD_BUDGET_NS / (4 * sweeps[2])) : COLD_CALLS;
	if (calls > COLD_CALLS)
		calls = COLD_CALLS;
	if (calls < COLD_MIN_CALLS) {
		pr_debug("cold trap calibration skipped: a %zu KB sweep takes %.1f ms here",
			 sw.size >> 10, sweeps[2] / 1e6);
		free((void *)sw.buf);
		return;
	}
	entry = cold_extra_ns(overhead_site_push, e->prog_fd[0], &sw, calls);
	both = cold_extra_ns(overhead_site_ret, e->prog_fd[1], &sw, calls);
	free((void *)sw.buf);
	cal->sweep_ns = sweeps[2];
	cal->sweep_bytes = sw.size;
	/* what the trap path's refill adds to an entry (any class: its first instruction changes
	 * the trap's work, not the lines it misses) and to a return (whose site's entry trap runs
	 * no program) */
	cal->cold_entry_ns = entry - cal->entry_ns[INSN_EMULATED];
	cal->cold_return_ns = both - entry - cal->return_ns;
	if (cal->cold_entry_ns < 0)
		cal->cold_entry_ns = 0;
	if (cal->cold_return_ns < 0)
		cal->cold_return_ns = 0;
}

/* Entry probes on a site of each class, a return probe on a fourth (push-first) site: the
 * difference between that site and the push site is what a return probe adds. Then the same,
 * cold (calibrate_cold). */
static int calibrate(struct overhead_cal *cal, bool multi)
{
	struct empty_probes probes, *e = &probes;
	static site_fn const volatile sites[INSN_CLASS_MAX] = {
		[INSN_EMULATED] = overhead_site_push,
		[INSN_OPTIMIZED] = overhead_site_nop5,
		[INSN_STEPPED] = overhead_site_step,
	};
	static site_fn const volatile ret_site = overhead_site_ret;
	double base[INSN_CLASS_MAX], hit[INSN_CLASS_MAX], ret_base, both;
	uint64_t offsets[INSN_CLASS_MAX], ret_offset, t0 = now_ns();
	int err;

	for (int c = 0; c < INSN_CLASS_MAX; c++) {
		err = self_offset((const void *)sites[c], &offsets[c]);
		if (err)
			return err;
		base[c] = best_ns(sites[c], site_calls[c]);
	}
	err = self_offset((const void *)ret_site, &ret_offset);
	if (err)
		return err;
	ret_base = best_ns(ret_site, site_calls[INSN_EMULATED]);
	err = empty_probes__open(e, multi);
	if (!err)
		err = empty_probes__attach(e, "/proc/self/exe", offsets, INSN_CLASS_MAX, getpid(),
					   false);
	if (!err)
		err = empty_probes__attach(e, "/proc/self/exe", &ret_offset, 1, getpid(), true);
	if (err) {
		empty_probes__close(e);
		return err;
	}
	for (int c = 0; c < INSN_CLASS_MAX; c++) {
		sites[c](0); /* the first hit is where the kernel optimizes a nop5 site */
		hit[c] = best_ns(sites[c], site_calls[c]) - base[c];
	}
	both = best_ns(ret_site, site_calls[INSN_EMULATED]) - ret_base;
	for (int c = 0; c < INSN_CLASS_MAX; c++) {
		cal->entry_ns[c] = hit[c] - prog_avg_ns(e->prog_fd[0]);
		if (cal->entry_ns[c] < 0)
			cal->entry_ns[c] = 0;
	}
	/* the return site's entry trap runs no program; its return runs the return program */
	cal->return_ns = both - prog_avg_ns(e->prog_fd[1]) - cal->entry_ns[INSN_EMULATED];
	if (cal->return_ns < 0)
		cal->return_ns = 0;
	calibrate_cold(cal, e);
	cal->ok = true;
	close_probes_later(e);
	cal->took_ns = now_ns() - t0;
	return 0;
}

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
	o->span_fd[0] = o->span_fd[1] = -1;
	o->start = now_ns();
	o->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (o->stats_fd < 0) {
		err = -errno;
		o->stats_fd = -1;
		return err;
	}
	o->stats_since = o->start;
	err = under_valgrind() ? -ENOTSUP : calibrate(&o->cal, multi);
	if (err)
		pr_debug("trap cost calibration failed: %s", strerror(-err));
	else
		pr_debug("trap cost per hit: emulated %.0f ns, optimized %.0f ns, single-stepped "
			 "%.0f ns, return %.0f ns; out of the caches +%.0f ns an entry, +%.0f ns a "
			 "return (a %zu KB sweep: %.1f us) (calibrated in %.1f ms)",
			 o->cal.entry_ns[INSN_EMULATED], o->cal.entry_ns[INSN_OPTIMIZED],
			 o->cal.entry_ns[INSN_STEPPED], o->cal.return_ns, o->cal.cold_entry_ns,
			 o->cal.cold_return_ns, o->cal.sweep_bytes >> 10, o->cal.sweep_ns / 1e3,
			 o->cal.took_ns / 1e6);
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

	for (int i = 0; i < 2; i++) {
		uint64_t runs = 0, ns = 0;

		if (o->span_fd[i] < 0 || overhead__prog_stats(o->span_fd[i], &runs, &ns))
			continue;
		if (!open && runs >= o->win_start[i][0] && ns >= o->win_start[i][1]) {
			w.runs[i] = runs - o->win_start[i][0];
			w.ns[i] = ns - o->win_start[i][1];
		}
		o->win_start[i][0] = runs;
		o->win_start[i][1] = ns;
	}
	if (open || (!w.runs[0] && !w.runs[1]))
		return;
	o->win = xrealloc(o->win, o->nwin + 1, sizeof(*o->win));
	o->win[o->nwin++] = w;
}

void overhead__watch(struct overhead *o, int entry_fd, int return_fd)
{
	if (!o->started)
		return;
	o->span_fd[0] = entry_fd;
	o->span_fd[1] = return_fd;
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
	for (int i = 0; i < 2; i++) {
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

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
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
	qsort(means, n, sizeof(double), by_value);
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

/* Mean run time of a program over the statistics windows; 0 if it never ran in one. */
static double sampled_mean(int fd, uint64_t *runs, uint64_t *ns)
{
	*runs = *ns = 0;
	if (overhead__prog_stats(fd, runs, ns) || !*runs)
		return 0;
	return (double)*ns / *runs;
}

void overhead__finish(struct overhead *o, int entry_fd, int return_fd, const int *other_fds,
		      size_t nother, const uint64_t calls[INSN_CLASS_MAX], uint64_t returns)
{
	uint64_t runs, ns, entries = 0, now = now_ns();
	double entry_mean, return_mean;

	if (!o->started || o->done)
		return;
	sample(o);
	if (o->stats_fd >= 0)
		stats_off(o, now);

	for (int c = 0; c < INSN_CLASS_MAX; c++) {
		o->entry_hits[c] = calls[c];
		entries += calls[c];
	}
	o->return_hits = returns;
	entry_mean = windows_mean(o, 0, &runs);
	if (entry_mean < 0 || o->span_fd[0] != entry_fd)
		entry_mean = sampled_mean(entry_fd, &runs, &ns);
	o->sampled_runs = runs;
	return_mean = windows_mean(o, 1, &runs);
	if (return_mean < 0 || o->span_fd[1] != return_fd)
		return_mean = sampled_mean(return_fd, &runs, &ns);
	o->sampled_runs += runs;
	o->span_bpf_runs = entries + returns;
	o->span_bpf_ns = entry_mean * entries + return_mean * returns;
	/* scheduler programs run on every task: their runs scale with time, not with calls */
	for (size_t i = 0; i < nother && o->stats_on_ns; i++)
		if (!overhead__prog_stats(other_fds[i], &runs, &ns)) {
			double scale = (double)(now - o->start) / o->stats_on_ns;

			o->other_bpf_ns += ns * scale;
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
