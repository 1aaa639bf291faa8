// SPDX-License-Identifier: MIT
#include "analyze/sketch.h"

#include "util/util.h"

#include <math.h>
#include <stdlib.h>
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

void sketch__free(struct sketch *s)
{
	free(s->buckets);
	sketch__init(s);
}

/* Holds buckets lo .. hi (and those held already), with room to grow by half again on the side
 * that grew: values added one by one widen the range in few steps. */
static void cover(struct sketch *s, int lo, int hi)
{
	int nlo, nhi, slack;
	uint64_t *b;

	if (s->nb && lo >= s->lo && hi < s->lo + s->nb)
		return;
	nlo = s->nb && s->lo < lo ? s->lo : lo;
	nhi = s->nb && s->lo + s->nb - 1 > hi ? s->lo + s->nb - 1 : hi;
	slack = (nhi - nlo + 1) / 2;
	if (s->nb && nlo < s->lo)
		nlo = nlo - slack < 0 ? 0 : nlo - slack;
	if (s->nb && nhi > s->lo + s->nb - 1)
		nhi = nhi + slack >= SKETCH_BUCKETS ? SKETCH_BUCKETS - 1 : nhi + slack;
	b = xcalloc(nhi - nlo + 1, sizeof(*b));
	if (s->nb)
		memcpy(b + (s->lo - nlo), s->buckets, s->nb * sizeof(*b));
	free(s->buckets);
	s->buckets = b;
	s->lo = nlo;
	s->nb = nhi - nlo + 1;
}

void sketch__add(struct sketch *s, uint64_t v)
{
	int i;

	s->count++;
	if (v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	if (!v) {
		s->zeros++;
		return;
	}
	i = bucket_of(v);
	cover(s, i, i);
	s->buckets[i - s->lo]++;
}

void sketch__merge(struct sketch *dst, const struct sketch *src)
{
	dst->count += src->count;
	dst->zeros += src->zeros;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	if (!src->nb)
		return;
	cover(dst, src->lo, src->lo + src->nb - 1);
	for (int i = 0; i < src->nb; i++)
		dst->buckets[src->lo + i - dst->lo] += src->buckets[i];
}

double sketch__bucket_value(int i)
{
	return 2 * pow(gamma_, i) / (gamma_ + 1);
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
	for (int i = 0; i < s->nb; i++) {
		seen += s->buckets[i];
		if (seen < rank)
			continue;
		v = sketch__bucket_value(s->lo + i);
		/* the exact extremes are known: never answer outside them */
		if (v < s->min)
			return s->min;
		if (v > s->max)
			return s->max;
		return (uint64_t)llround(v);
	}
	return s->max;
}
