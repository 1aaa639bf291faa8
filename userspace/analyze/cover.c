// SPDX-License-Identifier: MIT
#include "analyze/cover.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* Intervals kept exact per thread; beyond that the oldest half becomes one chunk. A span long
 * enough to contain thousands of siblings still subtracts all of them (whole chunks). */
#define COVER_KEEP 4096
/* Chunks kept; beyond that neighbours merge in pairs (a span reaching into one is estimated). */
#define COVER_CHUNKS 256

static uint64_t overlap(int64_t s1, int64_t e1, int64_t s2, int64_t e2)
{
	int64_t s = s1 > s2 ? s1 : s2, e = e1 < e2 ? e1 : e2;

	return e > s ? (uint64_t)(e - s) : 0;
}

static void fold_oldest(struct cover *c)
{
	size_t half = c->n / 2;
	struct cover_chunk k = { c->v[0].s, c->v[half - 1].e, 0 };

	for (size_t i = 0; i < half; i++)
		k.len += (uint64_t)(c->v[i].e - c->v[i].s);
	if (c->nchunks == COVER_CHUNKS) { /* a thread of millions of spans: memory stays flat */
		for (size_t i = 0; i < COVER_CHUNKS / 2; i++) {
			struct cover_chunk *a = &c->chunks[2 * i], *b = a + 1;

			c->chunks[i] = (struct cover_chunk){ a->s, b->e, a->len + b->len };
		}
		c->nchunks = COVER_CHUNKS / 2;
	}
	if (!c->chunks)
		c->chunks = xcalloc(COVER_CHUNKS, sizeof(*c->chunks));
	c->chunks[c->nchunks++] = k;
	memmove(c->v, c->v + half, (c->n - half) * sizeof(*c->v));
	c->n -= half;
}

/* What the chunks cover of [s, e); chunks the span contains whole are taken into it. Where it
 * reaches only partly into a chunk, its start moves to the chunk's end (*s) and the time inside
 * is estimated from the chunk's density. */
static uint64_t from_chunks(struct cover *c, int64_t *s, int64_t e)
{
	uint64_t got = 0;

	while (c->nchunks && c->chunks[c->nchunks - 1].e > *s) {
		struct cover_chunk *k = &c->chunks[c->nchunks - 1];

		if (k->s >= *s && k->e <= e) {
			got += k->len;
			c->nchunks--;
			continue;
		}
		c->approx++;
		got += (uint64_t)((double)k->len * overlap(*s, e, k->s, k->e) / (k->e - k->s));
		*s = k->e;
		break;
	}
	return got;
}

uint64_t cover__add(struct cover *c, int64_t s, int64_t e)
{
	uint64_t got = 0;
	size_t lo = 0, hi, i, j;

	if (e <= s)
		return 0;
	if (c->nchunks && c->chunks[c->nchunks - 1].e > s)
		got = from_chunks(c, &s, e);
	if (e <= s)
		return got;
	/* the first interval ending after s (ends are ordered too: the intervals are disjoint) */
	hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->v[mid].e <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (j = i = lo; j < c->n && c->v[j].s < e; j++)
		got += overlap(s, e, c->v[j].s, c->v[j].e);
	/* v[i..j) overlap [s, e): one interval replaces them */
	if (j > i) {
		if (c->v[i].s < s)
			s = c->v[i].s;
		if (c->v[j - 1].e > e)
			e = c->v[j - 1].e;
		c->v[i] = (struct cover_iv){ s, e };
		memmove(c->v + i + 1, c->v + j, (c->n - j) * sizeof(*c->v));
		c->n -= j - i - 1;
		return got;
	}
	if (c->n == COVER_KEEP) {
		fold_oldest(c);
		return got + cover__add(c, s, e);
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->v = xrealloc(c->v, c->cap, sizeof(*c->v));
	}
	memmove(c->v + i + 1, c->v + i, (c->n - i) * sizeof(*c->v));
	c->v[i] = (struct cover_iv){ s, e };
	c->n++;
	return got;
}

void cover__free(struct cover *c)
{
	free(c->v);
	free(c->chunks);
	memset(c, 0, sizeof(*c));
}
