// SPDX-License-Identifier: MIT
/* Unit test of userspace/analyze/sketch.c: quantiles against the exact ones of deterministic data. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "analyze/sketch.h"
#include "unit.h"

#define N 100000
#define EPS 1e-9

static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };

static uint64_t lcg_state;

static uint64_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return lcg_state >> 11; /* 53 good bits */
}

/* Uniform in [0, 1). */
static double unit_rand(void)
{
	return (double)lcg() / (double)(1ull << 53);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The value of rank ceil(q * n), as the sketch defines its quantile. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
	size_t rank = (size_t)ceil(q * n);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* Every quantile within the relative error; min, max and count exact. */
static void check_against_exact(const char *what, uint64_t *v, size_t n)
{
	struct sketch *s = malloc(sizeof(*s));
	uint64_t *sorted = malloc(n * sizeof(*v));

	sketch__init(s);
	for (size_t i = 0; i < n; i++)
		sketch__add(s, v[i]);
	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*v), cmp_u64);
	CHECK(s->count == n);
	CHECK(s->min == sorted[0]);
	CHECK(s->max == sorted[n - 1]);
	CHECK(sketch__quantile(s, 0) == sorted[0]);
	CHECK(sketch__quantile(s, 1) == sorted[n - 1]);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t exact = exact_quantile(sorted, n, qs[i]);
		uint64_t got = sketch__quantile(s, qs[i]);
		double err = exact ? fabs((double)got - (double)exact) / (double)exact
				   : (double)got;

		if (err > SKETCH_REL_ERR + EPS)
			fprintf(stderr, "  %s q=%g: got %llu, exact %llu, error %.5f\n", what,
				qs[i], (unsigned long long)got, (unsigned long long)exact, err);
		CHECK(err <= SKETCH_REL_ERR + EPS);
	}
	free(sorted);
	sketch__free(s);
	free(s);
}

static void test_uniform(void)
{
	uint64_t *v = malloc(N * sizeof(*v));

	lcg_state = 1;
	for (size_t i = 0; i < N; i++)
		v[i] = 1000 + (uint64_t)(unit_rand() * 10000000); /* 1us .. 10ms */
	check_against_exact("uniform", v, N);
	free(v);
}

static void test_exponential(void)
{
	uint64_t *v = malloc(N * sizeof(*v));

	lcg_state = 2;
	for (size_t i = 0; i < N; i++)
		v[i] = 1 + (uint64_t)(-log(1 - unit_rand()) * 2000000); /* mean 2ms */
	check_against_exact("exponential", v, N);
	free(v);
}

static void test_bimodal(void)
{
	uint64_t *v = malloc(N * sizeof(*v));

	lcg_state = 3;
	for (size_t i = 0; i < N; i++) {
		double u = unit_rand();

		/* 70% around 50us, 30% around 40ms */
		if (lcg() % 10 < 7)
			v[i] = 45000 + (uint64_t)(u * 10000);
		else
			v[i] = 30000000 + (uint64_t)(u * 20000000);
	}
	check_against_exact("bimodal", v, N);
	free(v);
}

/* A heavy tail over many decades, up to values near 2^63. */
static void test_wide_range(void)
{
	uint64_t *v = malloc(N * sizeof(*v));

	lcg_state = 4;
	for (size_t i = 0; i < N; i++)
		v[i] = 1000 + (uint64_t)exp2(10 + unit_rand() * 52);
	check_against_exact("wide", v, N);
	free(v);
}

static void test_zeros(void)
{
	struct sketch *s = malloc(sizeof(*s));

	sketch__init(s);
	for (int i = 0; i < 600; i++)
		sketch__add(s, 0);
	for (int i = 0; i < 400; i++)
		sketch__add(s, 1000000);
	CHECK(s->count == 1000);
	CHECK(s->zeros == 600);
	CHECK(s->min == 0);
	CHECK(s->max == 1000000);
	CHECK(sketch__quantile(s, 0) == 0);
	CHECK(sketch__quantile(s, 0.5) == 0);
	CHECK(sketch__quantile(s, 0.6) == 0);
	/* rank 601 is the first non-zero */
	CHECK(fabs(sketch__quantile(s, 0.601) - 1e6) <= 1e6 * SKETCH_REL_ERR);
	CHECK(sketch__quantile(s, 0.601) > 0);
	CHECK(fabs(sketch__quantile(s, 0.99) - 1e6) <= 1e6 * SKETCH_REL_ERR);
	CHECK(sketch__quantile(s, 1) == 1000000);

	/* only zeros */
	sketch__free(s);
	for (int i = 0; i < 10; i++)
		sketch__add(s, 0);
	CHECK(sketch__quantile(s, 0.5) == 0);
	CHECK(sketch__quantile(s, 0.999) == 0);
	CHECK(sketch__quantile(s, 1) == 0);
	sketch__free(s);
	free(s);
}

static void test_empty(void)
{
	struct sketch *s = malloc(sizeof(*s));

	sketch__init(s);
	CHECK(s->count == 0);
	CHECK(sketch__quantile(s, 0) == 0);
	CHECK(sketch__quantile(s, 0.5) == 0);
	CHECK(sketch__quantile(s, 0.99) == 0);
	CHECK(sketch__quantile(s, 1) == 0);
	free(s);
}

/* Single values, small and extreme, come back exactly (min and max bound the answer). */
static void test_single_values(void)
{
	static const uint64_t vals[] = { 1, 2, 3, 7, 999, 123456789, UINT64_MAX / 3, UINT64_MAX };
	struct sketch *s = malloc(sizeof(*s));

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		sketch__init(s);
		sketch__add(s, vals[i]);
		CHECK(sketch__quantile(s, 0.5) == vals[i]);
		CHECK(sketch__quantile(s, 0.999) == vals[i]);
		sketch__free(s);
	}
	free(s);
}

/* Every value from 1 to 100000 between a small and a huge one: the median is that value's
 * bucket, within the relative error, give or take the rounding to whole nanoseconds. */
static void test_every_small_value(void)
{
	struct sketch *s = malloc(sizeof(*s));
	int bad = 0;

	for (uint64_t v = 1; v <= 100000; v++) {
		uint64_t got;

		sketch__init(s);
		sketch__add(s, 1);
		sketch__add(s, v);
		sketch__add(s, 1000000000000ull);
		got = sketch__quantile(s, 0.5);
		if (fabs((double)got - (double)v) > v * SKETCH_REL_ERR + 0.5 + EPS && bad++ < 5)
			fprintf(stderr, "  v=%llu: got %llu\n", (unsigned long long)v,
				(unsigned long long)got);
		sketch__free(s);
	}
	CHECK(bad == 0);
	free(s);
}

/* The same counts in every bucket, whatever range each holds. */
static bool same_buckets(const struct sketch *x, const struct sketch *y)
{
	for (int i = 0; i < SKETCH_BUCKETS; i++) {
		bool in_x = i >= x->lo && i < x->lo + x->nb, in_y = i >= y->lo && i < y->lo + y->nb;
		uint64_t cx = in_x ? x->buckets[i - x->lo] : 0;
		uint64_t cy = in_y ? y->buckets[i - y->lo] : 0;

		if (cx != cy)
			return false;
	}
	return true;
}

static void test_merge(void)
{
	struct sketch *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *all = malloc(sizeof(*a));
	struct sketch *empty = malloc(sizeof(*a));

	sketch__init(a);
	sketch__init(b);
	sketch__init(all);
	sketch__init(empty);
	lcg_state = 5;
	for (int i = 0; i < N; i++) {
		/* the halves differ: small values and zeros in one, large in the other */
		uint64_t v = i < N / 2 ? (lcg() % 50000) : 100000 + lcg() % 100000000;

		sketch__add(i < N / 2 ? a : b, v);
		sketch__add(all, v);
	}
	CHECK(a->zeros > 0);
	sketch__merge(a, b);
	CHECK(a->count == all->count);
	CHECK(a->zeros == all->zeros);
	CHECK(a->min == all->min);
	CHECK(a->max == all->max);
	CHECK(same_buckets(a, all));
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		CHECK(sketch__quantile(a, qs[i]) == sketch__quantile(all, qs[i]));
	CHECK(sketch__quantile(a, 0.25) == sketch__quantile(all, 0.25));

	/* an empty sketch changes nothing, either way round */
	sketch__merge(a, empty);
	CHECK(a->min == all->min && a->max == all->max && a->count == all->count);
	sketch__merge(empty, all);
	CHECK(empty->min == all->min && empty->max == all->max);
	CHECK(same_buckets(empty, all));
	CHECK(sketch__quantile(empty, 0.9) == sketch__quantile(all, 0.9));
	for (struct sketch **k = (struct sketch *[]){ a, b, all, empty, NULL }; *k; k++) {
		sketch__free(*k);
		free(*k);
	}
}

/* A sketch holds the buckets between its smallest value's and its largest's, not all of them:
 * the values of one span name, all about as long, take a few dozen bytes (a report keeps a
 * sketch for each of 200,000 names). Grown a value at a time on both sides, or by a merge, it
 * keeps every count. */
static void test_holds_its_range(void)
{
	struct sketch *s = malloc(sizeof(*s)), *wide = malloc(sizeof(*s));
	struct sketch *all = malloc(sizeof(*s));
	uint64_t v[64];
	size_t n = 0;

	sketch__init(s);
	sketch__init(wide);
	sketch__init(all);
	for (int i = 0; i < 1000; i++) {
		sketch__add(s, 1000000 + i * 10); /* 1 ms .. 1.01 ms: a bucket or two */
		sketch__add(all, 1000000 + i * 10);
	}
	CHECK(s->nb >= 1 && s->nb <= 4);
	for (uint64_t x = 1ull << 40; x > 1; x /= 3) /* downwards, then upwards */
		v[n++] = x;
	for (uint64_t x = 2; x < 1ull << 50; x *= 3)
		v[n++] = x;
	check_against_exact("both ways", v, n);
	for (size_t i = 0; i < n; i++) {
		sketch__add(wide, v[i]);
		sketch__add(all, v[i]);
	}
	sketch__merge(s, wide);
	CHECK(s->count == all->count && s->min == all->min && s->max == all->max);
	CHECK(same_buckets(s, all));
	for (struct sketch **k = (struct sketch *[]){ s, wide, all, NULL }; *k; k++) {
		sketch__free(*k);
		free(*k);
	}
}

int main(int argc, char **argv)
{
	RUN(test_uniform);
	RUN(test_exponential);
	RUN(test_bimodal);
	RUN(test_wide_range);
	RUN(test_zeros);
	RUN(test_empty);
	RUN(test_single_values);
	RUN(test_every_small_value);
	RUN(test_merge);
	RUN(test_holds_its_range);
	UNIT_EXIT();
}
