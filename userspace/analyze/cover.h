/* SPDX-License-Identifier: MIT */
/* The time a thread's spans cover, as they arrive in completion order (children before their
 * parents): what a new span finds already covered inside it is its children's time, so its
 * self time is its duration minus that; and a class of spans (queue waits) counted through
 * it is counted once where its spans nest or overlap. The summary at stop and `tracer report`
 * both compute self time here, on the spans in the same order, so they agree. */
#ifndef TRACER_COVER_H
#define TRACER_COVER_H

#include <stddef.h>
#include <stdint.h>

struct cover_iv {
	int64_t s, e;
};

/* Older intervals folded together when the recent ones fill up: memory stays bounded. */
struct cover_chunk {
	int64_t s, e;
	uint64_t len; /* time covered in [s, e) */
};

struct cover {
	struct cover_iv *v; /* the union of the spans so far: disjoint, by start */
	size_t n, cap;
	struct cover_chunk *chunks; /* older than v[0], by start (at most COVER_CHUNKS) */
	size_t nchunks;
	uint64_t approx; /* spans that reached partly into a chunk: their count is estimated */
};

/* Adds the span [s, e) and returns how much of it spans added before already covered. */
uint64_t cover__add(struct cover *c, int64_t s, int64_t e);
void cover__free(struct cover *c);

#endif
