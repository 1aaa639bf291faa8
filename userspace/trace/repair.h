/* SPDX-License-Identifier: MIT */
/* Repair: closes a trace that was cut short (tracer killed with SIGKILL, the machine stopped):
 * every complete event line is kept, the end of the file is written again. */
#ifndef TRACER_REPAIR_H
#define TRACER_REPAIR_H

/* Repairs the trace at path in place (a complete one is left as it is); says what it did or
 * what went wrong on stderr. 0 or -errno. */
int trace_repair(const char *path);

#endif
