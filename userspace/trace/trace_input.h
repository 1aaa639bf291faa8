/* SPDX-License-Identifier: MIT */
/* Opening a trace for reading. report, merge and export read their input two or three times
 * (names first, then the events); a pipe, FIFO or terminal can be read once. The first open of
 * such a path copies it into an unnamed temporary file (O_TMPFILE, mode 0600), which every
 * later open of the same path reads from its start: `zcat run.json.gz | tracer report
 * /dev/stdin` works, in bounded memory. */
#ifndef TRACER_TRACE_INPUT_H
#define TRACER_TRACE_INPUT_H

#include <stdint.h>

/* A read-only file descriptor at the start of path's content, or -errno: -EFBIG when a pipe
 * holds more than trace_input__spool_max() bytes (half the space free in TMPDIR, 16 GB at
 * most), -ENOEXEC when it does not start as a trace does. */
int trace_input__open(const char *path);
uint64_t trace_input__spool_max(void);

#endif
