/* SPDX-License-Identifier: MIT */
/* Finding the CPython interpreter a process runs: the object that defines _PyRuntime (the
 * python3.N executable or libpython3.N.so), its version and where _PyRuntime is in memory. */
#ifndef TRACER_PY_PROC_H
#define TRACER_PY_PROC_H

#include "python/py_offsets.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct py_proc {
	int pid;
	int major, minor;
	const struct py_version *ver; /* NULL: a version this build has no offsets for */
	uint64_t runtime;	      /* address of _PyRuntime */
	char object[64];	      /* basename of the object that defines it */
};

/* 0 when pid runs a CPython (p->ver NULL if this build cannot read that version), -ENOENT
 * when it does not, other -errno when its maps cannot be read. */
int py_proc__detect(int pid, struct py_proc *p);

/* Reads len bytes at addr of pid's memory (process_vm_readv): 0, or -EFAULT (a short read). */
int py_mem__read(int pid, uint64_t addr, void *buf, size_t len);

#endif
