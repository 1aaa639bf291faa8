/* SPDX-License-Identifier: MIT */
/* The live status line on stderr while recording, when stderr is a terminal: elapsed time,
 * spans per second, threads, lost records, file size; one line, rewritten in place. */
#ifndef TRACER_STATUS_H
#define TRACER_STATUS_H

#include <stdbool.h>
#include <stdint.h>

struct status {
	bool on;
	bool shown;
	uint64_t last_ns, last_spans;
};

/* On when stderr is a terminal and messages are not silenced (-q). */
void status__init(struct status *s, bool quiet);
void status__update(struct status *s, uint64_t now_ns, uint64_t elapsed_ns, uint64_t spans,
		    uint32_t threads, uint64_t lost, uint64_t bytes, bool paused);
/* Clears the line before other output. */
void status__clear(struct status *s);

#endif
