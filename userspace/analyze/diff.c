// SPDX-License-Identifier: MIT
/* tracer diff: two reports, their groups matched by key, tested and sorted. */
#include "analyze/diff.h"
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool diff__significant(const struct mann_whitney *mw, uint64_t p50_a, uint64_t p50_b)
{
	double lo = p50_a < p50_b ? p50_a : p50_b, hi = p50_a < p50_b ? p50_b : p50_a;

	return mw->na && mw->nb && mw->p < DIFF_ALPHA && fabs(mw->delta) >= DIFF_MIN_EFFECT &&
	       hi >= lo * (1 + DIFF_MIN_MOVE) && hi > lo;
}

static bool is_wait(enum report_by by, const char *key, const char *cat)
{
	enum category k;

	if (by == BY_CATEGORY)
		cat = key;
	else if (by != BY_NAME)
		return false;
	if (category__parse(cat, &k))
		return false;
	return k == CAT_QUEUE || k == CAT_GIL || (k == CAT_PYTHON && stage__python_wait(key));
}

static int by_key(const void *x, const void *y)
{
	return strcmp((*(const struct report_group *const *)x)->key,
		      (*(const struct report_group *const *)y)->key);
}

/* How far the median moved, as a log ratio (0 when a side is missing). */
static double moved(const struct diff_row *r)
{
	return r->p50_ratio > 0 ? fabs(log(r->p50_ratio)) : 0;
}

/* Significant rows first; among rows alike, work before waits (a wait grows because what it
 * waits for got slower: the cause sorts first), then the median's move, the effect's size. */
static int by_change(const void *x, const void *y)
{
	const struct diff_row *a = x, *b = y;
	double ma = moved(a), mb = moved(b);

	if (a->significant != b->significant)
		return a->significant ? -1 : 1;
	if (a->wait != b->wait)
		return a->wait ? 1 : -1;
	if (ma != mb)
		return ma > mb ? -1 : 1;
	if (fabs(a->mw.delta) != fabs(b->mw.delta))
		return fabs(a->mw.delta) > fabs(b->mw.delta) ? -1 : 1;
	return strcmp(a->key, b->key);
}

static void fill_row(struct diff_row *r, enum report_by by, const struct report_group *a,
		     const struct report_group *b)
{
	static const struct sketch none = { .min = UINT64_MAX };
	uint64_t pa = a ? sketch__quantile(&a->sketch, 0.5) : 0;
	uint64_t pb = b ? sketch__quantile(&b->sketch, 0.5) : 0;

	r->a = a;
	r->b = b;
	r->key = a ? a->key : b->key;
	r->cat = a ? a->cat : b->cat;
	mann_whitney__sketches(a ? &a->sketch : &none, b ? &b->sketch : &none, &r->mw);
	r->p50_ratio = a && b && pa ? (double)pb / pa : 0;
	r->significant = diff__significant(&r->mw, pa, pb);
	r->wait = is_wait(by, r->key, r->cat);
}

int diff__run(struct diff *d, const struct diff_opts *o, char *err, size_t errlen)
{
	const struct report_group **ga, **gb;
	size_t i = 0, j = 0;
	int ret;

	memset(d, 0, sizeof(*d));
	d->oa = (struct report_opts){ .path = o->a, .by = o->by, .format = o->format, .top = 0,
				      .compare = true };
	d->ob = d->oa;
	d->ob.path = o->b;
	ret = report__run(&d->a, &d->oa, err, errlen);
	if (!ret)
		ret = report__run(&d->b, &d->ob, err, errlen);
	if (ret)
		return ret;
	ga = xcalloc(d->a.ngroups + 1, sizeof(*ga));
	gb = xcalloc(d->b.ngroups + 1, sizeof(*gb));
	memcpy(ga, d->a.groups, d->a.ngroups * sizeof(*ga));
	memcpy(gb, d->b.groups, d->b.ngroups * sizeof(*gb));
	qsort(ga, d->a.ngroups, sizeof(*ga), by_key);
	qsort(gb, d->b.ngroups, sizeof(*gb), by_key);
	d->rows = xcalloc(d->a.ngroups + d->b.ngroups + 1, sizeof(*d->rows));
	while (i < d->a.ngroups || j < d->b.ngroups) {
		int c = i == d->a.ngroups   ? 1 :
			j == d->b.ngroups   ? -1 :
					      strcmp(ga[i]->key, gb[j]->key);

		fill_row(&d->rows[d->nrows++], o->by, c <= 0 ? ga[i] : NULL, c >= 0 ? gb[j] : NULL);
		i += c <= 0;
		j += c >= 0;
	}
	qsort(d->rows, d->nrows, sizeof(*d->rows), by_change);
	free(ga);
	free(gb);
	return 0;
}

void diff__free(struct diff *d)
{
	report__free(&d->a);
	report__free(&d->b);
	free(d->rows);
	memset(d, 0, sizeof(*d));
}
