/* SPDX-License-Identifier: MIT */
/* With --no-follow, the targets' child processes are not traced: a pipeline whose work runs in
 * them (a DataLoader's workers, a multiprocessing pool) would look idle. Their CPU time over the
 * recording is read from /proc, and the busy ones are named after the verdict. */
#ifndef TRACER_CHILDREN_H
#define TRACER_CHILDREN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct child_cpu {
	int pid;
	unsigned long long start_time; /* with the pid, names one process */
	uint64_t cpu_ns;
};

struct untraced_children {
	struct child_cpu *v;
	size_t n;
};

/* The descendants of the targets now, with their CPU time so far. */
void children__start(struct untraced_children *c, const int *targets, size_t n);
/* One line naming the descendants of the targets that used at least a twentieth of a CPU over
 * wall_ns (those born during the recording counted from their start); nothing when none did. */
void children__print(const struct untraced_children *c, const int *targets, size_t n,
		     uint64_t wall_ns, FILE *f);
void children__free(struct untraced_children *c);

#endif
