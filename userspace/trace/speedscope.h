/* SPDX-License-Identifier: MIT */
/* Export to speedscope's own file format (https://www.speedscope.app/file-format-schema.json):
 * one evented profile per thread with spans, its spans as open/close events in nesting order.
 * Frames are keyed by span name alone: speedscope's Chrome importer keys them by name and args,
 * so every call with distinct args became a frame of its own. */
#ifndef TRACER_SPEEDSCOPE_H
#define TRACER_SPEEDSCOPE_H

#include <stddef.h>
#include <stdint.h>

/* Distinct span names kept apart at most; the spans of further names share one frame. */
#define SPEEDSCOPE_MAX_FRAMES 1000000
#define SPEEDSCOPE_OTHER "(other names)"

struct speedscope_stats {
	uint64_t spans;	     /* written */
	uint64_t clipped;    /* overlapped the end of an enclosing span on their thread: cut
			      * there (speedscope needs strict nesting) */
	uint64_t ignored_be; /* B/E events: only complete (X) spans are exported, as report does */
};

/* Reads in, writes the profile to out (NULL: stdout; ".gz" compresses). 0, or -errno with a
 * one-line message in err. */
int trace_speedscope(const char *in, const char *out, struct speedscope_stats *st, char *err,
		     size_t errlen);

#endif
