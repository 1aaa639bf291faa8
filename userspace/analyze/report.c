// SPDX-License-Identifier: MIT
/* tracer report: runs the two passes (report_pass1.c, report_sweep.c) and turns their state into
 * the results: per-thread times, stages, the verdict, the groups sorted. */
#include "analyze/report_ctx.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- results ------------------------------------------------------------------------------ */

static void thread_result(struct ctx *c, struct rthread *t, struct thread_time *out)
{
	struct report *r = c->r;
	uint64_t qs = 0, qd = 0, len[NCLASS];

	if (r->has_sched && t->started && t->state != RS_DEAD)
		set_state(t, t->state, t->win_e);
	pass_boundaries(t, INT64_MAX);
	finalize(t, INT64_MAX);
	for (int k = 0; k < NCLASS; k++) {
		len[k] = t->done_len[k];
		for (size_t i = 0; i < t->nb[k]; i++)
			len[k] += t->b[k][i].e - t->b[k][i].s;
	}
	for (size_t i = 0; i < t->nb[CAT_QUEUE]; i++) {
		qs += t->bq[4 * i + 2] - t->bq[4 * i];
		qd += t->bq[4 * i + 3] - t->bq[4 * i + 1];
	}
	qs += t->done_qs;
	qd += t->done_qd;
	memset(out, 0, sizeof(*out));
	out->name = t->name[0] ? t->name : NULL;
	out->pid = t->pid;
	out->tid = t->tid;
	out->role = t->role;
	out->spans = t->spans;
	/* no traced work of its own, and woken mostly by one thread: it works for that one */
	if (!t->spans && t->waker_wakings * 2 > t->wakings)
		out->woken_by = t->waker;
	for (int k = 0; k < CAT_MAX; k++)
		out->cat_ns[k] = len[k];
	if (r->has_sched) {
		uint64_t sl = t->st_ns[RS_SLEEPING], bl = t->st_ns[RS_BLOCKED];

		out->has_states = true;
		out->running_ns = t->st_ns[RS_RUNNING];
		out->runnable_ns = t->st_ns[RS_RUNNABLE];
		if (qs > sl)
			qs = sl;
		if (qd > bl)
			qd = bl;
		out->queue_wait_ns = qs + qd;
		out->idle_ns = sl - qs;
		out->blocked_ns = bl - qd;
	} else { /* without states a thread is seen from its first span to its last */
		uint64_t wall = t->spans ? t->last_e - t->first_s : 0;
		uint64_t any = len[CL_ANY] < wall ? len[CL_ANY] : wall;
		uint64_t q = len[CAT_QUEUE] < any ? len[CAT_QUEUE] : any;

		out->running_ns = any - q;
		out->queue_wait_ns = q;
		out->idle_ns = wall - any;
	}
}

struct ranked {
	uint64_t key;
	struct report_group *g;
};

static int by_key(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	if (x->g->total_ns != y->g->total_ns)
		return x->g->total_ns < y->g->total_ns ? 1 : -1;
	return strcmp(x->g->key, y->g->key);
}

/* Largest first by the chosen column; ties by total, then name, so the order is stable. */
static void sort_groups(struct report *r, enum report_sort sort)
{
	struct ranked *v = xcalloc(r->ngroups + 1, sizeof(*v));

	for (size_t i = 0; i < r->ngroups; i++) {
		struct report_group *g = r->groups[i];

		v[i].g = g;
		v[i].key = sort == SORT_SELF	? g->self_ns :
			   sort == SORT_TOTAL	? g->total_ns :
			   sort == SORT_COUNT	? g->count :
						  sketch__quantile(&g->sketch, 0.99);
	}
	qsort(v, r->ngroups, sizeof(*v), by_key);
	for (size_t i = 0; i < r->ngroups; i++)
		r->groups[i] = v[i].g;
	free(v);
}

static int by_tid(const void *a, const void *b)
{
	const struct rthread *x = *(const struct rthread *const *)a;
	const struct rthread *y = *(const struct rthread *const *)b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* --by thread / stage: the per-thread groups, labelled or merged. */
/* --by thread or stage: the threads' groups merged under their names. known[i] is the thread
 * of r->threads[i]; a stage is named as the stage table names it. */
static void thread_groups(struct ctx *c, struct rthread **known, size_t n)
{
	char(*stage)[STAGE_NAME_LEN] = xcalloc(n + 1, sizeof(*stage));
	struct rthread *t, *tmp;

	if (c->o->by == BY_STAGE && stages__names(c->r->threads, n, stage))
		n = 0;
	for (size_t i = 0; i < n; i++)
		known[i]->stage = stage[i];
	HASH_ITER(hash, c->threads, t, tmp) {
		struct report_group *g;
		char label[96];

		if (!t->grp)
			continue;
		if (c->o->by == BY_THREAD) {
			if (t->tid < 0)
				snprintf(label, sizeof(label), "(no thread)");
			else if (c->o->compare)
				snprintf(label, sizeof(label), "%s", t->name[0] ? t->name : "?");
			else
				snprintf(label, sizeof(label), "%s (%" PRId64 ")",
					 t->name[0] ? t->name : "?", t->tid);
		} else if (t->stage) {
			snprintf(label, sizeof(label), "%s", t->stage);
		} else {
			stage__fold(t->name[0] ? t->name : "(unnamed)", label, sizeof(label));
		}
		g = group_get(c, label, "");
		g->count += t->grp->count;
		/* a thread's self times add up to the time its spans cover: nested spans once */
		g->total_ns += t->grp->self_ns;
		g->sum_ns += t->grp->sum_ns;
		g->self_ns += t->grp->self_ns;
		sketch__merge(&g->sketch, &t->grp->sketch);
	}
	HASH_ITER(hash, c->threads, t, tmp)
		t->stage = NULL;
	free(stage);
}

int report__run(struct report *r, const struct report_opts *o, char *err, size_t errlen)
{
	struct ctx *c = xcalloc(1, sizeof(*c));
	struct rthread **known = NULL, *t, *tmp;
	struct report_group *g, *gtmp;
	size_t n = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	r->priv = c;
	c->o = o;
	c->r = r;
	c->keep = TOP_SPANS;
	if (getenv("TRACER_REPORT_KEEP")) {
		long k;

		if (!parse_long(getenv("TRACER_REPORT_KEEP"), 1, 1 << 24, &k))
			c->keep = k;
	}
	c->heap = xcalloc(c->keep, sizeof(*c->heap));
	r->max_groups = REPORT_MAX_GROUPS;
	if (getenv("TRACER_REPORT_MAX_GROUPS")) { /* tests: fold without a million names */
		long k;

		if (!parse_long(getenv("TRACER_REPORT_MAX_GROUPS"), 1, REPORT_MAX_GROUPS, &k))
			r->max_groups = k;
	}
	c->min_ts = INT64_MAX;
	c->max_end = INT64_MIN;
	ret = pass1(c, err, errlen);
	if (ret)
		return ret;
	r->has_sched = c->any_sched;
	/* a cut file holds only some CPUs' scheduler lines, or none: the recording said */
	if (c->meta_cpus > r->cpus)
		r->cpus = c->meta_cpus;
	r->start_ns = c->have_t0 || c->min_ts == INT64_MAX ? 0 : c->min_ts;
	if (c->have_t0 && c->min_ts < 0)
		r->start_ns = c->min_ts;
	r->end_ns = c->max_end == INT64_MIN ? r->start_ns : c->max_end;
	if (c->have_t0 && c->meta_dur > r->end_ns)
		r->end_ns = c->meta_dur;
	thread_windows(c);
	build_big(c);
	ret = pass2(c, err, errlen);
	if (ret)
		return ret;

	known = xcalloc(HASH_CNT(hash, c->threads) + 1, sizeof(*known));
	HASH_ITER(hash, c->threads, t, tmp)
		if (t->known && t->tid >= 0)
			known[n++] = t;
	qsort(known, n, sizeof(*known), by_tid);
	r->threads = xcalloc(n + 1, sizeof(*r->threads));
	for (size_t i = 0; i < n; i++)
		thread_result(c, known[i], &r->threads[i]);
	r->nthreads = n;
	ret = stages__from_threads(r->threads, n, &r->stages, &r->nstages);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	stages__verdict(r->verdict, sizeof(r->verdict), r->stages, r->nstages, r->cpus);
	if (o->by == BY_THREAD || o->by == BY_STAGE)
		thread_groups(c, known, n);
	r->groups = xcalloc(HASH_COUNT(c->groups) + 1, sizeof(*r->groups));
	HASH_ITER(hh, c->groups, g, gtmp)
		r->groups[r->ngroups++] = g;
	sort_groups(r, o->sort);
out:
	free(known);
	return ret;
}

void report__free(struct report *r)
{
	struct ctx *c = r->priv;

	if (c) {
		struct report_group *g, *gtmp;
		struct rthread *t, *tmp;

		HASH_ITER(hh, c->groups, g, gtmp) {
			HASH_DEL(c->groups, g);
			group_free(g);
		}
		HASH_ITER(hash, c->threads, t, tmp) {
			HASH_DELETE(hash, c->threads, t);
			thread_free(t);
		}
		free(c->heap);
		free(c->wins);
		free(c);
	}
	free(r->groups);
	free(r->threads);
	free(r->stages);
	memset(r, 0, sizeof(*r));
}
