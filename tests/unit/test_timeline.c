// SPDX-License-Identifier: MIT
/* Unit test of userspace/analyze/timeline.c: pixel columns, spans nested by time whatever order
 * they come in, the dominant category (and how much of a column it fills), the queue union and
 * the state strip, the default window; and the nesting against a brute-force count on random
 * span trees. */
#include <stdlib.h>

#include "analyze/timeline.h"
#include "unit.h"

static uint8_t rows[TL_DEPTH][TL_COLS];

static int cat_of(uint8_t cell)
{
	return cell ? (cell - 1) / 4 : -1;
}

static int cov_of(uint8_t cell)
{
	return cell ? (cell - 1) % 4 : -1;
}

static void test_columns(void)
{
	struct tl_window w = { 1000, 1000000 }; /* 1000 ns a column */

	CHECK(tl__col(&w, 0) == 0);	       /* before: clamped */
	CHECK(tl__col(&w, 1000) == 0);
	CHECK(tl__col(&w, 1999) == 0);
	CHECK(tl__col(&w, 2000) == 1);
	CHECK(tl__col(&w, 1000 + 999999) == TL_COLS - 1);
	CHECK(tl__col(&w, 5000000) == TL_COLS - 1); /* after: clamped */
	/* a bin starts at the first time it holds, for widths that do not divide evenly */
	for (int i = 0; i < 7; i++) {
		int64_t s = tl__bin_start(0, 1000, 7, i);

		CHECK(tl__bin(0, 1000, 7, s) == i);
		CHECK(s == 0 || tl__bin(0, 1000, 7, s - 1) == i - 1);
	}
}

/* a(0..1000) { b(100..300) { c(150..200) } d(500..900) }, in completion order: c, b, d, a */
static void test_nesting(void)
{
	struct tl_window w = { 0, TL_COLS }; /* 1 ns a column */
	struct tl_span sp[] = { { 150, 200, CAT_QUEUE },
				{ 100, 300, CAT_OPERATOR },
				{ 500, 900, CAT_IO },
				{ 0, 1000, CAT_DECODE } };

	memset(rows, 0xff, sizeof(rows));
	CHECK(tl__nest(&w, sp, 4, rows) == 3);
	for (int c = 0; c < TL_COLS; c++) {
		CHECK(cat_of(rows[0][c]) == CAT_DECODE && cov_of(rows[0][c]) == 3);
		CHECK(cat_of(rows[1][c]) == (c >= 100 && c < 300   ? CAT_OPERATOR :
					     c >= 500 && c < 900   ? CAT_IO :
								     -1));
		CHECK(cat_of(rows[2][c]) == (c >= 150 && c < 200 ? CAT_QUEUE : -1));
		CHECK(rows[3][c] == 0);
	}
}

/* Parent first, a parent and child starting together, and a span that only partly overlaps
 * another (it goes one deeper, as it is open when the other starts). */
static void test_start_order_and_overlap(void)
{
	struct tl_window w = { 0, TL_COLS };
	struct tl_span sp[] = { { 0, 400, CAT_IO },	  /* parent */
				{ 0, 200, CAT_QUEUE },	  /* child, same start */
				{ 300, 600, CAT_OPERATOR }, /* overlaps the parent's end */
				{ 700, 800, CAT_DECODE } };

	CHECK(tl__nest(&w, sp, 4, rows) == 2);
	CHECK(cat_of(rows[0][0]) == CAT_IO && cat_of(rows[1][0]) == CAT_QUEUE);
	CHECK(cat_of(rows[1][350]) == CAT_OPERATOR && cat_of(rows[1][550]) == CAT_OPERATOR);
	CHECK(cat_of(rows[0][550]) == -1);
	CHECK(cat_of(rows[0][750]) == CAT_DECODE && cat_of(rows[1][750]) == -1);
}

/* Several spans in one column: the category with the most time wins (ties: the lower one),
 * and the cell says how much of the column they fill. */
static void test_dominant(void)
{
	struct tl_window w = { 0, 1000 * TL_COLS }; /* 1000 ns a column */
	struct tl_span sp[] = { { 0, 300, CAT_DECODE },	   { 300, 700, CAT_IO },
				{ 1000, 1050, CAT_OPERATOR }, { 3000, 3200, CAT_IO },
				{ 3200, 3400, CAT_DECODE },   { 5000, 6500, CAT_QUEUE } };

	CHECK(tl__nest(&w, sp, 6, rows) == 1);
	CHECK(cat_of(rows[0][0]) == CAT_IO && cov_of(rows[0][0]) == 2); /* 70% filled */
	CHECK(cat_of(rows[0][1]) == CAT_OPERATOR && cov_of(rows[0][1]) == 0); /* 5% */
	CHECK(rows[0][2] == 0);
	CHECK(cat_of(rows[0][3]) == CAT_DECODE && cov_of(rows[0][3]) == 2); /* a tie; 40% */
	CHECK(cat_of(rows[0][5]) == CAT_QUEUE && cov_of(rows[0][5]) == 3);
	CHECK(cat_of(rows[0][6]) == CAT_QUEUE && cov_of(rows[0][6]) == 2); /* 500 of 1000 */
	CHECK(rows[0][7] == 0);
}

/* Spans outside the window are not drawn, ones across its edges are clipped, and spans deeper
 * than the rows go to the last. */
static void test_clip_and_depth_cap(void)
{
	struct tl_window w = { 1000, TL_COLS };
	struct tl_span sp[TL_DEPTH + 3];

	for (int i = 0; i < TL_DEPTH + 2; i++) /* nested, each 10 ns shorter on both sides */
		sp[i] = (struct tl_span){ 900 + 10 * i, 2100 - 10 * i,
					  i < TL_DEPTH - 1 ? CAT_DECODE : CAT_IO };
	sp[0].cat = CAT_OPERATOR;
	sp[TL_DEPTH + 2] = (struct tl_span){ 0, 500, CAT_GIL }; /* before the window */
	CHECK(tl__nest(&w, sp, TL_DEPTH + 3, rows) == TL_DEPTH);
	for (int c = 0; c < TL_COLS; c++) {
		CHECK(cat_of(rows[0][c]) == CAT_OPERATOR && cov_of(rows[0][c]) == 3);
		CHECK(cat_of(rows[1][c]) == CAT_DECODE);
		CHECK(cat_of(rows[TL_DEPTH - 1][c]) == CAT_IO);
	}
	/* nothing drawn of the span before the window */
	for (int d = 0; d < TL_DEPTH; d++)
		for (int c = 0; c < TL_COLS; c++)
			CHECK(cat_of(rows[d][c]) != CAT_GIL);
}

static void test_states(void)
{
	struct tl_window w = { 0, TL_COLS };
	static const bool is_queue[CAT_MAX] = { [CAT_QUEUE] = true };
	struct tl_span sp[] = { { 100, 300, CAT_QUEUE },
				{ 200, 400, CAT_QUEUE },
				{ 350, 380, CAT_IO },
				{ 600, 700, CAT_QUEUE } };
	uint64_t(*acc)[TS_MAX] = calloc(TL_COLS, sizeof(*acc));
	uint8_t st[TL_COLS];
	struct tl_iv *q;
	size_t nq;

	tl__nest(&w, sp, 4, rows); /* sorts them */
	nq = tl__queue_union(sp, 4, is_queue, &q);
	CHECK(nq == 2 && q[0].s == 100 && q[0].e == 400 && q[1].s == 600 && q[1].e == 700);
	tl__add_state(&w, acc, TS_RUNNING, 0, 50, q, nq);
	tl__add_state(&w, acc, TS_RUNNABLE, 50, 60, q, nq);
	tl__add_state(&w, acc, TS_SLEEPING, 60, 650, q, nq);
	tl__add_state(&w, acc, TS_BLOCKED, 650, 900, q, nq);
	tl__states(acc, st);
	for (int c = 0; c < TL_COLS; c++) {
		int want = c < 50 ? TS_RUNNING : c < 60 ? TS_RUNNABLE :
			   c < 100 ? TS_SLEEPING : c < 400 ? TS_QUEUE :
			   c < 600 ? TS_SLEEPING : c < 700 ? TS_QUEUE :
			   c < 900 ? TS_BLOCKED : TS_NONE;

		CHECK(st[c] == want);
	}
	free(q);
	free(acc);
}

static void test_default_window(void)
{
	uint64_t spans[TL_SLICES], busy[TL_SLICES];
	struct tl_window w;

	for (int i = 0; i < TL_SLICES; i++) {
		spans[i] = 100;
		busy[i] = i >= 50 && i < 54 ? 1000 : i >= 120 && i < 124 ? 1000 : 10;
	}
	/* 20000 spans, 10 lanes: 400 wanted, 4 slices; the first of two equally busy places */
	w = tl__default_window(0, 2000000, spans, busy, 10);
	CHECK(w.start == 50 * 10000 && w.dur == 4 * 10000);
	busy[122] = 5000;
	w = tl__default_window(0, 2000000, spans, busy, 10);
	CHECK(w.start == 120 * 10000 && w.dur == 4 * 10000);
	/* few spans: the whole recording */
	w = tl__default_window(500, 2000500, spans, busy, 500);
	CHECK(w.start == 500 && w.dur == 2000000);
	/* very many: one slice */
	for (int i = 0; i < TL_SLICES; i++)
		spans[i] = 1000000;
	w = tl__default_window(0, 2000000, spans, busy, 1);
	CHECK(w.start == 122 * 10000 && w.dur == 10000);
}

/* Random proper span trees in any order against a count per nanosecond: at time t, the spans
 * covering t sorted by start (longest first) are at depths 0, 1, 2, ... */
static int ngen;

static void gen(struct tl_span *sp, int64_t s, int64_t e, int depth)
{
	int64_t t = s;

	while (ngen < 400 && t < e) {
		int64_t a = t + rand() % 40, b = a + 1 + rand() % 200;

		if (b > e)
			break;
		if (depth > 0 && a == s && b == e) /* the same as its parent: ambiguous */
			break;
		sp[ngen++] = (struct tl_span){ a, b, (uint8_t)(rand() % CAT_MAX) };
		if (depth + 1 < TL_DEPTH && rand() % 2)
			gen(sp, a, b, depth + 1);
		t = b;
	}
}

static void test_random_trees(void)
{
	static struct tl_span sp[400], copy[400];
	struct tl_window w = { 0, TL_COLS };
	int bad = 0;

	srand(7);
	for (int round = 0; round < 200; round++) {
		ngen = 0;
		gen(sp, 0, TL_COLS, 0);
		memcpy(copy, sp, sizeof(sp));
		for (int i = ngen - 1; i > 0; i--) { /* any order */
			int j = rand() % (i + 1);
			struct tl_span x = copy[i];

			copy[i] = copy[j];
			copy[j] = x;
		}
		tl__nest(&w, copy, ngen, rows);
		for (int t = 0; t < TL_COLS; t++) {
			int want[TL_DEPTH], d = 0;

			for (int k = 0; k < TL_DEPTH; k++)
				want[k] = -1;
			/* gen() makes parents before children: covering spans in that order */
			for (int i = 0; i < ngen; i++)
				if (sp[i].s <= t && t < sp[i].e) {
					want[d < TL_DEPTH ? d : TL_DEPTH - 1] = sp[i].cat;
					d++;
				}
			for (int k = 0; k < TL_DEPTH; k++)
				bad += cat_of(rows[k][t]) != want[k];
		}
	}
	CHECK(bad == 0);
}

int main(void)
{
	RUN(test_columns);
	RUN(test_nesting);
	RUN(test_start_order_and_overlap);
	RUN(test_dominant);
	RUN(test_clip_and_depth_cap);
	RUN(test_states);
	RUN(test_default_window);
	RUN(test_random_trees);
	UNIT_EXIT();
}
