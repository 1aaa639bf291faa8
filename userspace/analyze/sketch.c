// SPDX-License-Identifier: MIT
#include "analyze/sketch.h"

#include <math.h>
#include <string.h>

/* gamma = (1 + a) / (1 - a): bucket i holds (gamma^(i-1), gamma^i], whose midpoint in the
 * 2/(1/x+1/y) sense is within a of every value in it. */
static const double gamma_ = (1 + SKETCH_REL_ERR) / (1 - SKETCH_REL_ERR);

void sketch__init(struct sketch *s)
{
	memset(s, 0, sizeof(*s));
	s->min = UINT64_MAX;
}

static int bucket_of(uint64_t v)
{
	int i = (int)ceil(log((double)v) / log(gamma_));

	return i < 0 ? 0 : i >= SKETCH_BUCKETS ? SKETCH_BUCKETS - 1 : i;
}

void sketch__add(struct sketch *s, uint64_t v)
{
	s->count++;
	if (v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	if (!v)
		s->zeros++;
	else
		s->buckets[bucket_of(v)]++;
}

void sketch__merge(struct sketch *dst, const struct sketch *src)
{
	dst->count += src->count;
	dst->zeros += src->zeros;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	for (int i = 0; i < SKETCH_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
}

uint64_t sketch__quantile(const struct sketch *s, double q)
{
	uint64_t rank, seen;
	double v;

	if (!s->count)
		return 0;
	if (q <= 0)
		return s->min;
	if (q >= 1)
		return s->max;
	rank = (uint64_t)ceil(q * s->count);
	if (rank < 1)
		rank = 1;
	seen = s->zeros;
	if (seen >= rank)
		return 0;
	for (int i = 0; i < SKETCH_BUCKETS; i++) {
		seen += s->buckets[i];
		if (seen < rank)
			continue;
		v = 2 * pow(gamma_, i) / (gamma_ + 1);
		/* the exact extremes are known: never answer outside them */
		if (v < s->min)
			return s->min;
		if (v > s->max)
			return s->max;
		return (uint64_t)llround(v);
	}
	return s->max;
}
