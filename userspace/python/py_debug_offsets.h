/* SPDX-License-Identifier: MIT */
/* CPython 3.13 on starts _PyRuntime with _Py_DebugOffsets: the "xdebugpy" cookie, its version
 * and the offsets a debugger needs. Reading them from the target itself checks the build's
 * table against the interpreter really running (a patch release, a vendor's build). */
#ifndef TRACER_PY_DEBUG_OFFSETS_H
#define TRACER_PY_DEBUG_OFFSETS_H

#include "python/py_offsets.h"

#include <stddef.h>
#include <stdint.h>

/* Reads the _Py_DebugOffsets at runtime in pid's memory, laid out as `table` says (the build's
 * table of the same minor version), into *out (a copy of table with the fields the debug
 * offsets give replaced; the rest, such as the str state's bits, stay the table's). 0 with
 * *changed the number of fields that differ from the table; or -errno with why[] saying what
 * was wrong: -ENOEXEC when the table cannot be used either (a free-threaded build). */
int py_debug_offsets__read(int pid, uint64_t runtime, int major, int minor,
			   const struct py_offsets *table, struct py_offsets *out, int *changed,
			   char *why, size_t len);

#endif
