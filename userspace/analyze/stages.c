// SPDX-License-Identifier: MIT
#include "analyze/stages.h"
#include "util/util.h"

#include <errno.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

/* The verdict's rules (shares of the stage's observed time). */
#define SATURATED 0.60	   /* a stage busier than this bounds the pipeline */
#define QUEUE_EVIDENCE 0.20 /* a queue wait worth naming as evidence */
#define GIL_BOUND 0.25	    /* a stage waiting this much to take the GIL back: Python serializes */
#define HELPER_BUSY 0.25    /* a helper pool's thread busy this much works for who wakes it */
/* Threads wanting a CPU per CPU, in the whole pipeline or in its busiest stage alone: more than
 * this is CPU starvation by the pipeline's own threads. Less, with threads waiting for a CPU,
 * is other processes taking it (or a stage as wide as the machine: the stage is the limit). */
#define STARVED_DEMAND 2.5
#define STARVED_STAGE_DEMAND 1.5
/* No stage saturated, yet the pipeline's own threads want this many of the CPUs (running or
 * runnable), on average: the CPUs are the bound (ffmpeg's frame threads sharing the work), not
 * "the pipeline mostly waits". */
#define CPU_BOUND 0.85

uint64_t thread_time__wall(const struct thread_time *t)
{
	return t->running_ns + t->runnable_ns + t->queue_wait_ns + t->blocked_ns + t->idle_ns;
}

void thread_time__from_states(struct thread_time *t, uint64_t running, uint64_t runnable,
			      uint64_t sleeping, uint64_t blocked, uint64_t in_queue_ns)
{
	uint64_t wait = in_queue_ns < sleeping + blocked ? in_queue_ns : sleeping + blocked;
	uint64_t from_sleep = wait < sleeping ? wait : sleeping;

	t->running_ns = running;
	t->runnable_ns = runnable;
	t->queue_wait_ns = wait;
	t->idle_ns = sleeping - from_sleep;
	t->blocked_ns = blocked - (wait - from_sleep);
	t->has_states = true;
}

bool stage__python_wait(const char *q)
{
	static const char *const waits[] = {
		"Queue.get",	   "Queue.put",	       "SimpleQueue.get", "Condition.wait",
		"Condition.wait_for", "Event.wait",   "Semaphore.acquire", "Barrier.wait",
		"Connection.recv", "Connection.poll", "Connection.recv_bytes",
	};

	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (!strcmp(q, waits[i]))
			return true;
	return false;
}

const char *stage__python_role(const char *q)
{
	if (!strcmp(q, "_worker_loop")) /* torch.utils.data._utils.worker */
		return "DataLoader worker";
	if (!strcmp(q, "Queue._feed")) /* multiprocessing: sends what put() queued */
		return HELPER_QUEUE_FEEDER;
	return NULL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

void stage__fold(const char *name, char *out, size_t len)
{
	size_t n = strlen(name), d = n;

	if (!len)
		return;
	/* "Pipeline[0]", "worker(3)" */
	if (n >= 3 && (name[n - 1] == ']' || name[n - 1] == ')')) {
		char open = name[n - 1] == ']' ? '[' : '(';

		for (d = n - 1; d > 0 && is_digit(name[d - 1]); d--)
			;
		if (d < n - 1 && d >= 2 && name[d - 1] == open) {
			d--;
			while (d > 0 && name[d - 1] == ' ')
				d--;
			snprintf(out, len, "%.*s[*]", (int)d, name);
			return;
		}
	}
	/* "decode-0", "worker 3", "op_12", "pool.7", "queue:2", "thread#4" */
	for (d = n; d > 0 && is_digit(name[d - 1]); d--)
		;
	/* ... but a version is part of the name: "gst-launch-1.0", "python3.11" */
	if (d < n && d >= 2 && name[d - 1] == '.' && is_digit(name[d - 2])) {
		snprintf(out, len, "%s", name);
		return;
	}
	if (d < n && d >= 2 && strchr("-_ .:#/", name[d - 1])) {
		d--;
		while (d > 0 && strchr("-_ .:#/", name[d - 1]))
			d--;
		if (d) {
			snprintf(out, len, "%.*s[*]", (int)d, name);
			return;
		}
	}
	snprintf(out, len, "%s", name);
}

double stage__share(const struct stage_stats *s, uint64_t ns)
{
	return s->wall_ns ? (double)ns / s->wall_ns : 0;
}

/* Running, runnable and blocked (or, without states, inside non-queue spans). */
static uint64_t busy_ns(const struct stage_stats *s)
{
	return s->running_ns + s->runnable_ns + s->blocked_ns;
}

static int by_busy(const void *a, const void *b)
{
	const struct stage_stats *x = a, *y = b;
	double bx = stage__share(x, busy_ns(x)), by = stage__share(y, busy_ns(y));

	if (bx != by)
		return bx < by ? 1 : -1;
	return strcmp(x->name, y->name);
}

static double thread_busy(const struct thread_time *t)
{
	uint64_t wall = thread_time__wall(t);

	return wall ? (double)(t->running_ns + t->runnable_ns + t->blocked_ns) / wall : 0;
}

/* What a thread mostly does: the category it spends most time in spans of, or -1 without
 * spans. Queue waits are not work. */
static int main_work(const struct thread_time *t)
{
	int best = -1;

	for (int c = 0; c < CAT_MAX; c++)
		if (c != CAT_QUEUE && t->cat_ns[c] && (best < 0 || t->cat_ns[c] > t->cat_ns[best]))
			best = c;
	return best;
}

/* What stage_key needs of one thread, computed once. */
struct namesake {
	const char *folded;
	const struct thread_time *t;
	size_t idx; /* in the caller's array */
	int work;   /* main_work */
	bool busy;  /* saturated */
	bool indexed; /* its name has an index folded ("decode-0"): a replica */
};

static int by_folded_pid(const void *a, const void *b)
{
	const struct namesake *x = a, *y = b;
	int c = strcmp(x->folded, y->folded);

	if (c)
		return c;
	return x->t->pid < y->t->pid ? -1 : x->t->pid > y->t->pid;
}

/* Namesakes (the same folded name, named by no role) of one process, or of all processes. */
struct tally {
	size_t n, idle;	       /* idle: not saturated */
	size_t work[CAT_MAX]; /* by main_work, when they have one */
	size_t worked;
};

static void tally__add(struct tally *c, const struct namesake *s, int sign)
{
	if (s->t->role)
		return;
	c->n += sign;
	c->idle += sign * !s->busy;
	if (s->work >= 0) {
		c->work[s->work] += sign;
		c->worked += sign;
	}
}

/* A thread's stage: its folded name, in its process. A thread of its own there ("ffmpeg tid
 * 1234"): a lead (see find_leads: a role, whatever the shares, so that the grouping does not
 * flip from run to run as the thread's share crosses a cutoff), and a saturated thread among
 * namesakes not all saturated (one decoding thread among four idle ones must not be averaged
 * away). s: the thread; name: its namesakes in every process, proc: in its process, both
 * counting s itself. */
static void stage_key(const struct namesake *s, struct tally name, struct tally proc, bool lead,
		      char *key, size_t len)
{
	const struct thread_time *t = s->t;
	bool alone, other_pid, other_work;
	size_t o;

	tally__add(&name, s, -1);
	tally__add(&proc, s, -1);
	other_pid = name.n > proc.n;
	alone = (s->busy && proc.idle) || lead;
	other_work = s->work >= 0 && proc.worked > proc.work[s->work];
	if (t->role) /* a DataLoader worker's thread is MainThread, as the main one's */
		o = snprintf(key, len, "%s pid %d", t->role, t->pid);
	else if (alone)
		o = snprintf(key, len, "%s tid %d", s->folded, t->tid);
	else if (other_pid) /* python3 main process and its workers: apart */
		o = snprintf(key, len, "%s pid %d", s->folded, t->pid);
	else
		o = snprintf(key, len, "%s", s->folded);
	/* namesakes that do different work (one decodes, one runs operators): apart */
	if (other_work && !alone && !t->role && o < len)
		snprintf(key + o, len - o, " (%s)", category__name(s->work));
}

static int by_tid(const void *a, const void *b)
{
	const struct thread_time *x = *(const struct thread_time *const *)a;
	const struct thread_time *y = *(const struct thread_time *const *)b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* A helper pool's thread (OpenCV's, a BLAS library's: no spans of its own, named as its process)
 * is woken mostly by the thread that hands it the work and then waits for it: it joins that
 * thread's stage, so that the stage's time includes the work it farmed out. */
static void join_helpers(const struct thread_time *t, size_t n, char (*names)[STAGE_NAME_LEN],
			 const ssize_t *lead_of)
{
	const struct thread_time **by = malloc((n ? n : 1) * sizeof(*by));

	if (!by)
		return; /* each stays its own */
	for (size_t i = 0; i < n; i++)
		by[i] = &t[i];
	qsort(by, n, sizeof(*by), by_tid);
	for (size_t i = 0; i < n; i++) {
		struct thread_time key = { .tid = t[i].woken_by };
		const struct thread_time *k = &key, **w;

		/* a thread that mostly sleeps (a main loop woken by its streaming thread's bus
		 * messages) does none of the stage's work: it would only water its shares down */
		if (!t[i].woken_by || t[i].role || thread_busy(&t[i]) < HELPER_BUSY ||
		    lead_of[i] >= 0) /* a namesake's pool: counted as its helpers */
			continue;
		w = bsearch(&k, by, n, sizeof(*by), by_tid);
		/* a saturated waker is the bound by itself (ffmpeg's decoding thread): helpers less
		 * busy would only water its share down */
		if (w && (*w)->pid == t[i].pid && (*w)->spans && *w != &t[i] &&
		    (thread_busy(*w) < SATURATED || thread_busy(&t[i]) >= SATURATED))
			memcpy(names[i], names[*w - t], STAGE_NAME_LEN);
	}
	free(by);
}

/* Namesakes v[p, q) of one process, not replicas (named as the process, as a library's pool
 * threads are): when one has spans and the others none (ffmpeg's caller of the decoder API and
 * its frame threads), it leads them. lead_of[k] is the lead's index for each of the others.
 * Returns the lead's position in v, or q. */
static size_t find_leads(const struct namesake *v, size_t p, size_t q, ssize_t *lead_of)
{
	size_t lead = q, pool = 0;

	for (size_t i = p; i < q; i++) {
		if (v[i].t->role || v[i].indexed)
			continue;
		if (!v[i].t->spans)
			pool++;
		else if (lead < q)
			return q; /* two callers: whose pool it is is not known */
		else
			lead = i;
	}
	if (lead == q || !pool)
		return q;
	for (size_t i = p; i < q; i++)
		if (!v[i].t->role && !v[i].indexed && !v[i].t->spans)
			lead_of[v[i].idx] = v[lead].idx;
	return lead;
}

/* Sorted by folded name and pid, so that each thread's namesakes are its neighbours: n log n
 * for tens of thousands of short-lived threads. */
static int names_and_leads(const struct thread_time *t, size_t n, char (*names)[STAGE_NAME_LEN],
			   ssize_t *lead_of)
{
	char(*folded)[48] = calloc(n ? n : 1, sizeof(*folded));
	struct namesake *v = calloc(n ? n : 1, sizeof(*v));

	if (!folded || !v) {
		free(folded);
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		lead_of[i] = -1;
	for (size_t i = 0; i < n; i++) {
		stage__fold(t[i].name && t[i].name[0] ? t[i].name : "(unnamed)", folded[i],
			    sizeof(folded[i]));
		v[i] = (struct namesake){ folded[i], &t[i], i, main_work(&t[i]),
					  thread_busy(&t[i]) >= SATURATED,
					  strcmp(folded[i], t[i].name ? t[i].name : "") != 0 };
	}
	qsort(v, n, sizeof(*v), by_folded_pid);
	for (size_t a = 0, b; a < n; a = b) { /* [a, b): one folded name */
		struct tally name = { 0 };

		for (b = a; b < n && !strcmp(v[b].folded, v[a].folded); b++)
			tally__add(&name, &v[b], 1);
		for (size_t p = a, q; p < b; p = q) { /* [p, q): one process */
			struct tally proc = { 0 };
			size_t lead;

			for (q = p; q < b && v[q].t->pid == v[p].t->pid; q++)
				tally__add(&proc, &v[q], 1);
			lead = find_leads(v, p, q, lead_of);
			for (size_t i = p; i < q; i++)
				stage_key(&v[i], name, proc, i == lead, names[v[i].idx],
					  STAGE_NAME_LEN);
		}
	}
	join_helpers(t, n, names, lead_of);
	free(v);
	free(folded);
	return 0;
}

int stages__names(const struct thread_time *t, size_t n, char (*names)[STAGE_NAME_LEN])
{
	ssize_t *lead_of = calloc(n ? n : 1, sizeof(*lead_of));
	int err = lead_of ? names_and_leads(t, n, names, lead_of) : -ENOMEM;

	free(lead_of);
	return err;
}

static int by_stage_name(const void *key, const void *s)
{
	return strcmp(key, ((const struct stage_stats *)s)->name);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void stage__add(struct stage_stats *s, const struct thread_time *t)
{
	uint64_t wall = thread_time__wall(t);

	s->threads++;
	s->spans += t->spans;
	s->wall_ns += wall;
	if (wall > s->max_wall_ns)
		s->max_wall_ns = wall;
	s->running_ns += t->running_ns;
	s->runnable_ns += t->runnable_ns;
	s->queue_wait_ns += t->queue_wait_ns;
	s->blocked_ns += t->blocked_ns;
	s->idle_ns += t->idle_ns;
	for (int c = 0; c < CAT_MAX; c++)
		s->cat_ns[c] += t->cat_ns[c];
	s->has_states |= t->has_states;
}

int stages__from_threads(const struct thread_time *t, size_t n, struct stage_stats **out,
			 size_t *nout)
{
	struct stage_stats *v = calloc(n ? n : 1, sizeof(*v));
	char(*names)[STAGE_NAME_LEN] = calloc(n ? n : 1, sizeof(*names));
	char **order = calloc(n ? n : 1, sizeof(*order)); /* names, sorted: a stage's are a run */
	ssize_t *lead_of = calloc(n ? n : 1, sizeof(*lead_of));
	size_t cnt = 0;

	if (!v || !names || !order || !lead_of || names_and_leads(t, n, names, lead_of)) {
		free(v);
		free(names);
		free(order);
		free(lead_of);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = names[i];
	qsort(order, n, sizeof(*order), by_name);
	for (size_t i = 0; i < n; i++) {
		struct stage_stats *s = &v[cnt];

		if (i && !strcmp(order[i], order[i - 1]))
			s = &v[cnt - 1];
		else
			snprintf(v[cnt++].name, sizeof(s->name), "%s", order[i]);
		stage__add(s, &t[(order[i] - names[0]) / STAGE_NAME_LEN]); /* names[k]: t[k]'s */
	}
	/* what a lead's pool did, by the lead's stage (v is in name order until sorted below) */
	for (size_t i = 0; i < n; i++) {
		struct stage_stats *s;

		if (lead_of[i] < 0)
			continue;
		s = bsearch(names[lead_of[i]], v, cnt, sizeof(*v), by_stage_name);
		if (s) {
			s->helpers++;
			s->helper_busy_ns += t[i].running_ns + t[i].runnable_ns + t[i].blocked_ns;
		}
	}
	free(lead_of);
	free(order);
	free(names);
	qsort(v, cnt, sizeof(*v), by_busy);
	*out = v;
	*nout = cnt;
	return 0;
}

#define STAGE_WIDTH 28
#define STAGE_ROWS 40 /* rows printed at most */

/* A name cut to the column from its middle, so that what tells stages apart stays: the end
 * ("pid 4242") as well as the start. */
static const char *fit(const char *name, char *buf)
{
	size_t n = strlen(name), tail = (STAGE_WIDTH - 2) / 2;

	if (n <= STAGE_WIDTH)
		return name;
	snprintf(buf, STAGE_WIDTH + 1, "%.*s..%s", (int)(STAGE_WIDTH - 2 - tail), name,
		 name + n - tail);
	return buf;
}

void stages__print(FILE *f, const struct stage_stats *s, size_t n)
{
	bool states = false;
	char cut[STAGE_WIDTH + 1];

	size_t shown = n < STAGE_ROWS ? n : STAGE_ROWS;
	uint64_t rest = 0;

	for (size_t i = 0; i < n; i++)
		states |= s[i].has_states;
	fprintf(f, "%-*s %7s %9s %8s %8s %8s %8s %8s\n", STAGE_WIDTH, "STAGE", "THREADS", "SPANS",
		states ? "RUNNING" : "IN-SPANS", "RUNNABLE", "IN-QUEUE", "BLOCKED", "IDLE");
	for (size_t i = shown; i < n; i++)
		rest += s[i].threads;
	for (size_t i = 0; i < shown; i++) {
		const struct stage_stats *st = &s[i];

		if (!st->wall_ns) {
			fprintf(f, "%-*s %7u %9llu %8s %8s %8s %8s %8s\n", STAGE_WIDTH,
				fit(st->name, cut), st->threads, (unsigned long long)st->spans, "-",
				"-", "-", "-", "-");
			continue;
		}
		fprintf(f, "%-*s %7u %9llu %7.1f%% ", STAGE_WIDTH, fit(st->name, cut), st->threads,
			(unsigned long long)st->spans, 100 * stage__share(st, st->running_ns));
		if (states)
			fprintf(f, "%7.1f%% ", 100 * stage__share(st, st->runnable_ns));
		else
			fprintf(f, "%8s ", "-");
		fprintf(f, "%7.1f%% ", 100 * stage__share(st, st->queue_wait_ns));
		if (states)
			fprintf(f, "%7.1f%% ", 100 * stage__share(st, st->blocked_ns));
		else
			fprintf(f, "%8s ", "-");
		fprintf(f, "%7.1f%%\n", 100 * stage__share(st, st->idle_ns));
	}
	if (shown < n) /* thousands of short-lived threads, each a stage: the busiest only */
		fprintf(f, "... and %zu more stages of %llu threads, less busy (tracer report FILE "
			   "--json lists every one)\n",
			n - shown, (unsigned long long)rest);
}

static int pct(double share)
{
	return (int)(100 * share + 0.5);
}

/* Appends the stages other than skip that wait in queue spans, longest first (at most 3). */
static size_t waiting(char *buf, size_t len, const struct stage_stats *s, size_t n,
		      const struct stage_stats *skip, const char *before, const char *after)
{
	const struct stage_stats *pick[3] = { 0 };
	size_t o = 0, k = 0;
	bool spans = false;

	/* the stages doing traced work, when there are any; a feeder thread, which waits for
	 * something to send whatever the pipeline does, is never the evidence */
	for (size_t i = 0; i < n; i++)
		spans |= s[i].spans && &s[i] != skip &&
			 stage__share(&s[i], s[i].queue_wait_ns) >= QUEUE_EVIDENCE;
	for (size_t i = 0; i < n; i++) {
		double w = stage__share(&s[i], s[i].queue_wait_ns);

		if (&s[i] == skip || w < QUEUE_EVIDENCE || (spans && !s[i].spans) ||
		    !strncmp(s[i].name, HELPER_QUEUE_FEEDER, strlen(HELPER_QUEUE_FEEDER)))
			continue;
		for (k = 0; k < 3; k++) {
			if (!pick[k] || w > stage__share(pick[k], pick[k]->queue_wait_ns)) {
				memmove(pick + k + 1, pick + k, (2 - k) * sizeof(*pick));
				pick[k] = &s[i];
				break;
			}
		}
	}
	if (!pick[0] || !len)
		return 0;
	o = snprintf(buf, len, "%swaiting on queues: ", before);
	for (k = 0; k < 3 && pick[k] && o < len; k++)
		o += snprintf(buf + o, len - o, "%s%s %d%%", k ? ", " : "", pick[k]->name,
			      pct(stage__share(pick[k], pick[k]->queue_wait_ns)));
	if (o < len)
		o += snprintf(buf + o, len - o, "%s", after);
	return o < len ? o : len;
}

/* A thread that hands its work to a pool of namesakes (ffmpeg's decoding threads) and waits
 * for them: busy itself, or its pool busy for it, all the time. The pool's share is in CPUs: the
 * rule holds far from its bound on both sides (about 1.7 for ffmpeg decoding flat out with its
 * default threads, near 0 when it is paced), where the thread's own share alone straddled
 * SATURATED from run to run. */
static bool fed_by_pool(const struct stage_stats *s)
{
	return s->helpers && busy_ns(s) + s->helper_busy_ns >= s->wall_ns;
}

void stages__verdict(char *buf, size_t len, const struct stage_stats *s, size_t n, int ncpus)
{
	const struct stage_stats *top = NULL, *gil = NULL;
	uint64_t running = 0, runnable = 0, span = 0;
	bool states = false, fed;
	double busy, demand, top_demand;
	size_t o;

	for (size_t i = 0; i < n; i++) {
		states |= s[i].has_states;
		running += s[i].running_ns;
		runnable += s[i].runnable_ns;
		if (s[i].max_wall_ns > span)
			span = s[i].max_wall_ns;
		if (s[i].wall_ns &&
		    (!top || stage__share(&s[i], busy_ns(&s[i])) > stage__share(top, busy_ns(top))))
			top = &s[i];
	}
	if (!top) {
		snprintf(buf, len, "bottleneck: unknown — no thread activity in the trace");
		return;
	}
	/* a saturated stage doing the traced work wins over busier threads without spans (a
	 * BLAS pool spinning in sched_yield is busy without being the pipeline's bound) */
	if (!top->spans) {
		const struct stage_stats *work = NULL;

		for (size_t i = 0; i < n; i++)
			if (s[i].spans && s[i].wall_ns &&
			    (!work || stage__share(&s[i], busy_ns(&s[i])) >
					      stage__share(work, busy_ns(work))))
				work = &s[i];
		/* its pool busier than the thread it works for (a loaded machine): still that one */
		if (work && (stage__share(work, busy_ns(work)) >= SATURATED || fed_by_pool(work)))
			top = work;
	}
	busy = stage__share(top, busy_ns(top));
	/* threads that wanted a CPU, on average over the recording */
	demand = span ? (double)(running + runnable) / span : 0;
	top_demand = top->max_wall_ns ?
			     (double)(top->running_ns + top->runnable_ns) / top->max_wall_ns :
			     0;

	/* The busiest stage waits for a CPU more than it runs, and the pipeline's own threads
	 * want clearly more CPUs than there are: more threads will not help. */
	if (states && top->runnable_ns > top->running_ns && runnable >= running &&
	    (ncpus <= 0 || demand >= STARVED_DEMAND * ncpus ||
	     top_demand >= STARVED_STAGE_DEMAND * ncpus)) {
		o = snprintf(buf, len,
			     "bottleneck: CPU-starved — threads wait for a CPU %d%% of their "
			     "busy time",
			     pct((double)runnable / (running + runnable)));
		if (ncpus > 0 && o < len)
			o += snprintf(buf + o, len - o, "; %.1f threads want a CPU, %d CPUs",
				      demand, ncpus);
		if (o < len)
			snprintf(buf + o, len - o, " (busiest: %s, runnable %d%%, running %d%%)",
				 top->name, pct(stage__share(top, top->runnable_ns)),
				 pct(stage__share(top, top->running_ns)));
		return;
	}
	/* a stage that spends a quarter of its time waiting to take the GIL back (after a native
	 * call released it) is held up by Python code on another thread, whatever it computes */
	for (size_t i = 0; i < n; i++)
		if (s[i].wall_ns && stage__share(&s[i], s[i].cat_ns[CAT_GIL]) >= GIL_BOUND &&
		    (!gil || stage__share(&s[i], s[i].cat_ns[CAT_GIL]) >
				     stage__share(gil, gil->cat_ns[CAT_GIL])))
			gil = &s[i];
	if (gil) {
		o = snprintf(buf, len,
			     "bottleneck: GIL-bound — %s waits for Python's GIL %d%% of wall time",
			     gil->name, pct(stage__share(gil, gil->cat_ns[CAT_GIL])));
		if (gil != top && o < len)
			snprintf(buf + o, len - o, " (busiest: %s, %d%%)", top->name, pct(busy));
		return;
	}
	if (busy >= SATURATED / 2 &&
	    (states ? top->blocked_ns * 2 >= busy_ns(top) :
		      top->cat_ns[CAT_IO] * 2 >= top->running_ns)) {
		if (states)
			snprintf(buf, len,
				 "bottleneck: I/O-bound — %s blocked in uninterruptible waits "
				 "%d%% of wall time (running %d%%)",
				 top->name, pct(stage__share(top, top->blocked_ns)),
				 pct(stage__share(top, top->running_ns)));
		else
			snprintf(buf, len,
				 "bottleneck: I/O-bound — %s inside io spans %d%% of wall time",
				 top->name, pct(stage__share(top, top->cat_ns[CAT_IO])));
		return;
	}
	fed = fed_by_pool(top);
	if (busy >= SATURATED || fed) {
		if (states)
			o = snprintf(buf, len,
				     "bottleneck: %s — busy %d%% of wall time (running %d%%, "
				     "runnable %d%%)",
				     top->name, pct(busy), pct(stage__share(top, top->running_ns)),
				     pct(stage__share(top, top->runnable_ns)));
		else
			o = snprintf(buf, len,
				     "bottleneck: %s — inside spans %d%% of wall time (no "
				     "scheduler states in the trace)",
				     top->name, pct(busy));
		if (fed && o < len)
			o += snprintf(buf + o, len - o, "; the %u namesakes it hands work to (no spans "
							  "of their own) busy %.1f CPUs",
				      top->helpers, (double)top->helper_busy_ns / top->wall_ns);
		if (o < len)
			o += waiting(buf + o, len - o, s, n, top, "; ", "");
		if (!strncmp(top->name, "DataLoader worker", 17) && o < len)
			o += snprintf(buf + o, len - o, "; the data loader bounds the model (more "
							  "num_workers, or lighter samples)");
		if (states && top->runnable_ns > top->running_ns && o < len)
			snprintf(buf + o, len - o,
				 "; it waits for a CPU more than it runs (other processes?)");
		return;
	}
	/* no stage saturated, but its threads together take the CPUs */
	if (states && ncpus > 0 && demand >= CPU_BOUND * ncpus) {
		o = snprintf(buf, len,
			     "bottleneck: CPU-bound — the pipeline's threads want %.1f CPUs of %d "
			     "(running %.1f, waiting for one %.1f; busiest: %s, busy %d%%)",
			     demand, ncpus, (double)running / span, (double)runnable / span,
			     top->name, pct(busy));
		if (runnable > running && o < len)
			snprintf(buf + o, len - o, "; they wait for a CPU more than they run (other "
						   "processes?)");
		return;
	}
	o = snprintf(buf, len,
		     "bottleneck: none — the busiest stage, %s, is busy %d%% of wall time; the "
		     "pipeline mostly waits",
		     top->name, pct(busy));
	if (o < len)
		waiting(buf + o, len - o, s, n, top, " (", ")");
}
