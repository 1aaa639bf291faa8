/* SPDX-License-Identifier: MIT */
/* A mergeable quantile sketch with relative error (log-spaced buckets, as DDSketch): any
 * quantile of the durations added is returned within SKETCH_REL_ERR of a true value, without
 * keeping the durations. Only the buckets from the smallest value's to the largest's are held
 * (a name whose spans all take about as long: a few buckets, not the 18 KB of all of them), so
 * a report over 200,000 names stays small; at most SKETCH_BUCKETS. */
#ifndef TRACER_SKETCH_H
#define TRACER_SKETCH_H

#include <stdint.h>

#define SKETCH_REL_ERR 0.01
#define SKETCH_BUCKETS 2304 /* covers 1 ns .. 2^64 ns at 1% */

struct sketch {
	uint64_t count;
	uint64_t zeros; /* values of 0 */
	uint64_t min, max;
	int lo, nb;	   /* the buckets held: lo .. lo + nb - 1 */
	uint64_t *buckets; /* buckets[i]: bucket lo + i; NULL while nb is 0 */
};

/* On a new sketch, or one freed. */
void sketch__init(struct sketch *s);
void sketch__free(struct sketch *s);
void sketch__add(struct sketch *s, uint64_t v);
void sketch__merge(struct sketch *dst, const struct sketch *src);
/* The q-quantile (0 <= q <= 1) with "lower" rank rule: the value of rank ceil(q * count). */
uint64_t sketch__quantile(const struct sketch *s, double q);
/* The value bucket i (0 <= i < SKETCH_BUCKETS) stands for. */
double sketch__bucket_value(int i);

#endif
