// SPDX-License-Identifier: MIT
/* Unit test of userspace/analyze/cover.c: self time of nested spans arriving children first,
 * siblings, overlaps counted once, spans out of order, and the bounded memory (chunks) against
 * a brute-force count on random nestings. */
#include <stdlib.h>

#include "analyze/cover.h"
#include "unit.h"

static void test_nested(void)
{
	struct cover c = { 0 };

	/* a(0..100) { b(10..30) { c(12..20) } d(40..60) }: children arrive first */
	CHECK(cover__add(&c, 12, 20) == 0);  /* c: self 8 */
	CHECK(cover__add(&c, 10, 30) == 8);  /* b: self 20 - 8 = 12 */
	CHECK(cover__add(&c, 40, 60) == 0);  /* d: self 20 */
	CHECK(cover__add(&c, 0, 100) == 40); /* a: its children b and d, 20 + 20 */
	CHECK(c.n == 1 && c.v[0].s == 0 && c.v[0].e == 100);
	/* an instant and an empty span cover nothing */
	CHECK(cover__add(&c, 150, 150) == 0);
	CHECK(c.n == 1);
	cover__free(&c);
}

static void test_overlaps_once(void)
{
	struct cover c = { 0 };

	/* two queue waits that overlap (a wait inside a wait, or two probes on one call):
	 * 10..50 and 30..80 cover 70, not 90 */
	uint64_t covered = 0;

	covered += 40 - cover__add(&c, 10, 50);
	covered += 50 - cover__add(&c, 30, 80);
	CHECK(covered == 70);
	/* one that arrives late, before and between the others */
	covered += 10 - cover__add(&c, 0, 10);
	covered += 5 - cover__add(&c, 80, 85);
	CHECK(covered == 85);
	CHECK(c.v[0].s == 0 && c.v[c.n - 1].e == 85); /* touching intervals may stay apart */
	cover__free(&c);
}

/* Random properly nested spans on one thread, emitted in completion order; a parent's covered
 * time must be the sum of its direct children's durations, with far more spans than are kept
 * exactly (whole chunks inside a long parent are still subtracted). */
static int64_t emit(struct cover *c, int64_t s, int depth, int *bad, unsigned *seed)
{
	int64_t t = s, child_sum = 0;
	int kids = depth < 3 ? (int)(rand_r(seed) % 6) : 0;

	if (depth == 0)
		kids = 10000; /* a main() around more calls than are kept exactly */
	for (int k = 0; k < kids; k++) {
		int64_t cs = t + 1 + rand_r(seed) % 5, ce = emit(c, cs, depth + 1, bad, seed);

		child_sum += ce - cs;
		t = ce;
	}
	t += 1 + rand_r(seed) % 5;
	if (cover__add(c, s, t) != (uint64_t)child_sum)
		(*bad)++;
	return t;
}

static void test_random_nesting(void)
{
	struct cover c = { 0 };
	unsigned seed = 7;
	int bad = 0;

	struct cover probe = { 0 };

	/* the chunks are used: before main ends, older calls were folded */
	for (int i = 0; i < 5000; i++)
		cover__add(&probe, 10 * i, 10 * i + 5);
	CHECK(probe.nchunks > 0 && probe.n < 5000);
	CHECK(cover__add(&probe, 0, 50000) == 5000 * 5);
	cover__free(&probe);
	/* millions of spans on one thread: a bounded number of chunks, and a span over all of
	 * them still finds every one (whole chunks) */
	for (int i = 0; i < 2000000; i++)
		cover__add(&probe, 10ll * i, 10ll * i + 5);
	CHECK(probe.nchunks <= 256 && probe.cap <= 4096);
	CHECK(cover__add(&probe, 0, 20000000) == 2000000ull * 5);
	cover__free(&probe);
	emit(&c, 0, 0, &bad, &seed);
	CHECK(bad == 0);
	CHECK(c.nchunks == 0 && c.n == 1); /* main took every chunk back */
	CHECK(c.cap <= 4096);
	CHECK(c.approx == 0);
	cover__free(&c);
}

int main(void)
{
	RUN(test_nested);
	RUN(test_overlaps_once);
	RUN(test_random_nesting);
	UNIT_EXIT();
}
