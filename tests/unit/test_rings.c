// SPDX-License-Identifier: MIT
/* Unit test of userspace/record/rings.c: per-CPU rings, laid out in memory as the kernel lays
 * them out, read as one stream in time order: across rings, a ring's own order, the watermark
 * while a ring is empty, records still being written, discarded ones, the callback's stop, and
 * the ring size per CPU. */
#include <linux/bpf.h>
#include <stddef.h>
#include <stdlib.h>

#include "events.h"
#include "record/rings.h"
#include "unit.h"

#define SIZE 4096

struct fake {
	uint64_t cons, prod;
	uint8_t data[2 * SIZE];
};

static void setup(struct rings *rs, struct fake *f, size_t n)
{
	memset(rs, 0, sizeof(*rs));
	rs->v = calloc(n, sizeof(*rs->v));
	rs->n = n;
	for (size_t i = 0; i < n; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		rs->v[i].consumer_pos = &f[i].cons;
		rs->v[i].producer_pos = &f[i].prod;
		rs->v[i].data = f[i].data;
		rs->v[i].mask = SIZE - 1;
		rs->v[i].fd = -1;
	}
}

/* Appends a record as bpf_ringbuf_reserve + submit leave it (flags: the header's bits).
 * Returns its header, to submit a busy one later. */
static uint32_t *put(struct fake *f, const void *rec, uint32_t len, uint32_t flags)
{
	uint32_t *hdr = (uint32_t *)(f->data + (f->prod & (SIZE - 1)));

	hdr[0] = len | flags;
	hdr[1] = 0;
	memcpy(hdr + 2, rec, len);
	f->prod += (len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
	return hdr;
}

static void put_switch(struct fake *f, uint64_t ts, uint32_t flags)
{
	struct switch_rec r = { .type = REC_SWITCH, .ts = ts };

	put(f, &r, sizeof(r), flags);
}

static void put_span(struct fake *f, uint64_t start, uint64_t end)
{
	struct span_rec r = { .type = REC_SPAN, .start_ns = start, .end_ns = end };

	put(f, &r, sizeof(r), 0);
}

/* a read that found the stack unchanged: no frames */
static void put_py(struct fake *f, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct py_stack_rec r = { .type = REC_PY_STACK, .pid = pid, .tid = tid, .ts = ts,
				  .flags = PY_SAME };

	put(f, &r, offsetof(struct py_stack_rec, frames), 0);
}

static void put_task(struct fake *f, uint64_t ts)
{
	struct task_rec r = { .type = REC_TASK, .event = TASK_NEW, .pid = 7, .tid = 8, .ts = ts };

	put(f, &r, sizeof(r), 0);
}

static void put_wakeup(struct fake *f, uint64_t ts)
{
	struct wakeup_rec r = { .type = REC_WAKEUP, .pid = 7, .tid = 8, .ts = ts };

	put(f, &r, sizeof(r), 0);
}

/* a switch in carrying its waking (older): ordered by the switch */
static void put_switch_wake(struct fake *f, uint64_t ts, uint64_t woken)
{
	struct switch_wake_rec r = { .sw = { .type = REC_SWITCH_WAKE, .ts = ts },
				     .wake = { .ts = woken } };

	put(f, &r, sizeof(r), 0);
}

struct seen {
	uint64_t ts[32];
	int n;
	int stop_at; /* return -EAGAIN for this record (1-based), 0: never */
};

static int collect(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;

	if (s->n < 32)
		s->ts[s->n] = rings__record_time(data, size);
	s->n++;
	return s->n == s->stop_at ? -11 : 0;
}

static void free_rings(struct rings *rs)
{
	free(rs->v);
}

static void test_merged_in_time_order(void)
{
	struct fake f[2];
	struct rings rs;
	struct seen s = { 0 };

	setup(&rs, f, 2);
	/* CPU 0: a wake-up at 10, the waker's switch at 40, a new thread at 50; CPU 1: a Python
	 * read at 15 (pid and tid large: the time is not where the others keep it), the woken
	 * thread's span ends at 20 (started at 5: a span is ordered by its end, when it is
	 * submitted), its switch at 30 */
	put_wakeup(&f[0], 10);
	put_switch(&f[0], 40, 0);
	put_task(&f[0], 50);
	put_py(&f[1], 4000000, 4000001, 15);
	put_span(&f[1], 5, 20);
	put_switch(&f[1], 30, 0);
	put_switch_wake(&f[1], 45, 12);
	CHECK(rings__consume(&rs, UINT64_MAX, collect, &s) == 7);
	CHECK(s.n == 7);
	CHECK(s.ts[0] == 10 && s.ts[1] == 15 && s.ts[2] == 20 && s.ts[3] == 30 && s.ts[4] == 40 &&
	      s.ts[5] == 45 && s.ts[6] == 50);
	CHECK(f[0].cons == f[0].prod && f[1].cons == f[1].prod);
	free_rings(&rs);
}

static void test_a_rings_own_order_kept(void)
{
	struct fake f[2];
	struct rings rs;
	struct seen s = { 0 };

	setup(&rs, f, 2);
	/* a Python read stamped with the wait's start comes after a newer record on its CPU:
	 * it still comes after it (the span it belongs to follows it in its ring) */
	put_switch(&f[0], 50, 0);
	put_switch(&f[0], 20, 0);
	put_switch(&f[1], 30, 0);
	put_switch(&f[1], 60, 0);
	CHECK(rings__consume(&rs, UINT64_MAX, collect, &s) == 4);
	CHECK(s.ts[0] == 30 && s.ts[1] == 50 && s.ts[2] == 20 && s.ts[3] == 60);
	free_rings(&rs);
}

static void test_newer_records_wait_for_an_empty_ring(void)
{
	struct fake f[2];
	struct rings rs;
	struct seen s = { 0 };

	setup(&rs, f, 2);
	/* CPU 0 has records at 10 and 50, CPU 1 nothing yet: past the watermark (30), 50 stays
	 * in its ring, for CPU 1 may still submit one older */
	put_switch(&f[0], 10, 0);
	put_switch(&f[0], 50, 0);
	CHECK(rings__consume(&rs, 30, collect, &s) == 1);
	CHECK(s.n == 1 && s.ts[0] == 10);
	CHECK(f[0].cons != f[0].prod); /* 50 is still in the ring */
	/* CPU 1 submits one at 40: it comes before 50 */
	put_switch(&f[1], 40, 0);
	CHECK(rings__consume(&rs, 100, collect, &s) == 2);
	CHECK(s.n == 3 && s.ts[1] == 40 && s.ts[2] == 50);
	/* with no ring empty, the oldest head goes whatever the watermark: a ring's later
	 * records are newer */
	put_switch(&f[0], 200, 0);
	put_switch(&f[1], 300, 0);
	CHECK(rings__consume(&rs, 0, collect, &s) == 1);
	CHECK(s.n == 4 && s.ts[3] == 200);
	CHECK(rings__consume(&rs, UINT64_MAX, collect, &s) == 1);
	CHECK(s.n == 5 && s.ts[4] == 300);
	free_rings(&rs);
}

static void test_record_being_written_stops_its_ring(void)
{
	struct fake f[2];
	struct rings rs;
	struct seen s = { 0 };
	struct switch_rec busy = { .type = REC_SWITCH, .ts = 5 };
	uint32_t *hdr;

	setup(&rs, f, 2);
	/* CPU 0 reserved a record (not submitted) before one it submitted; a discarded record
	 * on CPU 1 is skipped */
	hdr = put(&f[0], &busy, sizeof(busy), BPF_RINGBUF_BUSY_BIT);
	put_switch(&f[0], 8, 0);
	put_switch(&f[1], 1, BPF_RINGBUF_DISCARD_BIT);
	put_switch(&f[1], 7, 0);
	CHECK(rings__consume(&rs, 100, collect, &s) == 1);
	CHECK(s.n == 1 && s.ts[0] == 7);
	CHECK(f[1].cons == f[1].prod);
	*hdr &= ~BPF_RINGBUF_BUSY_BIT; /* submitted */
	CHECK(rings__consume(&rs, 100, collect, &s) == 2);
	CHECK(s.n == 3 && s.ts[1] == 5 && s.ts[2] == 8);
	free_rings(&rs);
}

static void test_callback_stops_the_pass(void)
{
	struct fake f[1];
	struct rings rs;
	struct seen s = { .stop_at = 2 };

	setup(&rs, f, 1);
	for (int i = 1; i <= 4; i++)
		put_switch(&f[0], i * 10, 0);
	/* the record the callback stopped at is consumed; the next pass goes on after it */
	CHECK(rings__consume(&rs, UINT64_MAX, collect, &s) == -11);
	CHECK(s.n == 2);
	CHECK(rings__consume(&rs, UINT64_MAX, collect, &s) == 2);
	CHECK(s.n == 4 && s.ts[2] == 30 && s.ts[3] == 40);
	free_rings(&rs);
}

static void test_wraps_around(void)
{
	struct fake f[1];
	struct rings rs;
	struct seen s;
	uint64_t next = 1000;

	setup(&rs, f, 1);
	/* positions keep growing past the size; the data is reached through the mask (the
	 * kernel maps it twice, so that a record is never split) */
	for (int round = 1; round <= 3; round++) {
		uint64_t first = next;

		memset(&s, 0, sizeof(s));
		while (f[0].prod < round * (uint64_t)SIZE - SIZE / 4 && s.n < 32 &&
		       next - first < 20)
			put_switch(&f[0], next++, 0);
		CHECK(rings__consume(&rs, UINT64_MAX, collect, &s) == (int64_t)(next - first));
		CHECK(s.ts[0] == first && s.ts[s.n - 1] == next - 1);
		CHECK(f[0].cons == f[0].prod);
		/* skip to near the end of the ring: the next round's records cross it */
		f[0].prod = f[0].cons = round * (uint64_t)SIZE - 2 * sizeof(struct switch_rec);
	}
	free_rings(&rs);
}

static void test_size_per_cpu(void)
{
	CHECK(rings__size(8 << 20, 2) == 4 << 20);
	CHECK(rings__size(8 << 20, 3) == 2 << 20); /* a power of two */
	CHECK(rings__size(1 << 20, 64) == 256 << 10); /* at least 256 KB */
	CHECK(rings__size(8 << 20, 1) == 8 << 20);
}

int main(void)
{
	RUN(test_merged_in_time_order);
	RUN(test_a_rings_own_order_kept);
	RUN(test_newer_records_wait_for_an_empty_ring);
	RUN(test_record_being_written_stops_its_ring);
	RUN(test_callback_stops_the_pass);
	RUN(test_wraps_around);
	RUN(test_size_per_cpu);
	UNIT_EXIT();
}
