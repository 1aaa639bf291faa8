/* SPDX-License-Identifier: MIT */
/* How a waking tells it runs in an interrupt (bpf/sched.bpf.c): by reading the kernel's preempt
 * count, or, where that cannot be done, by six interrupt programs keeping count. */
#ifndef TRACER_IRQ_CTX_H
#define TRACER_IRQ_CTX_H
#include <stdbool.h>
#include <stdint.h>

struct btf;
struct tracer_bpf;

/* The preempt count's and cpu_number's offsets from runqueues in the per-CPU area, from the
 * kernel's BTF (__preempt_count and cpu_number, or pcpu_hot's fields in 6.2-6.14). 0 when found;
 * -ENOENT when a variable is not there. */
int irq_ctx__offsets(const struct btf *vmlinux, int64_t *pc_delta, int64_t *cpu_delta);

/* Before load: sets the offsets in the programs' settings (none found: left 0). */
void irq_ctx__configure(struct tracer_bpf *skel);

/* After load: runs the check once; when it passes, wakings read the preempt count and the six
 * interrupt programs are not attached. TRACER_IRQ_PROGRAMS=1 keeps the programs (tests). Returns
 * whether the preempt count is read. */
bool irq_ctx__choose(struct tracer_bpf *skel);

#endif
