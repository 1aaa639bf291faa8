/* SPDX-License-Identifier: MIT */
/* `tracer top`: the recording as a live view on standard output, redrawn every second — the
 * stages with their state shares, the verdict, the spans with the most self time lately with
 * their rates and percentiles — like `perf top` and `py-spy top`. On a terminal it takes the
 * alternate screen, fits the window (over ssh, any size) and quits on q; piped, it prints one
 * frame after another. */
#ifndef TRACER_TOP_H
#define TRACER_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <termios.h>

struct recording;

struct top {
	bool on;
	bool tty;	/* standard output is a terminal: redraw in place */
	bool raw_keys;	/* standard input put in non-canonical mode: restore at the end */
	struct termios saved;
	uint64_t last_draw;
	uint64_t last_spans;
};

/* Takes the terminal (when it is one); the key fd to watch is standard input when raw_keys. */
void top__start(struct top *t);
/* A key arrived on standard input: true if it asks to quit (q, Q, Ctrl-D or end of input). */
bool top__key(struct top *t);
/* A frame, if a second passed since the last one. */
void top__draw(struct top *t, struct recording *r, uint64_t now);
/* Gives the terminal back as it was. */
void top__stop(struct top *t);

#endif
