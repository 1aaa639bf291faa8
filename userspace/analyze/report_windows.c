// SPDX-License-Identifier: MIT
/* report: each thread's span of time. A merged file holds recordings taken at different times;
 * a thread's shares (running, runnable, ...) are of its own recording's time, not of the union
 * of all of them (a 2 s recording merged with one taken a minute later would be "sleeping"
 * for a minute). */
#include "analyze/report_ctx.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

/* metadata {"merged": [meta, ...], "merge": {"inputs": [{"offset_ns"}, ...]}}: recording i
 * spans [offset_i, offset_i + duration_i) of the merged file. One without a duration (a cut
 * file): no windows, the whole file's time for everyone as before. */
void merged_windows(struct ctx *c, const struct cJSON *meta)
{
	const cJSON *merged = cJSON_GetObjectItem(meta, "merged");
	const cJSON *inputs = cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "merge"), "inputs");
	int n = cJSON_GetArraySize(merged);
	struct window *w;

	if (c->nwins || !cJSON_IsArray(merged) || !cJSON_IsArray(inputs) || n < 2 ||
	    cJSON_GetArraySize(inputs) != n)
		return;
	w = xcalloc(n, sizeof(*w));
	for (int i = 0; i < n; i++) {
		const cJSON *d = cJSON_GetObjectItem(cJSON_GetArrayItem(merged, i), "duration_ns");
		const cJSON *o = cJSON_GetObjectItem(cJSON_GetArrayItem(inputs, i), "offset_ns");

		if (!cJSON_IsNumber(d) || !cJSON_IsNumber(o) || d->valuedouble <= 0) {
			free(w);
			return;
		}
		w[i].s = (int64_t)o->valuedouble;
		w[i].e = w[i].s + (int64_t)d->valuedouble;
	}
	c->wins = w;
	c->nwins = n;
}

static int by_pid(const void *a, const void *b)
{
	const struct rthread *x = *(const struct rthread *const *)a;
	const struct rthread *y = *(const struct rthread *const *)b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The recording whose time overlaps [s, e] most (the shortest of equals): merge gives every
 * process of a recording numbers no other recording uses, so a process's threads share one. */
static const struct window *best_window(const struct ctx *c, int64_t s, int64_t e)
{
	const struct window *best = NULL;
	int64_t best_ov = 0;

	for (size_t i = 0; i < c->nwins; i++) {
		const struct window *w = &c->wins[i];
		int64_t lo = s > w->s ? s : w->s, hi = e + 1 < w->e ? e + 1 : w->e;
		int64_t ov = hi - lo;

		if (ov > best_ov || (ov == best_ov && best && ov > 0 &&
				     w->e - w->s < best->e - best->s)) {
			best = w;
			best_ov = ov;
		}
	}
	return best_ov > 0 ? best : NULL;
}

void thread_windows(struct ctx *c)
{
	size_t n = HASH_CNT(hash, c->threads), k = 0;
	struct rthread **v, *t, *tmp;

	HASH_ITER(hash, c->threads, t, tmp) {
		t->win_s = c->r->start_ns;
		t->win_e = c->r->end_ns;
	}
	if (!c->nwins)
		return;
	/* a process's extent: the union of its threads' (one without events of its own, named
	 * only, takes its process's recording) */
	v = xcalloc(n + 1, sizeof(*v));
	HASH_ITER(hash, c->threads, t, tmp)
		if (t->known && t->pid >= 0)
			v[k++] = t;
	qsort(v, k, sizeof(*v), by_pid);
	for (size_t i = 0, j; i < k; i = j) {
		int64_t s = INT64_MAX, e = INT64_MIN;
		const struct window *w;

		for (j = i; j < k && v[j]->pid == v[i]->pid; j++) {
			if (!v[j]->any_ev)
				continue;
			s = v[j]->first_ev < s ? v[j]->first_ev : s;
			e = v[j]->last_ev > e ? v[j]->last_ev : e;
		}
		w = s <= e ? best_window(c, s, e) : NULL;
		for (size_t m = i; w && m < j; m++) { /* and whatever it saw past the ends */
			v[m]->win_s = w->s < s ? w->s : s;
			v[m]->win_e = w->e > e ? w->e : e;
		}
	}
	free(v);
}
