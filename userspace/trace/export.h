/* SPDX-License-Identifier: MIT */
/* Export: one row per span of a trace (name, category, pid, tid, thread, start_ns, dur_ns,
 * args) as JSON lines or CSV, the shape BigQuery, DuckDB, Spark and pandas load directly. */
#ifndef TRACER_EXPORT_H
#define TRACER_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads in, writes the rows to out (NULL: stdout; ".gz" compresses). 0, or -errno with a
 * one-line message in err. */
int trace_export(const char *in, const char *out, bool csv, uint64_t *rows, char *err,
		 size_t errlen);

#endif
