/* SPDX-License-Identifier: MIT */
/* The periodic on-CPU tick that reads Python stacks: one software cpu-clock perf event per
 * online CPU (no hardware PMU needed), each running bpf/python.bpf.c's py_on_tick. */
#ifndef TRACER_PY_TICKS_H
#define TRACER_PY_TICKS_H

#include <stddef.h>

struct bpf_program;
struct bpf_link;

struct py_ticks {
	struct bpf_link **links;
	size_t nlinks;
};

/* Opens the events at hz per CPU and attaches prog. 0 or -errno (nothing stays open). */
int py_ticks__attach(struct py_ticks *t, struct bpf_program *prog, unsigned int hz);
void py_ticks__detach(struct py_ticks *t);

#endif
