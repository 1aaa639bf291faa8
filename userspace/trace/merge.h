/* SPDX-License-Identifier: MIT */
/* Merge: one timeline from several recordings, aligned on their clocks, processes kept apart
 * (merge.c says how). */
#ifndef TRACER_MERGE_H
#define TRACER_MERGE_H

#include <stddef.h>

/* Merges the n traces at paths into out (".gz" compresses); says what went wrong on stderr.
 * 0 or -errno. */
int trace_merge(char *const *paths, size_t n, const char *out);

#endif
