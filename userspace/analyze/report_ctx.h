/* SPDX-License-Identifier: MIT */
/* What the parts of `tracer report` share: the per-thread and per-file state of the two passes
 * (report.h says how they work). Private to analyze/report*.c. */
#ifndef TRACER_REPORT_CTX_H
#define TRACER_REPORT_CTX_H

#include "analyze/cover.h"
#include "analyze/report.h"
#include "trace/trace_reader.h"

#include <uthash.h>

/* K: the longest spans, known before the sweep. TRACER_REPORT_KEEP overrides it (tests use a
 * small K to run every span through the bounded windows). */
#define TOP_SPANS 16384
#define NCLASS (CAT_MAX + 1)
#define CL_ANY CAT_MAX /* spans of any category */

enum rstate { RS_UNKNOWN, RS_RUNNING, RS_RUNNABLE, RS_SLEEPING, RS_BLOCKED, RS_DEAD };

struct piece {
	int64_t s, e;
	uint64_t qs, qd; /* queue pieces: sleeping and blocked time inside */
};

struct pieces { /* a deque: v[head .. head + n) */
	struct piece *v;
	size_t head, n, cap;
};

struct hist { /* a scheduler state change and the sleeping/blocked totals then */
	int64_t t;
	uint64_t cs, cd;
	uint8_t state;
};

/* A span read before the spans it holds (a file written in start order, parents first): what
 * is left of its self time, and the group it was counted in. */
struct open_span {
	int64_t s, e;
	uint64_t left;
	struct report_group *g; /* NULL: shorter than --min-dur, in no group */
};

struct big {
	int64_t s, e;
};

struct rthread {
	int64_t tid, pid;
	char name[64];
	bool known; /* a thread of the traced processes: named, or with spans */
	uint64_t spans;
	struct report_group *grp; /* --by thread / stage */
	struct cover cover;	  /* its spans so far: self time */
	struct open_span *open;	  /* spans that may hold later ones (start order): self time */
	size_t nopen, capopen;
	bool parents_first; /* a span came after a longer one that holds it (start order) */
	const char *role;	  /* stage__python_role */
	const char *stage;	  /* --by stage: its stage's name, while the groups are merged */
	/* pass 1 */
	bool seen_sched, has_queue;
	int64_t first_s, last_e; /* its spans' extent: its observed time without states */
	int64_t first_ev, last_ev; /* the extent of its spans and scheduler lines */
	bool any_ev;
	int64_t win_s, win_e; /* its recording's span of time (merged files hold several) */
	enum rstate before; /* what its first scheduler event says it did until then */
	bool born;	    /* its first event is sched_wakeup_new */
	/* who wakes it (not from an interrupt): the candidate for a majority (Boyer-Moore) in
	 * pass 1, its wakings and the candidate's share of them counted in pass 2 */
	int64_t waker;
	uint64_t waker_votes, wakings, waker_wakings;
	/* the longest spans, merged into pieces per class */
	struct big *b[NCLASS];
	size_t nb[NCLASS];
	uint64_t *bq; /* per big queue piece: sleeping/blocked totals at its start and end */
	size_t nextb; /* the next big queue boundary to pass (2 per piece) */
	/* pass 2 */
	bool started;
	enum rstate state;
	bool switch_seen; /* a switch of it was read: the next one must be its opposite */
	int64_t since;
	uint64_t st_ns[RS_DEAD];
	uint64_t cs, cd; /* sleeping, blocked so far (until since) */
	struct hist *h;	 /* state changes since the frontier (queue threads only) */
	size_t hh, hn, hcap;
	bool trimmed;
	struct pieces pend[NCLASS];
	uint64_t done_len[NCLASS], done_qs, done_qd;
	UT_hash_handle hash; /* ctx.threads */
};

struct big_span {
	int64_t tid, s, e;
	uint8_t cls;
};

struct ctx {
	const struct report_opts *o;
	struct report *r;
	struct report_group *groups; /* by name / category (uthash on key) */
	struct rthread *threads;     /* uthash on tid */
	/* the K longest spans: a min-heap on duration */
	struct big_span *heap;
	size_t nheap, keep;
	int64_t small_max; /* L: every span not in the heap is at most this long */
	/* disorder of the file: how far a span's end, a span's start, a scheduler line's time
	 * fall behind the largest seen before */
	int64_t max_e, max_s, max_ts, lat_e, lat_s, lat_sched;
	bool any_span, any_sched, have_t0;
	int64_t min_ts, max_end, meta_dur;
	int meta_cpus; /* the CPUs the recording says the machine had (0: not said) */
	struct window { int64_t s, e; } *wins; /* a merged file's recordings, trace-relative */
	size_t nwins;
	/* pass 2 */
	int64_t glob_e, glob_s;
	uint64_t sched_lines;
};

/* report_pass1.c: the groups and threads tables, and pass 1 */
struct rthread *thread_get(struct ctx *c, int64_t tid);
/* A span's class: its category, with Python's waits (stage__python_wait) as queue spans. */
int class_of(const struct trace_event *ev);
struct report_group *group_get(struct ctx *c, const char *key, const char *cat);
void group_free(struct report_group *g);
struct rthread *thread_find(struct ctx *c, int64_t tid);
void thread_free(struct rthread *t);
int pass1(struct ctx *c, char *err, size_t errlen);
/* report_windows.c: the recordings a merged file's metadata holds ({"merged": [...],
 * "merge": {"inputs": [...]}}), and each thread's span of time: its recording's in a merged
 * file, else the whole file's. */
struct cJSON;
void merged_windows(struct ctx *c, const struct cJSON *meta);
void thread_windows(struct ctx *c);

/* report_sweep.c: the longest spans merged per thread, then pass 2 */
void build_big(struct ctx *c);
void set_state(struct rthread *t, enum rstate s, int64_t ts);
void pass_boundaries(struct rthread *t, int64_t ts);
void finalize(struct rthread *t, int64_t f);
int pass2(struct ctx *c, char *err, size_t errlen);

#endif
