// SPDX-License-Identifier: MIT
#include "python/py_spans.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct py_stack {
	int tid; /* key */
	int pid;
	uint64_t last;	    /* the last read, or native return: the stack was known then */
	uint64_t switch_in; /* the last time the thread was put on a CPU */
	/* a wait for the GIL: blocked since gil_block (0: not blocked on it), and the wait
	 * not written yet, from gil_start to gil_end (0: none) */
	uint64_t gil_block, gil_start, gil_end;
	uint64_t gil_woken; /* the waking since gil_block (0: none seen) */
	uint64_t left;	    /* the last read as it left the CPU */
	uint64_t closed;    /* the latest end of a frame written: a new one starts no earlier */
	uint64_t returned;  /* the latest end of a native call: a frame new after it started later */
	uint32_t depth;
	struct py_open v[PY_MAX_FRAMES]; /* outermost first */
	UT_hash_handle hh;
};

struct py_spans {
	const struct py_spans_ops *ops;
	void *ctx;
	struct py_stack *threads;
	uint64_t reads, partial;
	uint64_t created; /* threads seen */
	uint64_t tick;	  /* the tick's period, 0 if none */
};

struct py_spans *py_spans__new(const struct py_spans_ops *ops, void *ctx)
{
	struct py_spans *s = xcalloc(1, sizeof(*s));

	s->ops = ops;
	s->ctx = ctx;
	return s;
}

void py_spans__free(struct py_spans *s)
{
	struct py_stack *st, *tmp;

	if (!s)
		return;
	HASH_ITER(hh, s->threads, st, tmp) {
		HASH_DEL(s->threads, st);
		free(st);
	}
	free(s);
}

static struct py_stack *stack_of(struct py_spans *s, int pid, int tid, bool create)
{
	struct py_stack *st;

	HASH_FIND_INT(s->threads, &tid, st);
	if (st && st->pid != pid) {
		/* a tid reused by another process: what was open cannot be closed honestly */
		st->depth = 0;
		st->pid = pid;
	}
	if (st || !create)
		return st;
	st = xcalloc(1, sizeof(*st));
	st->tid = tid;
	st->pid = pid;
	HASH_ADD_INT(s->threads, tid, st);
	s->created++;
	return st;
}

/* Ends frames [from, depth) at ts (or later, if a native call under one returned later),
 * innermost first. */
static void close_from(struct py_spans *s, struct py_stack *st, uint32_t from, uint64_t ts,
		       bool incomplete)
{
	while (st->depth > from) {
		struct py_open *o = &st->v[--st->depth];
		uint64_t end = ts < o->min_end ? o->min_end : ts;

		if (end < o->start)
			end = o->start;
		if (end > st->closed)
			st->closed = end;
		s->ops->span(s->ctx, st->pid, st->tid, o, end, incomplete);
	}
}

/* Writes the thread's GIL wait, if one is pending; one still blocked ends at ts, incomplete. */
static void gil_flush(struct py_spans *s, struct py_stack *st, uint64_t ts)
{
	bool open = st->gil_block != 0;

	if (open)
		st->gil_end = ts > st->gil_block ? ts : st->gil_block;
	if (st->gil_start && st->gil_end > st->gil_start && s->ops->gil)
		s->ops->gil(s->ctx, st->pid, st->tid, st->gil_start, st->gil_end, open,
			    st->depth ? &st->v[st->depth - 1] : NULL);
	st->gil_block = st->gil_start = st->gil_end = st->gil_woken = 0;
}

/* A read of the thread: one flagged PY_GIL starts a GIL wait, or goes on with the one that
 * ended a moment ago if the stack is the same (no Python ran between: the same take of the
 * GIL; a new call's wait is its own, and nests in its frames); any other ends it. Returns the
 * end of the wait before this read (0: none): the thread ran again only after it. */
static uint64_t gil_read(struct py_spans *s, struct py_stack *st, const struct py_stack_rec *r)
{
	bool gil = r->reason == PY_READ_BLOCK && (r->flags & PY_GIL);
	/* when the thread left the CPU: a read inside a lock wait (3.13's _PySemaphore_Wait takes
	 * the GIL back before it returns) is stamped with the wait's start, seconds earlier */
	uint64_t now = r->now_ns > r->ts ? r->now_ns : r->ts;
	uint64_t waited, ran;

	/* read again with no switch in since the block (its record lost): how long it waited is
	 * not known, what came before stands */
	if (st->gil_block) {
		st->gil_end = st->gil_woken ? st->gil_woken : st->gil_block;
		st->gil_block = st->gil_woken = 0;
	}
	waited = st->gil_start ? st->gil_end : 0;
	/* the same take of the GIL: blocked again soon after it ran again (woken, it may wait
	 * long for a CPU on a loaded machine: that is no GIL wait, nor a new one) */
	ran = st->switch_in > st->gil_end ? st->switch_in : st->gil_end;
	if (st->gil_start &&
	    (!gil || !(r->flags & PY_SAME) || now > ran + PY_GIL_JOIN_NS))
		gil_flush(s, st, now);
	if (!gil)
		return waited;
	if (!st->gil_start)
		st->gil_start = now;
	st->gil_block = now;
	st->gil_woken = 0;
	return waited;
}

void py_spans__set_tick(struct py_spans *s, uint64_t period_ns)
{
	s->tick = period_ns;
}

void py_spans__switch_in(struct py_spans *s, int pid, int tid, uint64_t ts)
{
	struct py_stack *st = stack_of(s, pid, tid, false);

	if (st && ts > st->switch_in)
		st->switch_in = ts;
	if (st && st->gil_block && ts >= st->gil_block) {
		st->gil_end = st->gil_woken ? st->gil_woken : ts;
		st->gil_block = st->gil_woken = 0;
	}
}

void py_spans__woken(struct py_spans *s, int pid, int tid, uint64_t ts)
{
	struct py_stack *st = stack_of(s, pid, tid, false);

	if (st && st->gil_block && ts >= st->gil_block)
		st->gil_woken = ts;
}

void py_spans__on_read(struct py_spans *s, const struct py_stack_rec *r, size_t size)
{
	size_t have = (size - offsetof(struct py_stack_rec, frames)) / sizeof(struct py_frame);
	uint32_t d = r->depth, k = 0;
	uint64_t lower, split, waited;
	struct py_stack *st;
	bool resumed, again;

	if (size < offsetof(struct py_stack_rec, frames) || d > PY_MAX_FRAMES || d > have)
		return;
	s->reads++;
	st = stack_of(s, r->pid, r->tid, true);
	if (r->ts < st->last)
		return; /* out of order: cannot happen on one thread, but never go back */
	waited = gil_read(s, st, r);
	/* frames[] misses the outermost frames: it cannot be lined up with the open stack */
	if (r->flags & (PY_TRUNCATED | PY_FAULT)) {
		s->partial++;
		return;
	}
	resumed = st->switch_in > st->last;
	lower = resumed ? st->switch_in : st->last;
	/* waited for the GIL since: back on a CPU after it, whether its switch in was seen or
	 * lost (a split midway would fall inside the wait) */
	if (waited > lower && waited <= r->ts) {
		lower = waited;
		resumed = true;
	}
	if (!st->last)
		lower = r->ts; /* the first read of the thread: nothing is known before it */
	/* Off the CPU since the last read, and no switch back in seen: the kernel fires no
	 * sched_switch for some (ftrace misses them too). It ran less than a tick before this read,
	 * or a tick would have read it; the last read, maybe 10 ms older, would put the change
	 * midway into the time it was off the CPU. */
	if (!resumed && st->last && st->left == st->last && s->tick && r->ts > lower + s->tick)
		lower = r->ts - s->tick;
	if (lower > r->ts)
		lower = r->ts;
	/* an unchanged stack read inside the interpreter's own waits (right after a switch back
	 * in, for the GIL) would make the next change look half a tick later than it was */
	if (!(r->reason == PY_READ_WAIT && (r->flags & PY_SAME)))
		st->last = r->ts;
	if (r->reason == PY_READ_PREEMPT || r->reason == PY_READ_BLOCK)
		st->left = r->ts;
	if (r->flags & PY_SAME)
		return;
	/* the frames both have, from the outermost: same code, called from the same place by the
	 * same call of its caller (whose locals do not move while it waits for its callee) */
	while (k < d && k < st->depth) {
		const struct py_frame *f = &r->frames[d - 1 - k];

		if (f->code != st->v[k].code ||
		    (k && (r->frames[d - k].instr != st->v[k].parent_instr ||
			   r->frames[d - k].locals != st->v[k].parent_locals)))
			break;
		k++;
	}
	/* the first frame that differs is the same function called again from the same line */
	again = k && k < d && k < st->depth && r->frames[d - 1 - k].code == st->v[k].code &&
		r->frames[d - k].instr == st->v[k].parent_instr;
	/* One point where what ended ends and what is new starts, so that siblings never overlap.
	 * At a block, what ended ended there (what waits blocks at once), unless the function
	 * that blocks is the one that ended, called again: its new call did what the old one did
	 * before it blocked, and they part midway, as at a tick. When nothing ended, what is new
	 * may have worked before it blocked: midway too. So at a preemption that followed the
	 * thread's own waking of another (PY_WOKE: a stage's function returns, its result is put
	 * on a queue, the consumer woken takes the CPU): midway would end the function early by
	 * half the time since the last tick, every call (py_pipeline.py's decode_batch: -6%). */
	if ((r->reason == PY_READ_BLOCK ||
	     (r->reason == PY_READ_PREEMPT && (r->flags & PY_WOKE))) && !again && k < st->depth)
		split = r->ts;
	else if (resumed && r->reason != PY_READ_BLOCK)
		split = lower;
	else
		split = lower + (r->ts - lower) / 2;
	/* what is new starts after the native calls under the stack returned (a wait inside the
	 * interpreter does not move st->last): it nests beside them, not across them */
	for (uint32_t i = 0; i < st->depth; i++)
		if (st->v[i].min_end > split && st->v[i].min_end <= r->ts)
			split = st->v[i].min_end;
	/* and after one made with no Python frame open (C code between two runs of Python, as
	 * at startup: a lock wait, then a path hook run from C), which no frame remembers */
	if (st->returned > split && st->returned <= r->ts)
		split = st->returned;
	close_from(s, st, k, split, false);
	for (uint32_t i = k; i < d; i++) {
		const struct py_frame *f = &r->frames[d - 1 - i];
		struct py_open *o = &st->v[i];

		o->code = f->code;
		o->parent_instr = i ? r->frames[d - i].instr : 0;
		o->parent_locals = i ? r->frames[d - i].locals : 0;
		o->seen = r->ts;
		o->start = split;
		o->min_end = 0;
		o->tag = s->ops->opened ? s->ops->opened(s->ctx, r->pid, f) : 0;
	}
	st->depth = d;
	for (uint32_t i = 0; i < d; i++)
		st->v[i].instr = r->frames[d - 1 - i].instr;
}

bool py_spans__on_native(struct py_spans *s, int pid, int tid, uint64_t start, uint64_t end,
			 bool wait, struct py_open *caller)
{
	struct py_stack *st = stack_of(s, pid, tid, false);
	uint32_t k = 0;

	if (!st)
		return false;
	/* a native call returned after a wait for the GIL ended: that take of it is over (OpenCV
	 * takes the GIL inside cv::resize to allocate its result, and again after it returns, the
	 * stack unchanged): the next wait is a new one, not the same one going on */
	if (st->gil_start && !st->gil_block && end >= st->gil_end)
		gil_flush(s, st, end);
	/* a wait inside the interpreter calls no Python code: every frame open holds it */
	while (k < st->depth && (wait || st->v[k].seen <= start))
		k++;
	/* a wait's frames held it from its start, though first read inside it (its entry read
	 * lost or faulted, a thread read first as it was woken): they start no later, nor before
	 * what was written on the thread */
	for (uint32_t i = 0; wait && i < k; i++)
		if (st->v[i].start > start)
			st->v[i].start = start > st->closed ? start : st->closed;
	close_from(s, st, k, end, false);
	if (end > st->returned)
		st->returned = end;
	/* the end of a wait inside the interpreter says nothing of when the frames change */
	if (!wait && end > st->last)
		st->last = end;
	for (uint32_t i = 0; i < k; i++)
		if (st->v[i].min_end < end)
			st->v[i].min_end = end;
	if (!k)
		return false;
	*caller = st->v[k - 1];
	return true;
}

void py_spans__thread_exit(struct py_spans *s, int pid, int tid, uint64_t ts)
{
	struct py_stack *st = stack_of(s, pid, tid, false);

	if (!st)
		return;
	gil_flush(s, st, ts);
	close_from(s, st, 0, ts, false);
	HASH_DEL(s->threads, st);
	free(st);
}

void py_spans__close_all(struct py_spans *s, int pid, uint64_t ts)
{
	struct py_stack *st, *tmp;

	HASH_ITER(hh, s->threads, st, tmp) {
		if (pid && st->pid != pid)
			continue;
		gil_flush(s, st, ts);
		close_from(s, st, 0, ts, true);
		HASH_DEL(s->threads, st);
		free(st);
	}
}

uint64_t py_spans__reads(const struct py_spans *s)
{
	return s->reads;
}

uint64_t py_spans__threads_seen(const struct py_spans *s)
{
	return s->created;
}

uint64_t py_spans__partial_reads(const struct py_spans *s)
{
	return s->partial;
}
