/* SPDX-License-Identifier: MIT */
/* Python frames in one recording: which traced processes run a CPython this build can read,
 * their stack reads turned into spans on the trace (category "python"), the Python caller of
 * each native span, and Python's thread names. The record/ code calls these hooks; everything
 * Python-specific stays here. */
#ifndef TRACER_PY_SESSION_H
#define TRACER_PY_SESSION_H

#include "events.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cJSON;

/* The on-CPU tick's default rate: a stage function of a few milliseconds is caught by several
 * ticks, for about 0.3% of a Python thread's CPU (bench/bench.py measures it). */
#define PY_DEFAULT_HZ 1000
#define PY_DEFAULT_HZ_TEXT "1000"

/* The name of a wait to take the GIL back, as the python-gil pack's spans have it. */
#define PY_GIL_SPAN "GIL wait"

struct trace_writer;
struct py_session;

struct py_session_ops {
	/* Every finished Python span, for the summary, as written to the trace. */
	void (*span)(void *ctx, const char *name, const struct span_rec *r);
	/* A wait for the GIL (category gil, named PY_GIL_SPAN) the scheduler saw: written to the
	 * trace only if this returns true (not when the python-gil pack's exact spans are on). */
	bool (*gil)(void *ctx, const struct span_rec *r);
	/* Python's name for a thread (threading.Thread.name) was read. */
	void (*thread_name)(void *ctx, int pid, int tid, const char *name);
};

struct py_session *py_session__new(struct trace_writer *w, const struct py_session_ops *ops,
				   void *ctx);
/* Where spans go, once the trace exists (no read can arrive before: none is consumed). */
void py_session__open(struct py_session *s, struct trace_writer *w,
		      const struct py_session_ops *ops, void *ctx);
void py_session__free(struct py_session *s);

/* A traced process. Returns 1 when it runs a readable CPython (cfg filled for the BPF map),
 * 0 when it runs none, -ENOTSUP when it runs a version this build cannot read (said once, in
 * one line), other -errno if its memory cannot be inspected. */
int py_session__add_pid(struct py_session *s, int pid, struct py_proc_cfg *cfg);
/* A process of the recording forked from a Python one: the BPF side copied its settings. */
void py_session__add_child(struct py_session *s, int pid, int parent);
bool py_session__is_python(const struct py_session *s, int pid);
/* The process ran exec: its frames end, its code objects mean nothing any more. */
void py_session__exec(struct py_session *s, int pid, uint64_t ts);

/* A REC_PY_STACK record. */
void py_session__on_read(struct py_session *s, const void *rec, size_t size);
/* A native span completed: closes the Python frames it called and writes its Python caller
 * into args (JSON members to append: "py":"qualname","py_line":"file:line"). Returns the length
 * written (0: no Python caller). wait: a wait inside the interpreter (PROBE_PY_WAIT). */
size_t py_session__native(struct py_session *s, const struct span_rec *r, bool wait, char *args,
			  size_t len);
/* The on-CPU tick reads threads every period_ns from now on. */
void py_session__set_tick(struct py_session *s, uint64_t period_ns);
/* The thread was put on a CPU at ts (a scheduler record). */
void py_session__switch_in(struct py_session *s, int pid, int tid, uint64_t ts);
/* The thread was woken at ts (sched_waking): a wait for the GIL ends there, the time after it
 * is a wait for a CPU. */
void py_session__woken(struct py_session *s, int pid, int tid, uint64_t ts);
void py_session__thread_exit(struct py_session *s, int pid, int tid, uint64_t ts);
/* Reads Python's thread names of every Python process again if threads were seen since, and
 * once more at the next tick (tick: called from the periodic tick, not after each read). */
void py_session__refresh_names(struct py_session *s, bool tick);
/* Recording stopped at ts: open frames end there, incomplete. */
void py_session__finish(struct py_session *s, uint64_t ts);

/* For the summary: one line per interpreter the traced processes run (its version, the object
 * defining it) saying what their frames were read with. */
void py_session__describe(const struct py_session *s, FILE *f);

/* For the metadata: {pid, version, object, offsets: "table" or "debug"} per process read. */
void py_session__add_json(const struct py_session *s, struct cJSON *array);

/* For the summary: processes read, spans written, reads left out (truncated or faulted). */
void py_session__stats(const struct py_session *s, size_t *procs, uint64_t *spans,
		       uint64_t *reads, uint64_t *partial);

#endif
