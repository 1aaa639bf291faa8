/* SPDX-License-Identifier: MIT */
/* The timeline section of `tracer report --html` (timeline_read.h builds what it draws). */
#ifndef TRACER_TIMELINE_HTML_H
#define TRACER_TIMELINE_HTML_H

#include "analyze/timeline_read.h"

#include <stdio.h>

/* Writes the section: a note on the window, legends, the canvas, the data and the script that
 * draws it. rec_start, rec_end: the recording, for the note. */
void timeline_html__write(FILE *f, const struct timeline *tl, int64_t rec_start, int64_t rec_end);

#endif
