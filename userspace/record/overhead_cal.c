// SPDX-License-Identifier: MIT
/* What a probe hit costs the target, measured once at start-up on sites in tracer's own code
 * with empty BPF programs: hot (a tight loop) and with the caches swept before each call. */
#include "record/overhead.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

	qsort(v, n, sizeof(double), cmp_double);
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
	qsort(sweeps, 5, sizeof(double), cmp_double);
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
int overhead_cal__measure(struct overhead_cal *cal, bool multi)
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
	/* An empty program's run time, as the statistics measure it, is their own clock reads:
	 * the span programs' means are charged less it (overhead.c). The hits, timed with them on
	 * and less it, came within 1% of bench/floor's calls timed without (1135 against 1130 ns
	 * an entry and return, push site). */
	cal->stats_ns = prog_avg_ns(e->prog_fd[0]);
	for (int c = 0; c < INSN_CLASS_MAX; c++) {
		cal->entry_ns[c] = hit[c] - cal->stats_ns;
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
