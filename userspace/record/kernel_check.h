/* SPDX-License-Identifier: MIT */
/* The kernel's BPF features tracer's programs cannot do without, asked for before loading. */
#ifndef KERNEL_CHECK_H
#define KERNEL_CHECK_H
#include <stddef.h>

/* 0 when the kernel has them all; else -ENOTSUP with one line in err naming what is missing,
 * from which kernel on each exists, and what to do. */
int kernel_check__bpf(char *err, size_t n);

#endif
