/* SPDX-License-Identifier: MIT */
/* One recording's state, shared by its parts (private to record/): setup.c sets it up, follow.c
 * holds launched and followed programs at their entry point, loop.c runs the event loop,
 * finish.c writes the end, record.c runs them in order and cleans up. */
#ifndef TRACER_RECORDING_H
#define TRACER_RECORDING_H

#include "record/budget.h"
#include "record/children.h"
#include "record/consumer.h"
#include "record/deadline.h"
#include "record/overhead.h"
#include "record/rings.h"
#include "record/record.h"
#include "record/status.h"
#include "record/top.h"
#include "record/tracked.h"
#include "python/py_record.h"
#include "trace/trace_writer.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define STOP_TIMEOUT_NS (2 * 1000000000ULL) /* a followed exec held longer is let go */
/* The reader's timer (BPF wakes it only for thread life, tracer.bpf.h): every POLL_MS on
 * average, each wait drawn from half to 1.5 of it. A steady 10 ms reader took the CPU from a
 * pipeline paced to 10 ms at the same point of every cycle, and the Python edges next to that
 * preemption came out early or late by the same amount each time (py_paced.py under load: a
 * stage's total 0.96 of the logged in 2 runs of 10). */
#define POLL_MS 10
/* Records are handed out in time order once this much older than the pass that reads them:
 * a program that read the clock on one CPU may submit after a newer record on another. */
#define ORDER_LAG_NS (2 * 1000000ULL)

/* epoll data of the fds that are not a target's pidfd (those carry the pid) */
enum { EV_SIGNAL = -1, EV_TIMER = -2, EV_RING = -3, EV_KEY = -4 };
#define RESCAN_TICKS (500 / POLL_MS) /* look for libraries loaded since: every 500 ms */

struct recording {
	struct record_opts *opts;
	struct tracked tracked; /* processes, probes, links */
	size_t primary;		/* targets asked for (-p or the launched command): the first ones */
	size_t alive;		/* of those, still running */
	bool multi;		/* uprobe_multi links */
	bool compat;		/* the programs for 5.10-5.16 (record/kernel_check.h) */
	char compat_note[320];	/* the line saying so, printed as recording starts */
	struct bpf_link **stop_links; /* followed execs held at their entry point */
	int *stop_pids;
	uint64_t *stop_since; /* when each was set up: one that never arrives is let go */
	size_t nstops;
	struct tracer_bpf *skel;
	struct bpf_link **sched_links;
	size_t nsched;
	pid_t launched; /* launch mode: the command's pid */
	struct rings rings; /* one ring buffer per CPU */
	struct trace_writer *writer;
	struct consumer consumer;
	struct overhead overhead;
	struct budget budget; /* --max-overhead */
	struct py_record py; /* Python frames */
	struct untraced_children children; /* without --follow: named after the verdict when busy */
	uint64_t *calls_per_probe; /* spans recorded per probe id: the entry hits, by site kind */
	size_t ncalls;
	uint64_t returns; /* spans that ended with a return: the return hits */
	uint64_t spans, py_reads; /* CNT_SPANS and CNT_PY_READS: counted here, not per call in BPF */
	char path[PATH_MAX];
	bool auto_packs;	/* no -u/-P: the packs were chosen for the targets */
	char packs_chosen[512]; /* the packs picked at the start, ", "-separated */
	uint64_t t0, t0_realtime, end;
	/* set up (every probe attached, the scheduler and Python programs on): -d counts from
	 * here, the trace from t0, when the first probe could fire */
	uint64_t started;
	struct deadline deadline; /* -d */
	const char *stop_reason;
	int forward_signal; /* a signal sent to tracer alone (kill, not the terminal): the
			    * launched command gets it too */
	struct status status;
	struct top top; /* tracer top's live view */
	bool warned_size;
	uint64_t lost_marked, last_tick; /* records lost, as the trace shows them so far */
	int epfd, sigfd, timerfd;
	uint64_t poll_rand; /* draws the timer's waits */
	char err[1024];
};

/* finish.c */
/* The kind of site a probe traps on, from the instruction at its site in a file that maps it. */
enum insn_class recording__probe_class(const struct recording *r, const struct probe *p);

/* setup.c */
int recording__open_targets(struct recording *r);
/* The pids of the targets asked for (r->primary of them; to free). */
int *recording__primary_pids(const struct recording *r);
void recording__warn_hazards(const struct recording *r);
int recording__choose_specs(struct recording *r);
int recording__load_bpf(struct recording *r);
int recording__check_targets(struct recording *r);
int recording__setup_tracked(struct recording *r);
int recording__attach_sched(struct recording *r);
int recording__open_output(struct recording *r);
void recording__add_existing_threads(struct recording *r);
void recording__start_overhead(struct recording *r);
/* The span programs' descriptors, by enum span_prog (overhead.h). */
void recording__span_prog_fds(const struct recording *r, int fds[SPAN_PROGS]);

/* follow.c */
int recording__launch(struct recording *r);
void recording__watch_pidfd(struct recording *r, const struct target *t);
void recording__on_process(void *ctx, const struct task_rec *t);
/* Lets go the followed execs held longer than STOP_TIMEOUT_NS (they never reached the stop). */
void recording__release_late_stops(struct recording *r, uint64_t now);

/* loop.c */
/* Ctrl-C, SIGTERM, SIGHUP (and SIGUSR1, pause) are blocked from the start: one that comes while
 * tracer sets up stops it there (the launched command is never left running untraced), one
 * that comes later is read by the event loop. */
void recording__block_signals(void);
/* The stop signal waiting to be taken, or 0. */
int recording__signal_pending(void);
int recording__setup_loop(struct recording *r);
void recording__drain(struct recording *r);
void recording__read_counters(struct recording *r, uint64_t *out);
void recording__mark_losses(struct recording *r, uint64_t now, const uint64_t *c);
void recording__event_loop(struct recording *r);
void recording__start_top(struct recording *r);
int recording__handle_record(void *ctx, void *data, size_t size);
/* -d has ended the recording: the work for the targets left in the loop's turn is skipped. */
bool recording__over(const struct recording *r);

/* finish.c */
/* The file's first event: what reading back a cut file needs (trace_writer__started). */
void recording__write_started(struct recording *r);
int recording__finish(struct recording *r);

#endif
