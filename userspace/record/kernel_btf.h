/* SPDX-License-Identifier: MIT */
/* Whether the kernel has BTF, which every BPF program of tracer needs (CO-RE relocations,
 * tp_btf programs, task storage): without it libbpf fails with "No such process". */
#ifndef TRACER_KERNEL_BTF_H
#define TRACER_KERNEL_BTF_H

#define KERNEL_BTF_PATH "/sys/kernel/btf/vmlinux"

/* 0 when path (KERNEL_BTF_PATH; tests give another) is readable; else -errno, after one line
 * saying that the kernel has no BTF and what to do. */
int kernel_btf__check(const char *path);

#endif
