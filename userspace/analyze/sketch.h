/* SPDX-License-Identifier: MIT */
/* A mergeable quantile sketch with relative error (log-spaced buckets, as DDSketch): any
 * quantile of the durations added is returned within SKETCH_REL_ERR of a true value, in fixed
 * memory, without keeping the durations. */
#ifndef TRACER_SKETCH_H
#define TRACER_SKETCH_H

#include <stdint.h>

#define SKETCH_REL_ERR 0.01
#define SKETCH_BUCKETS 2304 /* covers 1 ns .. 2^64 ns at 1% */

struct sketch {
	uint64_t count;
	uint64_t zeros; /* values of 0 */
	uint64_t min, max;
	uint64_t buckets[SKETCH_BUCKETS];
};

void sketch__init(struct sketch *s);
void sketch__add(struct sketch *s, uint64_t v);
void sketch__merge(struct sketch *dst, const struct sketch *src);
/* The q-quantile (0 <= q <= 1) with "lower" rank rule: the value of rank ceil(q * count). */
uint64_t sketch__quantile(const struct sketch *s, double q);

#endif
