// SPDX-License-Identifier: MIT
#include "record/children.h"
#include "util/proc.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define BUSY_SHARE 0.05 /* of one CPU, on average over the recording */
#define NAMED_MAX 6

void children__start(struct untraced_children *c, const int *targets, size_t n)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		int *pids;
		size_t k = proc__descendants(targets[i], &pids);

		for (size_t j = 0; j < k; j++) {
			struct proc_stat st;

			if (proc_stat__read(pids[j], 0, &st))
				continue;
			c->v = xrealloc(c->v, c->n + 1, sizeof(*c->v));
			c->v[c->n++] = (struct child_cpu){ pids[j], st.start_time,
							   proc_stat__cpu_ns(&st) };
		}
		free(pids);
	}
}

/* Its CPU time at the start: 0 for a process born since. */
static uint64_t cpu_at_start(const struct untraced_children *c, int pid,
			     unsigned long long start_time)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].pid == pid && c->v[i].start_time == start_time)
			return c->v[i].cpu_ns;
	return 0;
}

struct busy_child {
	int pid;
	char comm[16];
	double share;
};

static int by_share_desc(const void *a, const void *b)
{
	double x = ((const struct busy_child *)a)->share, y = ((const struct busy_child *)b)->share;

	return (x < y) - (x > y);
}

void children__print(const struct untraced_children *c, const int *targets, size_t n,
		     uint64_t wall_ns, FILE *f)
{
	struct busy_child *busy = NULL;
	size_t nbusy = 0;
	double total = 0;
	char name[64];

	if (!wall_ns)
		return;
	for (size_t i = 0; i < n; i++) {
		int *pids;
		size_t k = proc__descendants(targets[i], &pids);

		for (size_t j = 0; j < k; j++) {
			struct proc_stat st;
			uint64_t now, then;
			double share;

			if (proc_stat__read(pids[j], 0, &st))
				continue;
			now = proc_stat__cpu_ns(&st);
			then = cpu_at_start(c, pids[j], st.start_time);
			share = now > then ? (double)(now - then) / wall_ns : 0;
			if (share < BUSY_SHARE)
				continue;
			busy = xrealloc(busy, nbusy + 1, sizeof(*busy));
			busy[nbusy].pid = pids[j];
			memcpy(busy[nbusy].comm, st.comm, sizeof(st.comm));
			busy[nbusy++].share = share;
			total += share;
		}
		free(pids);
	}
	if (!nbusy)
		return;
	qsort(busy, nbusy, sizeof(*busy), by_share_desc);
	fprintf(f, "not traced: %zu child process%s of the target%s busy, %.1f CPUs in all: ",
		nbusy, nbusy == 1 ? "" : "es", nbusy == 1 ? " was" : " were", total);
	for (size_t i = 0; i < nbusy && i < NAMED_MAX; i++)
		fprintf(f, "%s%d (%s) %d%%", i ? ", " : "", busy[i].pid,
			printable(busy[i].comm, name, sizeof(name)), (int)(100 * busy[i].share + 0.5));
	fprintf(f, "%s; the pipeline's work may be there: without --no-follow they are traced\n",
		nbusy > NAMED_MAX ? ", ..." : "");
	free(busy);
}

void children__free(struct untraced_children *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}
