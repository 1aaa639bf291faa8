/* SPDX-License-Identifier: MIT */
/* Finding the CPython interpreter a process runs: the object that defines _PyRuntime (the
 * python3.N executable or libpython3.N.so), its version and where _PyRuntime is in memory. */
#ifndef TRACER_PY_PROC_H
#define TRACER_PY_PROC_H

#include "python/py_offsets.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum py_offsets_from {
	PY_OFF_NONE,  /* a version this build cannot read: frames not read */
	PY_OFF_TABLE, /* the build's table of that version */
	PY_OFF_DEBUG, /* the target's own _Py_DebugOffsets (3.13 on), the table for the rest (the
		       * newest table for a version with none of its own) */
};

struct py_proc {
	int pid;
	int major, minor;
	const struct py_version *ver; /* the build's table; NULL: none of this version's own */
	struct py_offsets off;	      /* what its frames are read with */
	enum py_offsets_from from;
	int dbg_changed;	      /* PY_OFF_DEBUG: fields that differ from the table */
	int table_minor;	      /* a newer version's (3.14 on): the table taken for the rest */
	int layout_minor;	      /* ... and the _Py_DebugOffsets layout its offsets are read by */
	char dbg_why[96];	      /* why the debug offsets were not used, if they exist */
	uint64_t runtime;	      /* address of _PyRuntime */
	char object[64];	      /* basename of the object that defines it */
};

/* 0 when pid runs a CPython (p->from PY_OFF_NONE if this build cannot read that version),
 * -ENOENT when it does not, other -errno when its maps cannot be read. */
int py_proc__detect(int pid, struct py_proc *p);

/* "its own debug offsets" or "the build's 3.N table": what p's frames are read with. */
const char *py_proc__offsets_from(const struct py_proc *p, char *buf, size_t len);

/* Reads len bytes at addr of pid's memory (process_vm_readv): 0, or -EFAULT (a short read). */
int py_mem__read(int pid, uint64_t addr, void *buf, size_t len);

#endif
