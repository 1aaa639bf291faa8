/* SPDX-License-Identifier: MIT */
/* Python function spans from a thread's sequence of stack reads (bpf/python.bpf.c). A frame
 * that appears between two reads started, and one that disappears ended, within the time the
 * thread ran between them: after the later of the previous read and the thread's last switch
 * back onto a CPU, and before the read. The edge is placed
 *  - at the read, when the thread leaves the CPU to wait: it finished its work, then called
 *    what waits (a queue's get, a lock, I/O), which blocks at once when there is nothing;
 *  - at the switch-in, for a tick or preemption after the thread ran again: a pipeline thread
 *    woken from a wait returns into Python at once;
 *  - in the middle of the interval otherwise (ticks, preemption), within half a tick.
 * What ends and what starts at one read share the point, and every point lies in
 * [previous read, read], so Python spans nest among themselves.
 *
 * Native spans on the same thread must nest with them too: a native call's Python ancestors
 * are the frames open at its entry read (taken at the span's own start time), and they outlive
 * it; frames first seen after its start were called from inside it (a callback into Python),
 * so they are closed no later than its end; and its return is a point where the stack was
 * known, like a read. A wait inside the interpreter calls no Python code: every frame open at
 * its end held it from its start, even one first read inside it. */
#ifndef TRACER_PY_SPANS_H
#define TRACER_PY_SPANS_H

#include "events.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One frame of a thread's open Python stack. */
struct py_open {
	uint64_t code;
	uint64_t parent_instr; /* where the caller was when this frame was first seen */
	uint64_t parent_locals; /* and the hash of its locals then (struct py_frame.locals) */
	uint64_t instr;	       /* this frame's latest instruction */
	uint64_t seen;	       /* the first read that showed it */
	uint64_t start;	       /* its estimated start */
	uint64_t min_end;      /* a native call under it returned then: it cannot end earlier */
	uint64_t tag;	       /* what ops->opened returned for it */
};

struct py_spans_ops {
	/* A frame was first seen: its code object should be named now, while the frame holds it
	 * (a module's code is freed once it ran). The return value is kept as the frame's tag. */
	uint64_t (*opened)(void *ctx, int pid, const struct py_frame *f);
	/* A finished span: frame o of process pid ran on tid from o->start to end. */
	void (*span)(void *ctx, int pid, int tid, const struct py_open *o, uint64_t end,
		     bool incomplete);
	/* tid waited for the GIL from start to end (reads flagged PY_GIL, each until the thread's
	 * next switch in, those of one take of it joined), inside frame in (NULL: none open). */
	void (*gil)(void *ctx, int pid, int tid, uint64_t start, uint64_t end, bool incomplete,
		    const struct py_open *in);
};

struct py_spans;

struct py_spans *py_spans__new(const struct py_spans_ops *ops, void *ctx);
void py_spans__free(struct py_spans *s);
/* One ring record of type REC_PY_STACK, size bytes long. */
void py_spans__on_read(struct py_spans *s, const struct py_stack_rec *r, size_t size);
/* Waits for the GIL this close together, with the same stack, are one: a waiter woken by the
 * GIL's timed wait (its switch interval) or beaten to it blocks again within microseconds. */
#define PY_GIL_JOIN_NS 200000ULL
/* The on-CPU tick's period (0: no tick): a thread on a CPU is read at least that often. */
void py_spans__set_tick(struct py_spans *s, uint64_t period_ns);
/* The thread was switched onto a CPU at ts (a scheduler record). */
void py_spans__switch_in(struct py_spans *s, int pid, int tid, uint64_t ts);
/* The thread was woken at ts: a wait for the GIL ends there (what follows, until it runs, is a
 * wait for a CPU, the scheduler's runnable state). */
void py_spans__woken(struct py_spans *s, int pid, int tid, uint64_t ts);
/* A native span [start, end] completed on tid. Closes the Python frames it called (at end) and
 * returns the innermost frame open at its start (its caller), or false if there is none. wait: a
 * wait inside the interpreter (PROBE_PY_WAIT), whose end says nothing of when frames change. */
bool py_spans__on_native(struct py_spans *s, int pid, int tid, uint64_t start, uint64_t end,
			 bool wait,
			 struct py_open *caller);
/* The thread exited at ts: its frames end there. */
void py_spans__thread_exit(struct py_spans *s, int pid, int tid, uint64_t ts);
/* Every thread of pid (0: all) ends its frames at ts, marked incomplete (recording stopped,
 * or the process ran exec). */
void py_spans__close_all(struct py_spans *s, int pid, uint64_t ts);

/* Reads seen, and those left out because frames were missing (truncated or unreadable). */
uint64_t py_spans__reads(const struct py_spans *s);
uint64_t py_spans__partial_reads(const struct py_spans *s);
/* Threads whose reads were seen so far (new ones may need naming). */
uint64_t py_spans__threads_seen(const struct py_spans *s);

#endif
