/* SPDX-License-Identifier: MIT */
/* The periodic on-CPU tick that reads Python stacks: one software cpu-clock perf event per
 * online CPU (no hardware PMU needed), each running bpf/python.bpf.c's py_on_tick. Its period
 * is not steady: a pipeline paced in step with a steady tick (batches every 12 ms against a
 * 1 ms tick) is read at the same point of each cycle, and what changed between two reads,
 * placed midway, is placed early or late by the same amount every cycle, never averaging out
 * (a stage's total 5.4% short in a CI run; 0.79 to 1.22 of the logged on py_paced.py). A new
 * period counts from the change (the kernel restarts the timer): changes at steady times would
 * put the tick back in step, so they come from the reader's timer, whose waits are drawn at
 * random (record/recording.h, POLL_MS; changed every 50 ms of a steady timer, the total came
 * out 1.061 in 1 run of 12 with the target SCHED_FIFO, 1.064 in a CI run). */
#ifndef TRACER_PY_TICKS_H
#define TRACER_PY_TICKS_H

#include <stddef.h>
#include <stdint.h>

/* Each period lies within this fraction of 1/hz either way: the longest, for the reader */
#define PY_TICK_DITHER 0.1

struct bpf_program;
struct bpf_link;

struct py_ticks {
	struct bpf_link **links;
	int *fds; /* their events (the links own them) */
	size_t nlinks;
	uint64_t period_ns; /* 1/hz */
	uint64_t rand;
};

/* Opens the events at hz per CPU and attaches prog. 0 or -errno (nothing stays open). */
int py_ticks__attach(struct py_ticks *t, struct bpf_program *prog, unsigned int hz);
void py_ticks__detach(struct py_ticks *t);
/* Gives each CPU's tick a new period, within PY_TICK_DITHER of 1/hz, counted from now: called
 * every few tens of milliseconds at random times, no cycle of a pipeline stays in step. */
void py_ticks__dither(struct py_ticks *t);

#endif
