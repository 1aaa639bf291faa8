// SPDX-License-Identifier: MIT
/* Unit test of userspace/analyze/mann_whitney.c: U, Cliff's delta and the p-value against a
 * textbook value and against a direct computation over pooled midranks; and on sketches, that
 * samples of one distribution are not told apart while a 2x slower one is. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "analyze/diff.h"
#include "analyze/mann_whitney.h"
#include "unit.h"

static uint64_t lcg_state;

static double unit_rand(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return ((double)(lcg_state >> 11) + 0.5) / (double)(1ull << 53);
}

/* A latency-like value: log-normal around median ns, with a long tail. */
static uint64_t latency(double median)
{
	double g = sqrt(-2 * log(unit_rand())) * cos(2 * M_PI * unit_rand());

	return (uint64_t)(median * exp(0.4 * g));
}

/* The test done the textbook way: pool the values, midranks, the rank-sum's permutation
 * variance Σ(r - (N+1)/2)² na nb / (N (N - 1)). */
static void by_midranks(const int *a, size_t na, const int *b, size_t nb, double *u, double *z,
			double *delta)
{
	size_t n = na + nb;
	double rb = 0, ss = 0, mean = (n + 1) / 2.0, var, gt = 0, lt = 0;

	for (size_t i = 0; i < n; i++) {
		int v = i < na ? a[i] : b[i - na];
		double less = 0, same = 0;

		for (size_t j = 0; j < n; j++) {
			int w = j < na ? a[j] : b[j - na];

			less += w < v;
			same += w == v;
		}
		double r = less + (same + 1) / 2; /* midrank */

		ss += (r - mean) * (r - mean);
		if (i >= na)
			rb += r;
	}
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++) {
			gt += b[j] > a[i];
			lt += b[j] < a[i];
		}
	*u = rb - nb * (nb + 1) / 2.0;
	var = ss * na * nb / (n * (n - 1.0));
	*z = (fabs(*u - na * nb / 2.0) - 0.5) / sqrt(var);
	if (*u < na * nb / 2.0)
		*z = -*z;
	*delta = (gt - lt) / (na * nb);
}

/* Values 0..nbins-1 as bin counts. */
static void to_bins(const int *v, size_t n, uint64_t *bins)
{
	for (size_t i = 0; i < n; i++)
		bins[v[i]]++;
}

static void test_textbook_value(void)
{
	/* every b above every a: U = 25, p (asymptotic, continuity-corrected) 0.012185780 as
	 * scipy.stats.mannwhitneyu([1..5], [6..10], method="asymptotic") gives */
	uint64_t a[11] = { 0 }, b[11] = { 0 };
	struct mann_whitney m;

	for (int i = 1; i <= 5; i++) {
		a[i] = 1;
		b[i + 5] = 1;
	}
	mann_whitney__bins(a, b, 11, &m);
	CHECK(m.na == 5 && m.nb == 5);
	CHECK(m.u_b == 25);
	CHECK(m.delta == 1);
	CHECK(fabs(m.p - 0.012185780) < 1e-8);
	CHECK(m.z > 2.5 && m.z < 2.51);
	/* the other way round: the same p, the opposite sign */
	mann_whitney__bins(b, a, 11, &m);
	CHECK(m.u_b == 0 && m.delta == -1 && m.z < -2.5 && fabs(m.p - 0.012185780) < 1e-8);
}

static void test_ties_match_midranks(void)
{
	static const int a[] = { 1, 1, 2, 3, 3, 3, 5, 7, 7, 9, 4, 4 };
	static const int b[] = { 2, 3, 3, 4, 5, 5, 5, 6, 7, 8, 8, 9, 9, 1 };
	uint64_t ba[10] = { 0 }, bb[10] = { 0 };
	struct mann_whitney m;
	double u, z, delta;

	to_bins(a, 12, ba);
	to_bins(b, 14, bb);
	mann_whitney__bins(ba, bb, 10, &m);
	by_midranks(a, 12, b, 14, &u, &z, &delta);
	CHECK(fabs(m.u_b - u) < 1e-9);
	CHECK(fabs(m.z - z) < 1e-9);
	CHECK(fabs(m.delta - delta) < 1e-12);
	CHECK(fabs(m.p - erfc(fabs(z) / sqrt(2))) < 1e-12);
	CHECK(m.p > 0 && m.p < 1);
}

static void test_degenerate(void)
{
	uint64_t a[3] = { 0, 4, 0 }, b[3] = { 0, 7, 0 }, none[3] = { 0 };
	struct mann_whitney m;

	mann_whitney__bins(a, b, 3, &m); /* every value tied */
	CHECK(m.p == 1 && m.delta == 0 && m.z == 0);
	mann_whitney__bins(a, none, 3, &m); /* B has no calls */
	CHECK(m.p == 1 && m.nb == 0 && m.na == 4);
}

static void fill(struct sketch *s, size_t n, double median)
{
	sketch__init(s);
	for (size_t i = 0; i < n; i++)
		sketch__add(s, latency(median));
}

static void test_sketches(void)
{
	struct sketch a, b;
	struct mann_whitney m;
	int told_apart = 0;

	/* the same distribution, 20 pairs of samples: at p < 0.001 none is told apart */
	lcg_state = 1;
	for (int i = 0; i < 20; i++) {
		fill(&a, 5000, 200000);
		fill(&b, 3000, 200000);
		mann_whitney__sketches(&a, &b, &m);
		CHECK(m.na == 5000 && m.nb == 3000);
		told_apart += m.p < 0.001;
		CHECK(fabs(m.delta) < 0.1);
		sketch__free(&a);
		sketch__free(&b);
	}
	CHECK(told_apart == 0);
	/* 2x slower: certain, and nearly every pair */
	fill(&a, 2000, 200000);
	fill(&b, 1000, 400000);
	mann_whitney__sketches(&a, &b, &m);
	CHECK(m.p < 1e-12 && m.z > 0 && m.delta > 0.7);
	mann_whitney__sketches(&b, &a, &m);
	CHECK(m.p < 1e-12 && m.z < 0 && m.delta < -0.7);
	sketch__free(&b);
	/* 5% slower with few calls: not enough to tell */
	fill(&b, 30, 210000);
	mann_whitney__sketches(&a, &b, &m);
	CHECK(m.p > 0.001);
	sketch__free(&b);
	/* zeros and disjoint bucket ranges line up: all of B's zeros below all of A */
	sketch__init(&b);
	for (int i = 0; i < 50; i++)
		sketch__add(&b, 0);
	mann_whitney__sketches(&a, &b, &m);
	CHECK(m.u_b == 0 && m.delta == -1 && m.p < 1e-12);
	sketch__free(&a);
	sketch__free(&b);
}

/* tracer diff's rule: a small p, an effect that is not negligible and a median that moved. */
static void test_significance_rule(void)
{
	struct mann_whitney m = { .na = 500, .nb = 400, .p = 1e-6, .delta = 0.4 };

	CHECK(diff__significant(&m, 1000, 1100));
	CHECK(diff__significant(&m, 1100, 1000)); /* faster too */
	CHECK(!diff__significant(&m, 1000, 1040)); /* the median moved 4% */
	m.delta = -0.1;
	CHECK(!diff__significant(&m, 1000, 2000)); /* a negligible effect */
	m.delta = 0.4;
	m.p = 0.002;
	CHECK(!diff__significant(&m, 1000, 2000)); /* not sure enough */
	m.p = 1e-6;
	m.nb = 0;
	CHECK(!diff__significant(&m, 1000, 0)); /* nothing to compare */
	m.nb = 400;
	CHECK(diff__significant(&m, 0, 5)); /* from nothing to something */
}

int main(void)
{
	RUN(test_textbook_value);
	RUN(test_ties_match_midranks);
	RUN(test_degenerate);
	RUN(test_sketches);
	RUN(test_significance_rule);
	UNIT_EXIT();
}
