// SPDX-License-Identifier: MIT
/* The timeline's pure logic: columns, nesting by time, the dominant category or state of each
 * column, the default window (timeline.h). */
#include "analyze/timeline.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

int tl__bin(int64_t start, int64_t dur, int n, int64_t t)
{
	__int128 k;

	if (dur <= 0 || t < start)
		return 0;
	k = (__int128)(t - start) * n / dur;
	return k >= n ? n - 1 : (int)k;
}

int64_t tl__bin_start(int64_t start, int64_t dur, int n, int i)
{
	/* the first t with (t - start) * n / dur >= i */
	return start + (int64_t)(((__int128)dur * i + n - 1) / n);
}

int tl__col(const struct tl_window *w, int64_t t)
{
	return tl__bin(w->start, w->dur, TL_COLS, t);
}

/* Adds the part of [s, e) inside the window to acc[col * stride + k]. */
static void spread(const struct tl_window *w, uint64_t *acc, int stride, int k, int64_t s,
		   int64_t e)
{
	int64_t end = w->start + w->dur;

	if (s < w->start)
		s = w->start;
	if (e > end)
		e = end;
	if (e <= s)
		return;
	for (int c = tl__col(w, s), last = tl__col(w, e - 1); c <= last; c++) {
		int64_t cs = tl__bin_start(w->start, w->dur, TL_COLS, c);
		int64_t ce = tl__bin_start(w->start, w->dur, TL_COLS, c + 1);

		acc[(size_t)c * stride + k] += (e < ce ? e : ce) - (s > cs ? s : cs);
	}
}

static int by_start(const void *a, const void *b)
{
	const struct tl_span *x = a, *y = b;

	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->e > y->e ? -1 : x->e < y->e; /* the enclosing one first */
}

/* How much of a column cov ns fill, 0..3. */
static int coverage(uint64_t cov, int64_t width)
{
	if (cov * 4 >= (uint64_t)width * 3)
		return 3;
	if (cov * 5 >= (uint64_t)width * 2)
		return 2;
	return cov * 10 >= (uint64_t)width ? 1 : 0;
}

int tl__nest(const struct tl_window *w, struct tl_span *sp, size_t n, uint8_t rows[][TL_COLS])
{
	uint64_t *acc = xcalloc((size_t)TL_DEPTH * TL_COLS * CAT_MAX, sizeof(*acc));
	int64_t *open = NULL;
	size_t nopen = 0, cap = 0;
	int used = 0;

	if (n) /* a lane without spans in the window: no array at all */
		qsort(sp, n, sizeof(*sp), by_start);
	for (size_t i = 0; i < n; i++) {
		int d;

		while (nopen && open[nopen - 1] <= sp[i].s)
			nopen--;
		d = nopen < TL_DEPTH ? (int)nopen : TL_DEPTH - 1;
		if (nopen == cap) {
			cap = cap ? 2 * cap : 64;
			open = xrealloc(open, cap, sizeof(*open));
		}
		open[nopen++] = sp[i].e;
		if (sp[i].e <= w->start || sp[i].s >= w->start + w->dur || sp[i].e <= sp[i].s)
			continue;
		spread(w, acc + (size_t)d * TL_COLS * CAT_MAX, CAT_MAX,
		       sp[i].cat < CAT_MAX ? sp[i].cat : CAT_OTHER, sp[i].s, sp[i].e);
		if (d + 1 > used)
			used = d + 1;
	}
	for (int d = 0; d < TL_DEPTH; d++)
		for (int c = 0; c < TL_COLS; c++) {
			const uint64_t *a = acc + ((size_t)d * TL_COLS + c) * CAT_MAX;
			int64_t width = tl__bin_start(w->start, w->dur, TL_COLS, c + 1) -
					tl__bin_start(w->start, w->dur, TL_COLS, c);
			uint64_t sum = 0;
			int best = -1;

			for (int k = 0; k < CAT_MAX; k++) {
				sum += a[k];
				if (a[k] && (best < 0 || a[k] > a[best]))
					best = k;
			}
			rows[d][c] = best < 0 ? 0 : TL_CELL(best, coverage(sum, width));
		}
	free(open);
	free(acc);
	return used;
}

size_t tl__queue_union(const struct tl_span *sp, size_t n, const bool *is_queue,
		       struct tl_iv **out)
{
	struct tl_iv *v = NULL;
	size_t nv = 0, cap = 0;

	for (size_t i = 0; i < n; i++) {
		if (!is_queue[sp[i].cat] || sp[i].e <= sp[i].s)
			continue;
		if (nv && sp[i].s <= v[nv - 1].e) { /* sorted by start: overlaps the last */
			if (sp[i].e > v[nv - 1].e)
				v[nv - 1].e = sp[i].e;
			continue;
		}
		if (nv == cap) {
			cap = cap ? 2 * cap : 16;
			v = xrealloc(v, cap, sizeof(*v));
		}
		v[nv++] = (struct tl_iv){ sp[i].s, sp[i].e };
	}
	*out = v;
	return nv;
}

void tl__add_state(const struct tl_window *w, uint64_t (*acc)[TS_MAX], enum tl_state st,
		   int64_t s, int64_t e, const struct tl_iv *q, size_t nq)
{
	size_t lo = 0, hi = nq;

	if (e <= s || st == TS_NONE)
		return;
	if (st != TS_SLEEPING && st != TS_BLOCKED) {
		spread(w, &acc[0][0], TS_MAX, st, s, e);
		return;
	}
	while (lo < hi) { /* the first queue interval ending after s */
		size_t m = (lo + hi) / 2;

		if (q[m].e <= s)
			lo = m + 1;
		else
			hi = m;
	}
	for (size_t i = lo; i < nq && q[i].s < e && s < e; i++) {
		if (q[i].s > s)
			spread(w, &acc[0][0], TS_MAX, st, s, q[i].s);
		spread(w, &acc[0][0], TS_MAX, TS_QUEUE, q[i].s > s ? q[i].s : s,
		       q[i].e < e ? q[i].e : e);
		s = q[i].e;
	}
	if (s < e)
		spread(w, &acc[0][0], TS_MAX, st, s, e);
}

void tl__states(uint64_t (*acc)[TS_MAX], uint8_t *out)
{
	for (int c = 0; c < TL_COLS; c++) {
		int best = TS_NONE;

		for (int k = TS_RUNNING; k < TS_MAX; k++)
			if (acc[c][k] && (best == TS_NONE || acc[c][k] > acc[c][best]))
				best = k;
		out[c] = best;
	}
}

struct tl_window tl__default_window(int64_t start, int64_t end, const uint64_t *spans,
				    const uint64_t *busy, size_t lanes)
{
	uint64_t total = 0, want = (uint64_t)(lanes ? lanes : 1) * TL_SPANS_PER_LANE, sum = 0,
		 best = 0;
	size_t k, at = 0;

	if (end <= start)
		return (struct tl_window){ start, 1 };
	for (int i = 0; i < TL_SLICES; i++)
		total += spans[i];
	if (total <= want)
		return (struct tl_window){ start, end - start };
	k = (size_t)((want * TL_SLICES + total - 1) / total);
	if (k < 1)
		k = 1;
	for (size_t i = 0; i < TL_SLICES; i++) {
		sum += busy[i];
		if (i >= k)
			sum -= busy[i - k];
		if (i + 1 >= k && (i + 1 == k || sum > best)) {
			best = sum;
			at = i + 1 - k;
		}
	}
	{
		int64_t s0 = tl__bin_start(start, end - start, TL_SLICES, (int)at);
		int64_t s1 = tl__bin_start(start, end - start, TL_SLICES, (int)(at + k));

		return (struct tl_window){ s0, s1 - s0 };
	}
}
