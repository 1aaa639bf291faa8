/* SPDX-License-Identifier: MIT */
/* What tracing cost the target, stated in the summary and the trace's metadata: the time spent
 * in tracer's BPF programs plus the time the kernel spends trapping each probe hit, which no
 * statistic counts. The programs' mean run time comes from the kernel's BPF run-time statistics,
 * turned on only while recording and then only a window of every half second (they cost every
 * run of every program two clock reads), the windows a preemption inflated left out, less what
 * the statistics add to each run's measure; it is multiplied by the hits of each program. The
 * trap cost depends on the probed function's first instruction (insn.h); it is calibrated once
 * at start-up on tracer's own functions with empty BPF programs, hot (a tight loop) and with
 * the trap path out of the caches (a sweep of the L2 before each call: what a program's own
 * work between hits does), and multiplied by the hits. Plus the scheduler programs' runs on
 * the targets' own CPU time, which BPF measures (bpf/sched.bpf.c, charge_target). */
#ifndef TRACER_OVERHEAD_H
#define TRACER_OVERHEAD_H

#include "elf/insn.h"
#include "probe/resolve.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cJSON;

/* Trap cost per hit, in ns, without the BPF program's own run time. */
struct overhead_cal {
	double entry_ns[INSN_CLASS_MAX]; /* an entry probe, by the site's first instruction */
	double return_ns;		 /* a return probe, in addition to its entry */
	/* What a hit adds when the trap path is out of the caches: measured with a buffer the L2's
	 * size (sweep_bytes) written before each call, which takes sweep_ns. Targets that run at
	 * least that long a call (their CPU time over the entry hits) pay these too (0: not
	 * measured). */
	double cold_entry_ns, cold_return_ns, sweep_ns;
	size_t sweep_bytes;
	/* What the run-time statistics add to a program's run time as they measure it (their
	 * clock reads): taken off the span programs' means, measured with them on */
	double stats_ns;
	uint64_t took_ns;		 /* how long calibrating took */
	bool ok;
};

/* Empty BPF programs on uprobes: the floor any probe costs. Calibration uses them; so do the
 * benchmarks (bench/floor.c), so that both measure the attach mechanism tracer uses. */
struct empty_probes {
	int prog_fd[2]; /* entry, return */
	int *fds;	/* links, and the perf events of the per-probe fallback */
	size_t nfds;
	bool multi;
};

/* tracer's programs that run at the probe hits: at entries (span_enter), at returns
 * (span_exit), and at the exits of functions probed there (span_exit_at, where C++ exceptions
 * pass: it reads no Python stack, and costs a fraction of an entry) */
enum span_prog { SPAN_PROG_ENTRY, SPAN_PROG_RETURN, SPAN_PROG_EXIT, SPAN_PROGS };

struct overhead {
	bool started;
	int stats_fd; /* BPF_STATS_RUN_TIME is on while this is open: a window */
	uint64_t start, stats_since; /* when the current window started, or the last ended */
	uint64_t stats_on_ns;	     /* windows so far */
	/* The span programs (enum span_prog; -1: unknown) and their runs and run time in each
	 * window: a run the scheduler preempts (uprobe programs run preemptible) counts the time
	 * the thread waited, milliseconds on a busy machine, and one such run among the few
	 * hundred of a window made the mean many times too high: such windows are left out. */
	int span_fd[SPAN_PROGS];
	uint64_t win_start[SPAN_PROGS][2]; /* [program][runs, ns] when the window opened */
	struct overhead_window {
		uint64_t runs[SPAN_PROGS], ns[SPAN_PROGS];
	} *win;
	size_t nwin;
	uint64_t windows_dropped; /* windows left out of the mean as preempted */
	bool multi;   /* calibrated with uprobe_multi links (else perf-event uprobes) */
	int *pids; /* the traced processes: the targets, and what --follow added (0: gone) */
	size_t npids, nprimary;
	uint64_t *cpu_start, *cpu_last; /* utime+stime per target, ns */
	uint64_t last_sample;
	struct overhead_cal cal;
	/* results, from overhead__finish() */
	bool done;
	double span_bpf_ns;	/* uprobe programs: run on the target's threads */
	uint64_t span_bpf_runs, sampled_runs;
	double other_bpf_ns, other_bpf_runs; /* scheduler programs: on every task, system-wide */
	uint64_t entry_hits[INSN_CLASS_MAX], return_hits;
	uint64_t exit_hits; /* of the entry hits, those at functions' exits (span_exit_at) */
	double trap_entry_ns, trap_return_ns;
	bool cold; /* the targets ran long enough a call to have evicted the trap path */
	uint64_t target_cpu_ns;
	/* Python stacks read on ticks and switches (BPF's own count, set before printing); the
	 * reads at probe hits are inside the span programs' run time already */
	uint64_t python_ns;
};

/* Calibrates the trap costs (overhead_cal.c): cal's hot and cold costs of each kind of hit
 * (multi: with uprobe_multi links, else perf-event uprobes). Returns 0 or -errno. */
int overhead_cal__measure(struct overhead_cal *cal, bool multi);

/* Turns on the BPF run-time statistics, calibrates the trap costs (about 40 ms; multi: attach
 * as tracer does, with uprobe_multi links) and reads the targets' CPU time. A failure to
 * calibrate is not an error: the summary then says the trap time is unknown. Returns 0 or
 * -errno (the statistics cannot be enabled). */
int overhead__start(struct overhead *o, const int *pids, size_t npids, bool multi);

/* The span programs (fds by enum span_prog), whose mean run time is measured window by window
 * (call before recording starts; without it their statistics are read at the end only). */
void overhead__watch(struct overhead *o, const int fds[SPAN_PROGS]);

/* A process traced since (--follow): its CPU time counts with the targets', in the share and
 * in the budget. born: forked during the recording, so all of its CPU time is (else from now). */
void overhead__add_pid(struct overhead *o, int pid, bool born);

/* Reads the targets' CPU time at most every 20 ms (a target that exits keeps its last value)
 * and opens and closes the statistics windows. Call it from the event loop, every 10 ms or so. */
void overhead__sample(struct overhead *o);

/* Turns the statistics off and computes the totals from the programs' mean run times (fds:
 * the span programs by enum span_prog, other_fds: the rest), calls[c]: the entry hits on sites
 * of each class (the calls recorded, and the hits at functions' exits), exits: how many of
 * them were at exits, and returns: the return hits. */
void overhead__finish(struct overhead *o, const int fds[SPAN_PROGS], const int *other_fds,
		      size_t nother, const uint64_t calls[INSN_CLASS_MAX], uint64_t exits,
		      uint64_t returns);

/* Sets the trap time from the hits, the calibration and the targets' CPU time (done by
 * overhead__finish; apart for the tests, on recorded numbers). */
void overhead__charge_traps(struct overhead *o);

/* The trap cost of an entry hit on a site of class c, and of a return, as charged (cold or
 * not). */
double overhead__entry_ns(const struct overhead *o, enum insn_class c);
double overhead__return_ns(const struct overhead *o);

/* Trap plus BPF time charged to the targets, in ns; and its share of their CPU time (0 when
 * unknown). */
double overhead__total_ns(const struct overhead *o);
double overhead__share(const struct overhead *o);

/* One line: "overhead: ... of the target's CPU time". */
void overhead__print(FILE *f, const struct overhead *o);
/* Adds "overhead": {...} to the trace's metadata object. */
void overhead__add_json(const struct overhead *o, struct cJSON *meta);

void overhead__free(struct overhead *o);

int empty_probes__open(struct empty_probes *e, bool multi);
/* The same, but each program reads the clock once: the least a span costs (one time stamp at
 * each end), to measure tracer's programs against. */
int empty_probes__open_clock(struct empty_probes *e, bool multi);
/* cnt sites (file offsets) of the file at path, in process pid. */
int empty_probes__attach(struct empty_probes *e, const char *path, const uint64_t *offsets,
			 size_t cnt, int pid, bool ret);
void empty_probes__detach(struct empty_probes *e);
void empty_probes__close(struct empty_probes *e);
/* Runs and run time of a program since it was loaded (while the statistics were on). */
int overhead__prog_stats(int prog_fd, uint64_t *runs, uint64_t *ns);
/* ns of run time the statistics measured over runs, less what they add to each (cal.stats_ns):
 * the programs' own (0 at least). */
double overhead__own_ns(const struct overhead *o, double ns, double runs);

#endif
