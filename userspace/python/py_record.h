/* SPDX-License-Identifier: MIT */
/* Python frames in a recording, as record/ sees them: the BPF programs and map of
 * bpf/python.bpf.c, the on-CPU tick, the session that turns reads into spans, and what the
 * summary says about them. */
#ifndef TRACER_PY_RECORD_H
#define TRACER_PY_RECORD_H

#include "python/py_session.h"
#include "python/py_ticks.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct bpf_link;
struct tracer_bpf;
struct trace_writer;
struct cJSON;

struct py_record {
	bool enabled;	  /* frames are read */
	const char *off;  /* else why not: "--no-python or --no-args", or what the kernel lacks */
	unsigned int hz;
	struct tracer_bpf *skel;
	struct py_session *session; /* NULL when off */
	struct py_ticks ticks;
	struct bpf_link *switch_link; /* py_on_switch, attached with the tick */
	size_t nprocs;	    /* CPython processes found */
	bool any_unsupported;
	bool started;	    /* recording: the tick may run */
	bool tick_failed;
	bool switch_failed;
};

/* Before load: turns the programs off when Python frames are not wanted or cannot be read
 * (off: why, for the summary; NULL: they are read). */
void py_record__configure(struct py_record *p, struct tracer_bpf *skel, const char *off,
			  unsigned int hz);
/* A traced process (asked for, followed, launched, seen by -a): if it runs a readable CPython,
 * its stacks are read from now on. */
void py_record__add_pid(struct py_record *p, int pid);
/* A followed child of pid parent: the BPF side took it in at the fork. */
void py_record__add_child(struct py_record *p, int pid, int parent);
/* The trace exists: spans can be written (processes may be added before). ops: the consumer's
 * summary and thread names. */
void py_record__open(struct py_record *p, struct trace_writer *w,
		     const struct py_session_ops *ops, void *ctx);
/* Recording starts: the on-CPU tick runs from now on while a Python process is traced. */
int py_record__start(struct py_record *p);
/* Stops the tick (before the final drain). */
void py_record__stop(struct py_record *p);
/* Every PY_DITHER_MS of the reader's timer (its waits random) while recording: the tick's
 * periods change (py_ticks.h). */
void py_record__dither(struct py_record *p);
#define PY_DITHER_MS 50
/* After the drain: frames still open end at end_ns. */
void py_record__finish(struct py_record *p, uint64_t end_ns);
/* One summary line; counters: the BPF counters summed over CPUs; cpu_ns: the targets' CPU. */
void py_record__print(const struct py_record *p, FILE *f, const uint64_t *counters,
		      uint64_t cpu_ns);
void py_record__add_json(const struct py_record *p, struct cJSON *meta, const uint64_t *counters);
void py_record__free(struct py_record *p);

#endif
