/* SPDX-License-Identifier: MIT */
/* Repair: closes a trace that was cut short (tracer killed with SIGKILL, the machine stopped):
 * every complete event line is kept, the end a recording writes is added. */
#ifndef TRACER_REPAIR_H
#define TRACER_REPAIR_H

/* Writes the repaired trace under path's name and keeps the file as it was as path.cut; a
 * complete trace (whoever wrote it) is left as it is. Says what it did or what went wrong on
 * stderr. 0 or -errno. */
int trace_repair(const char *path);

#endif
