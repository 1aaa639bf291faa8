/* SPDX-License-Identifier: MIT */
/* The scheduler's ftrace text line of "systemTraceEvents": printed by the writer, parsed by
 * report and merge. */
#ifndef TRACER_FTRACE_LINE_H
#define TRACER_FTRACE_LINE_H

#include "events.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Where a value sits in the event's text (len 0: absent), so that merge can rewrite it. */
struct text_span {
	uint32_t off, len;
};

/* One ftrace text line, as tracer (and the kernel's trace file) writes it:
 * "comm-tid (tgid) [cpu] flags secs.frac: event: payload". */
enum ftrace_kind {
	FT_OTHER,
	FT_SWITCH,
	FT_WAKING,
	FT_WAKEUP,
	FT_WAKEUP_NEW,
};

struct ftrace_line {
	enum ftrace_kind kind;
	int64_t ts_ns;
	int cpu;
	int64_t tid, tgid;	   /* the line's task (waker, prev); tgid -1 if absent */
	int64_t prev_tid, next_tid; /* FT_SWITCH */
	char prev_state[4];	   /* FT_SWITCH: "R", "R+", "S", "D", ... */
	int64_t woken_tid;	   /* FT_WAKING, FT_WAKEUP, FT_WAKEUP_NEW */
	bool in_irq;		   /* printed in an interrupt: the task is only the one it hit */
	/* numbers to rewrite (merge): the task's tid and tgid, the time, and prev_pid= / pid=
	 * (a) and next_pid= (b) */
	struct text_span tid_at, tgid_at, ts_at, a_at, b_at;
};

/* 0, or -EINVAL for a line that is not an event (comments, blank lines, other formats). */
int ftrace_line__parse(const char *line, size_t len, struct ftrace_line *out);

/* Print one sched_switch / sched_waking-or-wakeup line at rel_ns (time since the trace's
 * zero) to f; return what fprintf returns. */
int ftrace_line__print_switch(FILE *f, uint64_t rel_ns, const struct switch_rec *r);
int ftrace_line__print_wakeup(FILE *f, uint64_t rel_ns, const struct wakeup_rec *r);

/* The sched_switch prev_state letter(s) for a raw task state. */
const char *ftrace_prev_state(uint32_t state, bool preempt);

#endif
