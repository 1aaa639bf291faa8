// SPDX-License-Identifier: MIT
/* Prints where _Py_DebugOffsets keeps the offsets tracer reads, as one C initializer of struct
 * py_version with only its dbg_* fields, for a CPython with no table of its own (3.14 on): the
 * rest of its offsets come from the target's debug offsets and the newest table. Needs only
 * the version's patchlevel.h and internal/pycore_debug_offsets.h, which is self-contained:
 *
 *   cc -I/usr/include/python3.14 tools/py_debug_layout.c -o py_debug_layout && ./py_debug_layout
 *
 * scripts/py-offsets.sh writes (or checks) userspace/python/offsets/debug-3.N.inc with it. */
#define Py_BUILD_CORE 1
#define _Py_NONSTRING /* pyport.h's, not included: an attribute only */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <patchlevel.h>
#include <internal/pycore_debug_offsets.h>

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 14
#error "before 3.14 _Py_DebugOffsets is in pycore_runtime.h: tools/py_offsets.c prints it"
#endif

#define F(field, value) printf("\t\t." #field " = %lu,\n", (unsigned long)(value))
#include "py_debug_layout.h"

int main(void)
{
	printf("\t{ .major = %d, .minor = %d, .off = {\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	print_debug_layout();
	printf("\t} },\n");
	return 0;
}
