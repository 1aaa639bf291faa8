/* SPDX-License-Identifier: MIT */
/* The sample pipeline's parts (pipeline.c runs it): its options (options.c) and the call log
 * every thread keeps of its probed functions, written at exit (call_log.c). */
#ifndef PIPELINE_H
#define PIPELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define MAX_WORKERS 64	     /* per kind: decoders, operators */
#define LOG_MAX_FOREVER 1000000 /* records kept per thread with --forever */

struct config {
	long frames;
	int decoders, operators, queue_cap;
	long read_us, decode_us, op_us, write_us; /* -1 until set: the profile fills them in */
	const char *bottleneck;
	const char *log_path;
	bool forever, wait_signal;
	long start_delay_ms; /* -1: none */
};

extern struct config cfg;

/* Sets cfg from the command line; on a bad option, one line and exit 2. */
void parse_args(int argc, char **argv);

/* ------------------------------------------------------------------------------------------ */
/* Per-thread call log: preallocated, grown with realloc, no locks, no I/O while running       */

enum fn_id {
	FN_READ_PACKET,
	FN_DECODE_FRAME,
	FN_RUN_OPERATOR,
	FN_OP_RESIZE,
	FN_OP_NORMALIZE,
	FN_OP_INFER,
	FN_QUEUE_PUSH,
	FN_QUEUE_POP,
	FN_WRITE_FRAME,
};

extern const char *const fn_names[];

#define N_OPS 3
extern const char *const op_names[N_OPS];

struct rec {
	uint64_t start_ns, end_ns;
	uint8_t fn; /* enum fn_id */
	int8_t op;  /* run_operator: index in op_names, -1 for an unknown name */
};

struct tlog {
	pid_t tid;
	char name[16];
	struct rec *recs;
	size_t len, cap, max;
	uint64_t dropped;
};

extern _Thread_local struct tlog *tl_log; /* NULL: this thread does not log */

bool tlog_grow(struct tlog *l);

static inline void log_call(enum fn_id fn, uint64_t start_ns, uint64_t end_ns, int op)
{
	struct tlog *l = tl_log;

	if (!l)
		return;
	if (l->len == l->cap && !tlog_grow(l)) {
		l->dropped++;
		return;
	}
	l->recs[l->len++] = (struct rec){.start_ns = start_ns, .end_ns = end_ns, .fn = fn, .op = op};
}

/* The log file: a header, then each thread's calls in start order. 0, or -1 when writing
 * failed. */
int write_log(FILE *out, struct tlog *const *logs, int n, uint64_t written);

#endif
