// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The calls still open at the stop, for kernels before 6.9: userspace reads a thread's task
 * storage through a pidfd of the thread, and only 6.9 (PIDFD_THREAD) opens one for a thread
 * other than a process's main one. A task iterator (5.8) reaches every thread's storage
 * instead; userspace runs it once, after the probes are gone (record/finish.c). */
#include "tracer.bpf.h"

/* Writes each thread's stack of open calls, whole, as struct span_stack (its pid and tid in
 * it); threads with none write nothing. */
SEC("iter/task")
int open_calls(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct span_stack *st;

	if (!t)
		return 0;
	st = task_storage(&stacks, t, false);
	if (st && st->depth)
		bpf_seq_write(ctx->meta->seq, st, sizeof(*st));
	return 0;
}
