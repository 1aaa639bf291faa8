// SPDX-License-Identifier: MIT
#include "analyze/mann_whitney.h"

#include "util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mann_whitney__bins(const uint64_t *a, const uint64_t *b, size_t nbins,
			struct mann_whitney *out)
{
	double below = 0, u = 0, ties = 0, n, na = 0, nb = 0, var, d;

	memset(out, 0, sizeof(*out));
	out->p = 1;
	for (size_t i = 0; i < nbins; i++) {
		double t = (double)a[i] + (double)b[i];

		/* b's values in bin i beat every a below it and tie with the a's in it */
		u += (double)b[i] * (below + 0.5 * (double)a[i]);
		below += (double)a[i];
		ties += t * t * t - t;
		na += (double)a[i];
		nb += (double)b[i];
	}
	out->na = (uint64_t)na;
	out->nb = (uint64_t)nb;
	out->u_b = u;
	if (!na || !nb)
		return;
	out->delta = 2 * u / (na * nb) - 1;
	n = na + nb;
	var = na * nb / 12 * ((n + 1) - (n > 1 ? ties / (n * (n - 1)) : 0));
	if (var <= 0)
		return; /* every value in one bin: nothing to tell apart */
	d = fabs(u - na * nb / 2) - 0.5;
	if (d < 0)
		d = 0;
	out->z = copysign(d / sqrt(var), u - na * nb / 2);
	out->p = erfc(fabs(out->z) / sqrt(2));
}

void mann_whitney__sketches(const struct sketch *a, const struct sketch *b,
			    struct mann_whitney *out)
{
	/* bin 0: the zeros; bin 1 + k: bucket lo + k of the range both sketches span */
	int lo = 0, hi = -1;
	size_t n;
	uint64_t *ca, *cb;

	if (a->nb && b->nb) {
		lo = a->lo < b->lo ? a->lo : b->lo;
		hi = a->lo + a->nb > b->lo + b->nb ? a->lo + a->nb - 1 : b->lo + b->nb - 1;
	} else if (a->nb || b->nb) {
		const struct sketch *s = a->nb ? a : b;

		lo = s->lo;
		hi = s->lo + s->nb - 1;
	}
	n = (size_t)(hi - lo + 2);
	ca = xcalloc(n, sizeof(*ca));
	cb = xcalloc(n, sizeof(*cb));
	ca[0] = a->zeros;
	cb[0] = b->zeros;
	for (int i = 0; i < a->nb; i++)
		ca[1 + a->lo + i - lo] = a->buckets[i];
	for (int i = 0; i < b->nb; i++)
		cb[1 + b->lo + i - lo] = b->buckets[i];
	mann_whitney__bins(ca, cb, n, out);
	free(ca);
	free(cb);
}
