/* SPDX-License-Identifier: MIT */
/* The Mann–Whitney U test (Wilcoxon rank-sum) for `tracer diff`: did a span's calls get slower
 * or faster from run A to run B? It compares ranks, not means, so it fits latency distributions
 * (skewed, long-tailed, with outliers) and makes no assumption on their shape. It runs on
 * histograms: the report's quantile sketches (sketch.h) already hold every call's duration in
 * 1%-wide buckets, so the test sees every call with bounded memory; calls in one bucket count as
 * ties (midranks). The p-value is the normal approximation with tie and continuity corrections,
 * fit for the counts a recording has (tens of calls and up). */
#ifndef TRACER_MANN_WHITNEY_H
#define TRACER_MANN_WHITNEY_H

#include "analyze/sketch.h"

#include <stddef.h>
#include <stdint.h>

struct mann_whitney {
	uint64_t na, nb;
	double u_b;   /* pairs (a, b) with b > a, ties counting one half */
	double z;     /* (u_b - na nb / 2) / its standard deviation, continuity-corrected */
	double p;     /* two-sided; 1 when a side is empty or every value ties */
	double delta; /* Cliff's delta, P(b > a) - P(b < a), -1..1: the effect's size */
};

/* Counts per ordered bin: a[i], b[i] values of A and B in bin i (bins ascending). */
void mann_whitney__bins(const uint64_t *a, const uint64_t *b, size_t nbins,
			struct mann_whitney *out);
/* The same over two sketches' buckets (values of 0 are the lowest bin). */
void mann_whitney__sketches(const struct sketch *a, const struct sketch *b,
			    struct mann_whitney *out);

#endif
