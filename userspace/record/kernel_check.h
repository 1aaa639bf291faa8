/* SPDX-License-Identifier: MIT */
/* The kernel's BPF features tracer's programs cannot do without, asked for before loading. */
#ifndef KERNEL_CHECK_H
#define KERNEL_CHECK_H
#include <stdbool.h>
#include <stddef.h>

/* 0 when the kernel has them all; 1 when it lacks only what the compat object does without
 * (5.10 to 5.16), with err the line saying so; else -ENOTSUP with one line in err naming what
 * is missing, from which kernel on each exists, and what to do. */
int kernel_check__bpf(char *err, size_t n);

/* Whether a pidfd can name any thread (PIDFD_THREAD, 6.9): the calls open at the stop are
 * then read without the task iterator. TRACER_NO_PIDFD_THREAD pretends not. */
bool kernel_check__pidfd_thread(void);

#endif
