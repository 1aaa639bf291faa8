/* SPDX-License-Identifier: MIT */
/* Python's names of a process's threads (threading.Thread.name), read from its memory:
 * sys.modules["threading"]._active maps each thread's ident to its Thread object, and the
 * interpreter's thread states map idents to kernel tids. */
#ifndef TRACER_PY_THREADS_H
#define TRACER_PY_THREADS_H

#include "python/py_proc.h"

typedef void (*py_thread_name_fn)(void *ctx, int pid, int tid, const char *name);

/* Calls fn for every thread of p that threading names. Returns how many, or -errno (the
 * threading module is not imported: -ENOENT). */
int py_threads__names(const struct py_proc *p, py_thread_name_fn fn, void *ctx);

#endif
