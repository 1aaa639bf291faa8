// SPDX-License-Identifier: MIT
/* Unit test of userspace/record/threads.c: the tid table and the per-state time accounting. */
#include <stdint.h>

#include "record/threads.h"
#include "unit.h"

static void test_get_grows(void)
{
	struct threads ts;
	uint32_t found = 0, used = 0;
	int n = 10000;

	threads__init(&ts);
	CHECK(ts.cap == 256);
	for (int tid = 1; tid <= n; tid++) {
		/* spread tids over a wide range, some colliding modulo the table size */
		int t = tid % 2 ? tid : tid * 4096;
		struct thread *th = threads__get(&ts, t / 100 + 1, t);

		CHECK(th->tid == t);
		th->state_ns[TS_RUNNING] = (uint64_t)t * 3; /* survives the moves */
	}
	CHECK(ts.cnt == (uint32_t)n);
	CHECK(ts.cap >= (uint32_t)n && ts.cap * 3 >= ts.cnt * 4);
	for (int tid = 1; tid <= n; tid++) {
		int t = tid % 2 ? tid : tid * 4096;
		struct thread *th = threads__get(&ts, 999999, t);

		found += th->tid == t && th->pid == t / 100 + 1 &&
			 th->state_ns[TS_RUNNING] == (uint64_t)t * 3;
	}
	CHECK(found == (uint32_t)n);
	CHECK(ts.cnt == (uint32_t)n); /* looking up creates nothing */
	for (uint32_t i = 0; i < ts.cap; i++)
		used += ts.v[i].tid != 0;
	CHECK(used == (uint32_t)n);
	threads__free(&ts);
	CHECK(ts.v == NULL && ts.cnt == 0);
}

static void test_get_new_thread(void)
{
	struct threads ts;
	struct thread *t;

	threads__init(&ts);
	t = threads__get(&ts, 10, 11);
	CHECK(t->pid == 10 && t->tid == 11);
	CHECK(t->state == TS_UNKNOWN);
	CHECK(!t->named && !t->exited);
	CHECK(t->name[0] == 0);
	CHECK(t->first_seen == 0 && t->spans == 0);
	CHECK(threads__get(&ts, 10, 11) == t);
	CHECK(ts.cnt == 1);
	threads__free(&ts);
}

static void test_set_state(void)
{
	struct thread t = { .pid = 1, .tid = 1 };

	/* from unknown nothing is counted */
	thread__set_state(&t, TS_SLEEPING, 100);
	CHECK(t.first_seen == 100 && t.since == 100 && t.state == TS_SLEEPING);
	for (int s = 0; s < TS_MAX; s++)
		CHECK(t.state_ns[s] == 0);
	thread__set_state(&t, TS_RUNNABLE, 350);
	CHECK(t.state_ns[TS_SLEEPING] == 250);
	thread__set_state(&t, TS_RUNNING, 400);
	CHECK(t.state_ns[TS_RUNNABLE] == 50);
	/* time going backwards adds nothing */
	thread__set_state(&t, TS_SLEEPING, 390);
	CHECK(t.state_ns[TS_RUNNING] == 0);
	CHECK(t.first_seen == 100 && t.last_seen == 400);
	thread__forget_spans(&t);
}

/* IN-QUEUE is a share of the time whose state is known: a wait through a pause, a lost switch
 * or before the first switch has its unknown part left out (it showed 100.6%). */
static void test_queue_time_known_states_only(void)
{
	struct threads ts;
	struct thread *t, *u;
	uint64_t seen = 0;

	threads__init(&ts);
	t = threads__get(&ts, 1, 11);
	thread__set_state(t, TS_SLEEPING, 1000);  /* first seen at 1000 */
	thread__set_state(t, TS_UNKNOWN, 2000);   /* paused */
	thread__queue_span(t, 2500, 2600);	  /* a nested wait ends while paused */
	thread__set_state(t, TS_SLEEPING, 4000);  /* known again */
	thread__queue_span(t, 500, 5000);	  /* waiting all along */
	thread__queue_span(t, 5200, 5300);	  /* after it, all known */
	threads__finish(&ts, 6000);
	for (int s = TS_RUNNING; s < TS_MAX; s++)
		seen += t->state_ns[s];
	CHECK(seen == 3000);
	/* [1000, 2000) and [4000, 5000), then 100 */
	CHECK(t->queue_ns == 2100);
	CHECK(t->queue_ns <= seen);
	/* unknown to the end: a wait there is not counted either */
	u = threads__get(&ts, 1, 12);
	thread__set_state(u, TS_BLOCKED, 100);
	thread__set_state(u, TS_UNKNOWN, 300);
	thread__queue_span(u, 100, 900);
	threads__finish(&ts, 1000);
	CHECK(u->state_ns[TS_BLOCKED] == 200);
	CHECK(u->queue_ns == 200);
	threads__free(&ts);
}

static struct switch_rec sw(uint64_t ts, uint32_t prev_tid, uint32_t prev_state,
			    uint32_t preempt, uint32_t next_tid)
{
	struct switch_rec r = { .type = REC_SWITCH, .ts = ts, .prev_pid = prev_tid ? 100 : 0,
				.prev_tid = prev_tid, .prev_state = prev_state,
				.next_pid = next_tid ? 100 : 0, .next_tid = next_tid,
				.preempt = preempt };

	return r;
}

static struct wakeup_rec wk(uint64_t ts, uint32_t kind, uint32_t tid)
{
	struct wakeup_rec r = { .type = REC_WAKEUP, .kind = kind, .ts = ts, .pid = 100,
				.tid = tid };

	return r;
}

static void on_switch(struct threads *ts, uint64_t t, uint32_t prev, uint32_t state,
		      uint32_t preempt, uint32_t next)
{
	struct switch_rec r = sw(t, prev, state, preempt, next);

	threads__on_switch(ts, &r, prev != 0, next != 0);
}

static void on_wakeup(struct threads *ts, uint64_t t, uint32_t kind, uint32_t tid)
{
	struct wakeup_rec r = wk(t, kind, tid);

	threads__on_wakeup(ts, &r);
}

/* Thread 101's life, by hand (times in ns):
 *   1000  switched in                         running
 *   3000  out, prev_state 0                   runnable   running  += 2000
 *   3500  in                                  running    runnable += 500
 *   4500  out, preempt=1 with prev_state 1    runnable   running  += 1000
 *   5000  in                                  running    runnable += 500
 *   6000  out, prev_state 1                   sleeping   running  += 1000
 *   9000  sched_waking                        runnable   sleeping += 3000
 *   9200  sched_wakeup: ignored
 *   9500  in                                  running    runnable += 500
 *  10000  out, prev_state 2                   blocked    running  += 500
 *  12000  sched_waking                        runnable   blocked  += 2000
 *  12100  in                                  running    runnable += 100
 *  13000  out, prev_state 0x402 (NOLOAD)      sleeping   running  += 900
 *  20000  sched_waking                        runnable   sleeping += 7000
 *  20500  sched_waking again: still runnable since 20000
 *  21000  in                                  running    runnable += 1000
 *  21500  sched_waking while running: ignored
 *  30000  end                                            running  += 9000
 * running 14400, runnable 2600, sleeping 10000, blocked 2000. */
static void test_accounting(void)
{
	struct threads ts;
	struct thread *t, *other;

	threads__init(&ts);
	on_switch(&ts, 1000, 0, 0, 0, 101);
	on_switch(&ts, 3000, 101, 0, 0, 102);
	on_switch(&ts, 3500, 102, 1, 0, 101);
	on_switch(&ts, 4500, 101, 1, 1, 0);
	on_switch(&ts, 5000, 0, 0, 0, 101);
	on_switch(&ts, 6000, 101, 1, 0, 0);
	on_wakeup(&ts, 9000, WAKEUP_WAKING, 101);
	on_wakeup(&ts, 9200, WAKEUP_WAKEUP, 101);
	on_switch(&ts, 9500, 0, 0, 0, 101);
	on_switch(&ts, 10000, 101, 2, 0, 0);
	on_wakeup(&ts, 12000, WAKEUP_WAKING, 101);
	on_switch(&ts, 12100, 0, 0, 0, 101);
	on_switch(&ts, 13000, 101, 0x402, 0, 0);
	on_wakeup(&ts, 20000, WAKEUP_WAKING, 101);
	on_wakeup(&ts, 20500, WAKEUP_WAKING, 101);
	on_switch(&ts, 21000, 0, 0, 0, 101);
	on_wakeup(&ts, 21500, WAKEUP_WAKING, 101);
	t = threads__get(&ts, 100, 101);
	CHECK(t->state == TS_RUNNING && t->since == 21000);
	threads__finish(&ts, 30000);

	CHECK(t->state_ns[TS_RUNNING] == 14400);
	CHECK(t->state_ns[TS_RUNNABLE] == 2600);
	CHECK(t->state_ns[TS_SLEEPING] == 10000);
	CHECK(t->state_ns[TS_BLOCKED] == 2000);
	CHECK(t->state_ns[TS_UNKNOWN] == 0);
	CHECK(t->first_seen == 1000 && t->last_seen == 30000);
	CHECK(t->state_ns[TS_RUNNING] + t->state_ns[TS_RUNNABLE] + t->state_ns[TS_SLEEPING] +
		      t->state_ns[TS_BLOCKED] ==
	      30000 - 1000);

	/* 102 ran 3000..3500, then slept (prev_state 1) until the end */
	other = threads__get(&ts, 100, 102);
	CHECK(other->state_ns[TS_RUNNING] == 500);
	CHECK(other->state_ns[TS_SLEEPING] == 26500);
	CHECK(other->state_ns[TS_RUNNABLE] == 0);
	CHECK(ts.cnt == 2); /* tid 0 (idle) was never traced */
	threads__free(&ts);
}

/* Only the traced sides of a switch are touched. */
static void test_switch_untraced_side(void)
{
	struct threads ts;
	struct switch_rec r = sw(1000, 101, 1, 0, 102);
	struct thread *a, *b;

	threads__init(&ts);
	threads__on_switch(&ts, &r, false, true);
	CHECK(ts.cnt == 1);
	b = threads__get(&ts, 100, 102);
	CHECK(b->state == TS_RUNNING && b->since == 1000);
	r = sw(2000, 102, 2, 0, 101);
	threads__on_switch(&ts, &r, true, false);
	b = threads__get(&ts, 100, 102);
	CHECK(b->state == TS_BLOCKED);
	CHECK(b->state_ns[TS_RUNNING] == 1000);
	CHECK(ts.cnt == 1);
	a = threads__get(&ts, 100, 101);
	CHECK(a->state == TS_UNKNOWN);
	threads__free(&ts);
}

/* A new thread's wakeup makes it runnable; sched_wakeup alone changes nothing. */
static void test_wakeup_kinds(void)
{
	struct threads ts;
	struct thread *t;

	threads__init(&ts);
	on_wakeup(&ts, 500, WAKEUP_NEW, 200);
	t = threads__get(&ts, 100, 200);
	CHECK(t->state == TS_RUNNABLE && t->since == 500 && t->first_seen == 500);
	on_switch(&ts, 800, 0, 0, 0, 200);
	CHECK(t->state == TS_RUNNING);
	CHECK(t->state_ns[TS_RUNNABLE] == 300);

	on_wakeup(&ts, 900, WAKEUP_WAKEUP, 201);
	t = threads__get(&ts, 100, 201);
	CHECK(t->state == TS_UNKNOWN && t->first_seen == 0);
	threads__free(&ts);
}

static void test_finish(void)
{
	struct threads ts;
	struct thread *a, *b, *c;

	threads__init(&ts);
	a = threads__get(&ts, 1, 11);
	thread__set_state(a, TS_BLOCKED, 100);
	b = threads__get(&ts, 1, 12);
	thread__set_state(b, TS_RUNNING, 200);
	thread__set_state(b, TS_SLEEPING, 300);
	b->exited = true;
	c = threads__get(&ts, 1, 13); /* never had a state */
	threads__finish(&ts, 1000);
	a = threads__get(&ts, 1, 11);
	b = threads__get(&ts, 1, 12);
	c = threads__get(&ts, 1, 13);
	CHECK(a->state_ns[TS_BLOCKED] == 900);
	CHECK(a->state == TS_BLOCKED && a->since == 1000 && a->last_seen == 1000);
	/* an exited thread's time stopped when it exited */
	CHECK(b->state_ns[TS_RUNNING] == 100);
	CHECK(b->state_ns[TS_SLEEPING] == 0);
	CHECK(b->last_seen == 300);
	for (int s = 0; s < TS_MAX; s++)
		CHECK(c->state_ns[s] == 0);
	CHECK(c->state == TS_UNKNOWN && c->first_seen == 0);
	/* finishing twice at the same time adds nothing */
	threads__finish(&ts, 1000);
	CHECK(a->state_ns[TS_BLOCKED] == 900);
	threads__free(&ts);
}

static void test_from_proc(void)
{
	CHECK(thread_state__from_proc('S') == TS_SLEEPING);
	CHECK(thread_state__from_proc('I') == TS_SLEEPING);
	CHECK(thread_state__from_proc('T') == TS_SLEEPING);
	CHECK(thread_state__from_proc('t') == TS_SLEEPING);
	CHECK(thread_state__from_proc('D') == TS_BLOCKED);
	CHECK(thread_state__from_proc('R') == TS_UNKNOWN);
	CHECK(thread_state__from_proc('Z') == TS_UNKNOWN);
	CHECK(thread_state__from_proc(0) == TS_UNKNOWN);
}

int main(int argc, char **argv)
{
	RUN(test_get_grows);
	RUN(test_get_new_thread);
	RUN(test_set_state);
	RUN(test_queue_time_known_states_only);
	RUN(test_accounting);
	RUN(test_switch_untraced_side);
	RUN(test_wakeup_kinds);
	RUN(test_finish);
	RUN(test_from_proc);
	UNIT_EXIT();
}
