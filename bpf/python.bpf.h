/* SPDX-License-Identifier: MIT */
/* What the other BPF files call in bpf/python.bpf.c (BPF side only). */
#ifndef TRACER_PYTHON_BPF_H
#define TRACER_PYTHON_BPF_H

#include "events.h"

/* Set by userspace once a traced process runs a readable CPython: until then, probe hits skip
 * the Python read altogether. */
extern volatile __u32 py_active;

/* Reads the current thread's Python stack if its process runs a known interpreter, and submits
 * it (enum py_read_reason), at ts, or at the time it takes itself when ts is 0. A probe hit
 * (PY_READ_PROBE) gives its stack pointer sp, and outer_sp, the stack pointer of the probed
 * native call it is nested in (0: none): see read_stack. Returns the time of the read, or 0
 * when nothing was read. */
__u64 py_read(__u64 ts, __u32 reason, __u64 sp, __u64 outer_sp);

/* The current thread woke another at now (sched_waking, not from an interrupt): its next
 * preemption may be that waking's (PY_WOKE). */
void py_woke(__u64 now);

/* (sched.bpf.c) The current thread, traced, runs on this CPU: if the kernel did not report its
 * switch in, it is reported now, at the time the scheduler logged. */
int switch_in_check(void);

#endif
